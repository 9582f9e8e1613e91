import OpenAI from 'openai';
import type { Stream } from 'openai/streaming';
import { guardStream } from './stream-guard.js';
import {
  UpstreamError,
  classifyStatus,
  type ProviderAdapter,
  type TextRequest,
  type TextStreamEvent,
  type TokenUsage,
  type UpstreamCredential,
} from './types.js';

/**
 * Any OpenAI-compatible chat-completions API through the official `openai` SDK: OpenAI itself, OpenRouter, Groq,
 * DeepSeek, Mistral, xAI, Together, vLLM, Ollama... The base URL comes from the account.
 */
export interface OpenAiAdapterOptions {
  /**
   * The name of the output limit field. OpenAI's current models take `max_completion_tokens` (and reject
   * `max_tokens` on reasoning models); most compatible servers only know `max_tokens`.
   */
  tokenLimitParam?: 'max_tokens' | 'max_completion_tokens';
  /** Used when an account has no base URL of its own. */
  defaultBaseUrl: string;
  /** Silence allowed between stream events (default 60 s). */
  streamIdleTimeoutMs?: number;
}

/** Servers without authentication (a local Ollama) still need a non-empty key for the SDK. */
const NO_KEY = 'no-key-required';

/** One SDK client per upstream account (and base URL and timeout), made on first use and kept. */
export function openAiClients(defaultBaseUrl: string | undefined): (credential: UpstreamCredential) => OpenAI {
  const clients = new Map<string, OpenAI>();
  return (credential) => {
    const baseURL = credential.baseUrl ?? defaultBaseUrl;
    const key = `${credential.accountId}\u0000${credential.apiKey}\u0000${baseURL}\u0000${credential.timeoutMs}`;
    let client = clients.get(key);
    if (!client) {
      // The pool fails over across accounts itself, so the SDK must not retry on its own.
      client = new OpenAI({ apiKey: credential.apiKey ?? NO_KEY, baseURL, maxRetries: 0, timeout: credential.timeoutMs });
      clients.set(key, client);
    }
    return client;
  };
}

export function createOpenAiAdapter(options: OpenAiAdapterOptions): ProviderAdapter {
  const tokenLimitParam = options.tokenLimitParam ?? 'max_tokens';
  const clientFor = openAiClients(options.defaultBaseUrl);

  const body = (request: TextRequest) => ({
    model: request.model,
    messages: request.messages.map((m) => ({ role: m.role, content: m.content })),
    [tokenLimitParam]: request.maxTokens,
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
  });

  return {
    kind: 'openai',
    needsCredential: true,

    async generateText(credential, request) {
      try {
        const completion = await clientFor(credential).chat.completions.create(
          { ...body(request), stream: false } as OpenAI.ChatCompletionCreateParamsNonStreaming,
          { signal: request.signal },
        );
        const choice = completion.choices[0];
        if (!choice) throw new UpstreamError('server', 'The provider returned no answer.', null, 'empty_response');
        return {
          text: choice.message?.content ?? '',
          usage: toUsage(completion.usage),
          finishReason: choice.finish_reason ?? 'stop',
        };
      } catch (err) {
        throw mapOpenAiError(err, request.model);
      }
    },

    async streamText(credential, request) {
      let upstream: Stream<OpenAI.ChatCompletionChunk>;
      try {
        upstream = await clientFor(credential).chat.completions.create(
          // Ask for the final usage chunk: a streamed call is billed from the provider's own count.
          { ...body(request), stream: true, stream_options: { include_usage: true } } as OpenAI.ChatCompletionCreateParamsStreaming,
          { signal: request.signal },
        );
      } catch (err) {
        throw mapOpenAiError(err, request.model);
      }
      async function* events(): AsyncGenerator<TextStreamEvent> {
        let finishReason: string | null = null;
        let usage: TokenUsage | null = null;
        for await (const chunk of upstream) {
          if (chunk.usage) usage = toUsage(chunk.usage);
          for (const choice of chunk.choices ?? []) {
            if (choice.index !== undefined && choice.index !== 0) continue;
            const delta = choice.delta?.content;
            if (delta) yield { type: 'text', delta };
            if (choice.finish_reason) finishReason = choice.finish_reason;
          }
        }
        // The usage chunk arrives after the finish reason, so both are reported once the upstream is done.
        if (usage) yield { type: 'usage', usage };
        if (finishReason) yield { type: 'finish', finishReason };
      }
      return guardStream(events(), {
        idleTimeoutMs: options.streamIdleTimeoutMs ?? 60_000,
        abort: () => upstream.controller.abort(),
        mapError: (err) => mapOpenAiError(err, request.model),
      });
    },

    async checkCredential(credential) {
      try {
        await clientFor(credential).models.list();
      } catch (err) {
        throw mapOpenAiError(err, '');
      }
    },
  };
}

function toUsage(usage: OpenAI.CompletionUsage | null | undefined): TokenUsage | null {
  if (!usage || typeof usage.prompt_tokens !== 'number' || typeof usage.completion_tokens !== 'number') return null;
  return { inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens };
}

export function mapOpenAiError(err: unknown, model: string): UpstreamError {
  if (err instanceof UpstreamError) return err;
  if (err instanceof OpenAI.APIUserAbortError) return new UpstreamError('aborted', 'The call was cancelled.');
  if (err instanceof OpenAI.APIConnectionTimeoutError) return new UpstreamError('timeout', 'The provider did not answer in time.', null, 'timeout');
  if (err instanceof OpenAI.APIConnectionError) return new UpstreamError('network', `Could not reach the provider: ${err.message}`, null, 'connection_error');
  if (err instanceof OpenAI.APIError) {
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
  if (err instanceof SyntaxError) return new UpstreamError('server', 'The provider sent a malformed stream.', null, 'malformed_stream');
  const message = err instanceof Error ? err.message : String(err);
  return new UpstreamError('network', `The connection to the provider failed: ${message}`, null, 'connection_error');
}
