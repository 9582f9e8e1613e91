import type OpenAI from 'openai';
import type * as OpenAiSdk from 'openai';
import { OpenAiEndpoint } from './http.js';
import { embedThrough } from './embed.js';
import { toToolCalls, toUsage, toolCallEvents, wireMessage, wireOptions, type WireChunk, type WireCompletion, type WireUsage } from './chat.js';
import { OPENAI_COMPATIBLE, parametersFor, type ProviderProfile } from './profile.js';
import { guardStream } from '../stream-guard.js';
import { directUpstreamHttp, type UpstreamHttp } from '../upstream-http.js';
import {
  UpstreamError,
  classifyStatus,
  type ProviderAdapter,
  type TextRequest,
  type TextStreamEvent,
  type TokenUsage,
  type UpstreamCredential,
} from '../types.js';

/**
 * Any OpenAI-compatible chat-completions API: OpenAI itself, OpenRouter, Groq, DeepSeek, Mistral, xAI, Together,
 * vLLM, Ollama... The base URL comes from the account, what the API takes from the provider's profile (`profile.ts`).
 * Text goes through our own undici client (`http.ts`); images and speech keep the official SDK
 * (`openai/media.ts`, through `openAiClients` and `mapOpenAiError`).
 */
export interface OpenAiAdapterOptions {
  /** What the provider's API takes and how it names it (default: OpenAI's field set, for a server known by URL only). */
  profile?: ProviderProfile;
  /** The output limit's field, when not the profile's. */
  tokenLimitParam?: 'max_tokens' | 'max_completion_tokens';
  /** Used when an account has no base URL of its own. */
  defaultBaseUrl: string;
  /** Silence allowed between stream events (default 60 s). */
  streamIdleTimeoutMs?: number;
  /** Connections kept per upstream origin (default 1024). */
  connectionsPerOrigin?: number;
  /** The gateway's outbound client, which checks each new connection (`registry.ts` decides which origins). */
  http?: UpstreamHttp;
}

/** Servers without authentication (a local Ollama) get a placeholder key: the SDK needs one, and so do some servers. */
const NO_KEY = 'no-key-required';

/**
 * The official SDK (~2 MB of heap) serves media accounts only, so it is loaded by their first call, not at start;
 * until then no error can be one of its classes.
 */
let openAiSdk: typeof OpenAiSdk | undefined;
export const loadOpenAiSdk = async (): Promise<typeof OpenAiSdk> => (openAiSdk ??= await import('openai'));

/** One SDK client per upstream account (and base URL and timeout), made on first use and kept (media only). */
export function openAiClients(
  defaultBaseUrl: string | undefined,
  http: UpstreamHttp = directUpstreamHttp,
): (credential: UpstreamCredential) => Promise<OpenAI> {
  const clients = new Map<string, OpenAI>();
  return async (credential) => {
    const baseURL = credential.baseUrl ?? defaultBaseUrl;
    const key = `${credential.accountId}\u0000${credential.apiKey}\u0000${baseURL}\u0000${credential.timeoutMs}`;
    let client = clients.get(key);
    if (!client) {
      const { default: OpenAiClient } = openAiSdk ?? (await loadOpenAiSdk());
      // The pool fails over across accounts itself, so the SDK must not retry on its own.
      client =
        clients.get(key) ?? new OpenAiClient({ apiKey: credential.apiKey ?? NO_KEY, baseURL, maxRetries: 0, timeout: credential.timeoutMs, fetch: http.fetch });
      clients.set(key, client);
    }
    return client;
  };
}

