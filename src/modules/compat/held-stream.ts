import type { Principal } from '../../platform/auth/plugin.js';
import type { SseStream } from '../../platform/http/sse.js';
import type { CallOptions, GatewayService, TextAnswerBody, TextBody } from '../gateway/index.js';

/** One event the gateway's text stream writes (`text`, `tool_call`, `thinking`, `usage`, `finish`, `error`). */
export interface GatewayEvent {
  type: string;
  delta?: string;
  /** `tool_call`: which call (0-based), its id and name on its first piece, then pieces of its JSON arguments. */
  index?: number;
  id?: string;
  name?: string;
  argumentsDelta?: string;
  /** `thinking`: a piece of thinking block `index`: text (`delta`), its `signature`, or a redacted block's data. */
  signature?: string;
  redactedData?: string;
  finishReason?: string;
  error?: { code: string; message: string };
}

/**
 * What the gateway writes to when another wire format answers: each gateway event goes to `onEvent`, and the
 * gateway's `end()` is held back so the caller can close the answer once it knows the billed usage.
 */
export function heldStream(target: SseStream, onEvent: (event: GatewayEvent) => Promise<void>): SseStream {
  return {
    send: (data: unknown) => onEvent(data as GatewayEvent),
    sendRaw: (data) => target.sendRaw(data),
    comment: (text) => target.comment(text),
    end: () => undefined,
    get closed() {
      return target.closed;
    },
    get clientGone() {
      return target.clientGone;
    },
    onClientGone: (callback) => target.onClientGone(callback),
  };
}

/** A gateway stream answered in another wire format: what the gateway writes to, and how the answer closes. */
export interface TranslatedStream {
  sse: SseStream;
  /** Closes the answer once the gateway is done (`null`: the stream broke midway and already carries an error). */
  close(answer: TextAnswerBody | null): Promise<void>;
}

export interface TranslatedStreamOptions extends CallOptions {
  open: (headers?: Record<string, string>) => SseStream;
}

/**
 * The gateway's text stream answered in another wire format: `translate` wraps the caller's stream once the upstream
 * accepted the call (errors before that are thrown), and the answer closes once the gateway knows the billed usage.
 */
export async function streamTranslated(
  gateway: Pick<GatewayService, 'streamText'>,
  principal: Principal,
  body: TextBody,
  options: TranslatedStreamOptions,
  translate: (target: SseStream, requestId: string) => TranslatedStream,
): Promise<void> {
  let stream: TranslatedStream | null = null;
  const answer = await gateway.streamText(principal, body, {
    idempotencyKey: options.idempotencyKey,
    timing: options.timing,
    open: (headers) => {
      stream = translate(options.open(headers), headers?.['x-ai-request-id'] ?? '');
      return stream.sse;
    },
  });
  await (stream as TranslatedStream | null)?.close(answer);
}
