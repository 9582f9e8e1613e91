import type Anthropic from '@anthropic-ai/sdk';
import { anthropicRequestBody, finishReasonOf, fromAnthropicMessage, usageOf, type AnthropicUsage } from './messages.js';
import { guardStream } from '../stream-guard.js';
import { UpstreamError, classifyStatus, type ProviderAdapter, type TextParameter, type TextStreamEvent, type UpstreamCredential } from '../types.js';
import { connectRefusal, directUpstreamHttp, redirectError, type UpstreamHttp } from '../upstream-http.js';

export { toAnthropicMessages } from './messages.js';

/** Anthropic's Messages API through the official `@anthropic-ai/sdk`; the wire mapping is in `messages.ts`. */
export interface AnthropicAdapterOptions {
  defaultBaseUrl?: string;
  streamIdleTimeoutMs?: number;
  /** The gateway's outbound client, which checks each new connection (`registry.ts` decides which origins). */
  http?: UpstreamHttp;
}

/**
 * The official SDK (~5 MB of heap) is loaded by the first call to an Anthropic account, not at start; until then
 * no error can be one of its classes.
 */
let anthropicSdk: typeof Anthropic | undefined;
const loadAnthropicSdk = async (): Promise<typeof Anthropic> => (anthropicSdk ??= (await import('@anthropic-ai/sdk')).default);

/**
 * What the adapter carries. `responseFormat` is a JSON schema sent as `output_config.format` (messages.ts);
 * which Claude models take one is the catalog's `capabilities.flags.jsonSchema`, checked before the call.
 */
const ANTHROPIC_PARAMETERS: ReadonlySet<TextParameter> = new Set<TextParameter>([
  'tools',
  'toolChoice',
  'parallelToolCalls',
  'responseFormat',
  'topP',
  'topK',
  'stop',
  'user',
]);