export function createOpenAiAdapter(options: OpenAiAdapterOptions): ProviderAdapter {
  const profile = options.profile ?? OPENAI_COMPATIBLE;
  const tokenLimitParam = options.tokenLimitParam ?? profile.tokenLimit;
  const endpoints = new Map<string, OpenAiEndpoint>();

  const endpointFor = (credential: UpstreamCredential): OpenAiEndpoint => {
    const baseUrl = credential.baseUrl ?? options.defaultBaseUrl;
    const apiKey = credential.apiKey ?? NO_KEY;
    const key = `${baseUrl}\u0000${apiKey}`;
    let endpoint = endpoints.get(key);
    if (!endpoint) {
      endpoint = new OpenAiEndpoint(baseUrl, apiKey, options.connectionsPerOrigin, options.http);
      endpoints.set(key, endpoint);
    }
    return endpoint;
  };

  const body = (request: TextRequest) => ({
    model: request.model,
    messages: request.messages.map(wireMessage),
    [tokenLimitParam]: request.maxTokens,
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    ...wireOptions(request, { carried: parametersFor(profile, request.model), renames: profile.renames }),
  });

  const callOptions = (credential: UpstreamCredential, request: TextRequest) => ({
    timeoutMs: credential.timeoutMs,
    signal: request.signal,
    model: request.model,
  });

  return {
    kind: 'openai',
    needsCredential: true,
    parameters: profile.parameters,
    parametersFor: (upstreamModel) => parametersFor(profile, upstreamModel),
    images: true,
    jsonSchema: profile.jsonSchema,

    async generateText(credential, request) {
      const completion = (await endpointFor(credential).json(
        '/chat/completions',
        Object.assign(body(request), { stream: false }),
        callOptions(credential, request),
      )) as WireCompletion;
      const choice = Array.isArray(completion.choices) ? completion.choices[0] : undefined;
      if (!choice) throw new UpstreamError('server', 'The provider returned no answer.', null, 'empty_response');
      const toolCalls = toToolCalls(choice.message?.tool_calls);
      // DeepSeek's (and others') reasoning text: unsigned, so never sent back to a provider that verifies thinking.
      const reasoning = choice.message?.reasoning_content;
      const refusal = choice.message?.refusal;
      return {
        text: choice.message?.content ?? '',
        ...(refusal ? { refusal } : {}),
        ...(toolCalls ? { toolCalls } : {}),
        ...(reasoning ? { thinking: [{ type: 'thinking' as const, thinking: reasoning, signature: '' }] } : {}),
        usage: toUsage(completion.usage),
        finishReason: choice.finish_reason ?? 'stop',
      };
    },

    async streamText(credential, request) {
      const upstream = await endpointFor(credential).stream(
        '/chat/completions',
        // A streamed call is billed from the provider's own count: asked for where the API has `stream_options`,
        // sent unasked by the others (which may refuse the field).
        Object.assign(body(request), { stream: true }, profile.streamUsage === 'stream_options' ? { stream_options: { include_usage: true } } : {}),
        callOptions(credential, request),
      );
      async function* events(): AsyncGenerator<TextStreamEvent> {
        let finishReason: string | null = null;
        let usage: TokenUsage | null = null;
        for await (const chunk of upstream.chunks as AsyncIterable<WireChunk>) {
          // Groq also reports it in `x_groq.usage` on the last chunk (`ChatCompletionChunk.XGroq` in groq-sdk).
          const reported = chunk.usage ?? (chunk as { x_groq?: { usage?: WireUsage | null } }).x_groq?.usage;
          if (reported) usage = toUsage(reported);
          for (const choice of Array.isArray(chunk.choices) ? chunk.choices : []) {
            if (choice.index !== undefined && choice.index !== 0) continue;
            const reasoning = choice.delta?.reasoning_content;
            if (reasoning) yield { type: 'thinking', index: 0, delta: reasoning };
            const delta = choice.delta?.content;
            if (delta) yield { type: 'text', delta };
            const refusal = choice.delta?.refusal;
            if (refusal) yield { type: 'refusal', delta: refusal };
            yield* toolCallEvents(choice.delta?.tool_calls);
            if (choice.finish_reason) finishReason = choice.finish_reason;
          }
        }
        // The usage chunk arrives after the finish reason, so both are reported once the upstream is done.
        if (usage) yield { type: 'usage', usage };
        if (finishReason) yield { type: 'finish', finishReason };
      }
      return guardStream(events(), {
        idleTimeoutMs: options.streamIdleTimeoutMs ?? 60_000,
        abort: () => upstream.abort(),
        mapError: (err) => mapOpenAiError(err, request.model),
      });
    },

    async checkCredential(credential) {
      await endpointFor(credential).json('/models', undefined, { timeoutMs: credential.timeoutMs, model: '' });
    },

    embed: (credential, request) => embedThrough(endpointFor(credential), credential, request),
  };
}

export function mapOpenAiError(err: unknown, model: string): UpstreamError {
  if (err instanceof UpstreamError) return err;
  const fromSdk = openAiSdk ? mapSdkError(openAiSdk.default, err, model) : null;
  if (fromSdk) return fromSdk;
  if (err instanceof SyntaxError) return new UpstreamError('server', 'The provider sent a malformed stream.', null, 'malformed_stream');
  const message = err instanceof Error ? err.message : String(err);
  return new UpstreamError('network', `The connection to the provider failed: ${message}`, null, 'connection_error');
}

/** An error of the SDK's own classes as an UpstreamError; null for any other error. */
function mapSdkError(OpenAiClient: typeof OpenAiSdk.default, err: unknown, model: string): UpstreamError | null {
  if (err instanceof OpenAiClient.APIUserAbortError) return new UpstreamError('aborted', 'The call was cancelled.');
  if (err instanceof OpenAiClient.APIConnectionTimeoutError) return new UpstreamError('timeout', 'The provider did not answer in time.', null, 'timeout');
  if (err instanceof OpenAiClient.APIConnectionError)
    return new UpstreamError('network', `Could not reach the provider: ${err.message}`, null, 'connection_error');
  if (err instanceof OpenAiClient.APIError) {
    const body = (err.error ?? {}) as { message?: unknown; code?: unknown; type?: unknown };
    const message = typeof body.message === 'string' && body.message ? body.message : err.message;
    const code = typeof body.code === 'string' ? body.code : typeof body.type === 'string' ? body.type : null;
    if (err.status === undefined) {
      // An error event inside a stream that had already started.
      const kind = code && /rate_limit/.test(code) ? 'rate_limit' : 'server';
      return new UpstreamError(kind, message, null, code ?? 'stream_error');
    }
    const status = err.status as number; // the SDK types it loosely; a response error always has one
    return new UpstreamError(classifyStatus(status, code, message, model), message, status, code ?? `http_${status}`);
  }
  return null;
}
