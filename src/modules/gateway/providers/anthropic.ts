import type Anthropic from '@anthropic-ai/sdk';
import { guardStream } from './stream-guard.js';
import {
  UpstreamError,
  classifyStatus,
  type ChatMessage,
  type ProviderAdapter,
  type TextRequest,
  type TextStreamEvent,
  type UpstreamCredential,
} from './types.js';

/** Anthropic's Messages API through the official `@anthropic-ai/sdk`. */
export interface AnthropicAdapterOptions {
  defaultBaseUrl?: string;
  streamIdleTimeoutMs?: number;
}

/**
 * The official SDK (~5 MB of heap) is loaded by the first call to an Anthropic account, not at start; until then
 * no error can be one of its classes.
 */
let anthropicSdk: typeof Anthropic | undefined;
const loadAnthropicSdk = async (): Promise<typeof Anthropic> => (anthropicSdk ??= (await import('@anthropic-ai/sdk')).default);

const FINISH: Record<string, string> = { end_turn: 'stop', stop_sequence: 'stop', max_tokens: 'length', refusal: 'content_filter', pause_turn: 'stop', tool_use: 'tool_calls' };

export function createAnthropicAdapter(options: AnthropicAdapterOptions = {}): ProviderAdapter {
  const defaultBaseUrl = options.defaultBaseUrl ?? 'https://api.anthropic.com';
  const clients = new Map<string, Anthropic>();

  const clientFor = async (credential: UpstreamCredential): Promise<Anthropic> => {
    const baseURL = credential.baseUrl ?? defaultBaseUrl;
    const key = `${credential.accountId}\u0000${credential.apiKey}\u0000${baseURL}\u0000${credential.timeoutMs}`;
    let client = clients.get(key);
    if (!client) {
      const AnthropicClient = anthropicSdk ?? (await loadAnthropicSdk());
      client = clients.get(key) ?? new AnthropicClient({ apiKey: credential.apiKey ?? '', baseURL, maxRetries: 0, timeout: credential.timeoutMs });
      clients.set(key, client);
    }
    return client;
  };

  const body = (request: TextRequest) => {
    const { system, messages } = toAnthropicMessages(request.messages);
    return {
      model: request.model,
      max_tokens: request.maxTokens,
      messages,
      ...(system ? { system } : {}),
      ...(request.temperature === undefined ? {} : { temperature: Math.min(1, request.temperature) }),
    };
  };

  return {
    kind: 'anthropic',
    needsCredential: true,

    async generateText(credential, request) {
      try {
        const message = await (await clientFor(credential)).messages.create(Object.assign(body(request), { stream: false as const }), { signal: request.signal });
        const text = message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
        return {
          text,
          usage: { inputTokens: message.usage.input_tokens, outputTokens: message.usage.output_tokens },
          finishReason: FINISH[message.stop_reason ?? 'end_turn'] ?? message.stop_reason ?? 'stop',
        };
      } catch (err) {
        throw mapAnthropicError(err, request.model);
      }
    },

    async streamText(credential, request) {
      let upstream: Awaited<ReturnType<typeof openStream>>;
      const openStream = async () => (await clientFor(credential)).messages.create(Object.assign(body(request), { stream: true as const }), { signal: request.signal });
      try {
        upstream = await openStream();
      } catch (err) {
        throw mapAnthropicError(err, request.model);
      }
      async function* events(): AsyncGenerator<TextStreamEvent> {
        let inputTokens: number | null = null;
        let outputTokens: number | null = null;
        let stopReason: string | null = null;
        let stopped = false;
        for await (const event of upstream) {
          switch (event.type) {
            case 'message_start':
              inputTokens = event.message.usage.input_tokens;
              outputTokens = event.message.usage.output_tokens;
              break;
            case 'content_block_delta':
              if (event.delta.type === 'text_delta' && event.delta.text) yield { type: 'text', delta: event.delta.text };
              break;
            case 'message_delta':
              if (event.delta.stop_reason) stopReason = event.delta.stop_reason;
              if (typeof event.usage.output_tokens === 'number') outputTokens = event.usage.output_tokens;
              if (typeof event.usage.input_tokens === 'number') inputTokens = event.usage.input_tokens;
              break;
            case 'message_stop':
              stopped = true;
              break;
            default:
              break;
          }
        }
        if (!stopped) return; // the guard reports the missing finish as a broken stream
        if (inputTokens !== null && outputTokens !== null) yield { type: 'usage', usage: { inputTokens, outputTokens } };
        yield { type: 'finish', finishReason: FINISH[stopReason ?? 'end_turn'] ?? stopReason ?? 'stop' };
      }
      return guardStream(events(), {
        idleTimeoutMs: options.streamIdleTimeoutMs ?? 60_000,
        abort: () => upstream.controller.abort(),
        mapError: (err) => mapAnthropicError(err, request.model),
      });
    },

    async checkCredential(credential) {
      try {
        await (await clientFor(credential)).models.list({ limit: 1 });
      } catch (err) {
        throw mapAnthropicError(err, '');
      }
    },
  };
}

/** System messages go to the `system` field; consecutive turns of the same role are merged (the API wants them alternating). */
export function toAnthropicMessages(messages: readonly ChatMessage[]): { system: string; messages: { role: 'user' | 'assistant'; content: string }[] } {
  const system = messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n\n');
  const turns: { role: 'user' | 'assistant'; content: string }[] = [];
  for (const message of messages) {
    if (message.role === 'system') continue;
    const last = turns[turns.length - 1];
    if (last && last.role === message.role) last.content += `\n\n${message.content}`;
    else turns.push({ role: message.role, content: message.content });
  }
  return { system, messages: turns };
}

export function mapAnthropicError(err: unknown, model: string): UpstreamError {
  if (err instanceof UpstreamError) return err;
  const fromSdk = anthropicSdk ? mapSdkError(anthropicSdk, err, model) : null;
  if (fromSdk) return fromSdk;
  if (err instanceof SyntaxError) return new UpstreamError('server', 'The provider sent a malformed stream.', null, 'malformed_stream');
  const message = err instanceof Error ? err.message : String(err);
  return new UpstreamError('network', `The connection to the provider failed: ${message}`, null, 'connection_error');
}

/** An error of the SDK's own classes as an UpstreamError; null for any other error. */
function mapSdkError(AnthropicClient: typeof Anthropic, err: unknown, model: string): UpstreamError | null {
  if (err instanceof AnthropicClient.APIUserAbortError) return new UpstreamError('aborted', 'The call was cancelled.');
  if (err instanceof AnthropicClient.APIConnectionTimeoutError) return new UpstreamError('timeout', 'The provider did not answer in time.', null, 'timeout');
  if (err instanceof AnthropicClient.APIConnectionError) return new UpstreamError('network', `Could not reach the provider: ${err.message}`, null, 'connection_error');
  if (err instanceof AnthropicClient.APIError) {
    const body = (err.error ?? {}) as { error?: { type?: unknown; message?: unknown } };
    const message = typeof body.error?.message === 'string' && body.error.message ? body.error.message : err.message;
    const type = typeof body.error?.type === 'string' ? body.error.type : null;
    if (err.status === undefined) {
      // An `event: error` inside a stream that had already started (e.g. overloaded_error).
      const kind = type === 'rate_limit_error' ? 'rate_limit' : 'server';
      return new UpstreamError(kind, message, null, type ?? 'stream_error');
    }
    const status = err.status as number; // the SDK types it loosely; a response error always has one
    return new UpstreamError(classifyStatus(status, type, message, model), message, status, type ?? `http_${status}`);
  }
  return null;
}