export function createAnthropicAdapter(options: AnthropicAdapterOptions = {}): ProviderAdapter {
  const defaultBaseUrl = options.defaultBaseUrl ?? 'https://api.anthropic.com';
  const http = options.http ?? directUpstreamHttp;
  const clients = new Map<string, Anthropic>();

  const clientFor = async (credential: UpstreamCredential): Promise<Anthropic> => {
    const baseURL = credential.baseUrl ?? defaultBaseUrl;
    const key = `${credential.accountId}\u0000${credential.apiKey}\u0000${baseURL}\u0000${credential.timeoutMs}`;
    let client = clients.get(key);
    if (!client) {
      const AnthropicClient = anthropicSdk ?? (await loadAnthropicSdk());
      client =
        clients.get(key) ?? new AnthropicClient({ apiKey: credential.apiKey ?? '', baseURL, maxRetries: 0, timeout: credential.timeoutMs, fetch: http.fetch });
      clients.set(key, client);
    }
    return client;
  };

  return {
    kind: 'anthropic',
    needsCredential: true,
    parameters: ANTHROPIC_PARAMETERS,
    images: true,
    jsonSchema: true,

    async generateText(credential, request) {
      const body = anthropicRequestBody(request); // a request that cannot be mapped fails here, before any call
      try {
        const message = await (await clientFor(credential)).messages.create({ ...body, stream: false }, { signal: request.signal });
        return fromAnthropicMessage(message);
      } catch (err) {
        throw mapAnthropicError(err, request.model);
      }
    },

    async streamText(credential, request) {
      const body = anthropicRequestBody(request);
      let upstream: Awaited<ReturnType<typeof openStream>>;
      const openStream = async () => (await clientFor(credential)).messages.create({ ...body, stream: true }, { signal: request.signal });
      try {
        upstream = await openStream();
      } catch (err) {
        throw mapAnthropicError(err, request.model);
      }
      return guardStream(streamEvents(upstream), {
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

/**
 * Anthropic's stream events as the gateway's: text deltas; a `tool_call` event per tool_use block start (index among
 * the answer's tool calls, id, name) then one per piece of its input JSON; usage and finish once `message_stop` came.
 */
async function* streamEvents(upstream: AsyncIterable<Anthropic.RawMessageStreamEvent>): AsyncGenerator<TextStreamEvent> {
  // message_start carries the input counts, message_delta the cumulative ones (input again on newer models): the latest wins.
  const usage: AnthropicUsage = {};
  const keepCounts = (counts: AnthropicUsage) => {
    for (const key of ['input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens'] as const) {
      if (typeof counts[key] === 'number') usage[key] = counts[key];
    }
    if (typeof counts.output_tokens_details?.thinking_tokens === 'number') usage.output_tokens_details = counts.output_tokens_details;
    if (counts.cache_creation) usage.cache_creation = counts.cache_creation;
  };
  // content block index -> tool call index, and whether that call has sent any argument text yet
  const toolCalls = new Map<number, { index: number; sentArguments: boolean }>();
  // content block index -> thinking block index (thinking comes before the text and the tool calls)
  const thinking = new Map<number, number>();
  let stopReason: string | null = null;
  let stopped = false;
  for await (const event of upstream) {
    switch (event.type) {
      case 'message_start':
        keepCounts(event.message.usage);
        break;
      case 'content_block_start': {
        const block = event.content_block;
        if (block.type === 'tool_use') {
          const call = { index: toolCalls.size, sentArguments: false };
          toolCalls.set(event.index, call);
          yield { type: 'tool_call', index: call.index, id: block.id, name: block.name, argumentsDelta: '' };
        } else if (block.type === 'text' && block.text) {
          yield { type: 'text', delta: block.text };
        } else if (block.type === 'thinking' || block.type === 'redacted_thinking') {
          const index = thinking.size;
          thinking.set(event.index, index);
          if (block.type === 'redacted_thinking') yield { type: 'thinking', index, redactedData: block.data };
          else if (block.thinking || block.signature)
            yield { type: 'thinking', index, ...(block.thinking ? { delta: block.thinking } : {}), ...(block.signature ? { signature: block.signature } : {}) };
        }
        break;
      }
      case 'content_block_delta': {
        const delta = event.delta;
        if (delta.type === 'text_delta' && delta.text) yield { type: 'text', delta: delta.text };
        const thought = thinking.get(event.index);
        if (thought !== undefined && delta.type === 'thinking_delta' && delta.thinking) yield { type: 'thinking', index: thought, delta: delta.thinking };
        if (thought !== undefined && delta.type === 'signature_delta' && delta.signature)
          yield { type: 'thinking', index: thought, signature: delta.signature };
        const call = toolCalls.get(event.index);
        if (delta.type === 'input_json_delta' && call && delta.partial_json) {
          call.sentArguments = true;
          yield { type: 'tool_call', index: call.index, argumentsDelta: delta.partial_json };
        }
        break;
      }
      case 'content_block_stop': {
        // A call without arguments streams no JSON at all; its arguments are then the empty object, as unstreamed.
        const call = toolCalls.get(event.index);
        if (call && !call.sentArguments) yield { type: 'tool_call', index: call.index, argumentsDelta: '{}' };
        break;
      }
      case 'message_delta':
        if (event.delta.stop_reason) stopReason = event.delta.stop_reason;
        keepCounts(event.usage);
        break;
      case 'message_stop':
        stopped = true;
        break;
      default:
        break;
    }
  }
  if (!stopped) return; // the guard reports the missing finish as a broken stream
  const counted = usageOf(usage);
  if (counted) yield { type: 'usage', usage: counted };
  yield { type: 'finish', finishReason: finishReasonOf(stopReason) };
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
  if (err instanceof AnthropicClient.APIConnectionError)
    return connectRefusal(err) ?? new UpstreamError('network', `Could not reach the provider: ${err.message}`, null, 'connection_error');
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
    // The outbound client never follows a redirect: the SDK sees it as it came.
    if (status >= 300 && status < 400) return redirectError(status, err.headers instanceof Headers ? err.headers.get('location') : null);
    return new UpstreamError(classifyStatus(status, type, message, model), message, status, type ?? `http_${status}`);
  }
  return null;
}
