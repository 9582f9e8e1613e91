import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * A server-sent-events response: `data: <json>\n\n` per event, written straight to the socket.
 * The reply is hijacked, so Fastify's serialisation and onSend hooks do not run; the headers they would add
 * (request id) are written here. Writes after the client left are ignored; `closed` tells the producer.
 */
export interface SseStream {
  /** Sends one event as `data: <json>` (after `event: <name>` when named); resolves when the socket took it (honours backpressure). */
  send(data: unknown, event?: string): Promise<void>;
  /** Sends a `data:` line that is not JSON (OpenAI's closing `data: [DONE]`). */
  sendRaw(data: string): Promise<void>;
  /** A comment line (`: text`), used as a keep-alive. */
  comment(text: string): void;
  /** Ends the response (idempotent). */
  end(): void;
  /** True once the client disconnected or the stream was ended. */
  readonly closed: boolean;
  /** True when the client went away before `end()`. */
  readonly clientGone: boolean;
  /** Registers a callback for the client going away before `end()`. */
  onClientGone(callback: () => void): void;
}

export interface SseOptions {
  /** Interval of `: keep-alive` comments that stop proxies from closing an idle stream (default 15 s; 0 disables). */
  keepAliveMs?: number;
  headers?: Record<string, string>;
}

/**
 * How a streamed answer is written on the wire: its content type, what opens and closes it, how one event, one raw
 * line and one keep-alive look. Server-sent events are one framing; Gemini's JSON array (`compat/gemini.json-stream.ts`)
 * is another, served through the same socket handling.
 */
export interface StreamFraming {
  contentType: string;
  opening: string;
  closing: string;
  /** `index` counts the events sent before this one. */
  event(data: unknown, name: string | undefined, index: number): string;
  /** Undefined: the framing has no raw lines and drops them. */
  raw?(data: string): string;
  keepAlive(text: string): string;
}

const SSE_FRAMING: StreamFraming = {
  contentType: 'text/event-stream; charset=utf-8',
  opening: '',
  closing: '',
  event: (data, name) => `${name ? `event: ${name}\n` : ''}data: ${JSON.stringify(data)}\n\n`,
  raw: (data) => `data: ${data}\n\n`,
  keepAlive: (text) => `: ${text.replace(/\n/g, ' ')}\n\n`,
};

export function openSse(request: FastifyRequest, reply: FastifyReply, options: SseOptions = {}): SseStream {
  return openFramedStream(request, reply, SSE_FRAMING, options);
}

/** A hijacked streamed answer in `framing`, with backpressure, keep-alives and the client's leaving noticed. */
export function openFramedStream(request: FastifyRequest, reply: FastifyReply, framing: StreamFraming, options: SseOptions = {}): SseStream {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': framing.contentType,
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-request-id': request.id,
    // What is measured by the first byte (auth, route, reserve, the upstream's first byte); onSend hooks do not run here.
    ...(request.timing && !request.timing.empty ? { 'server-timing': request.timing.header() } : {}),
    ...options.headers,
  });
  if (framing.opening) res.write(framing.opening);
  else res.flushHeaders?.();

  let ended = false;
  let gone = false;
  let events = 0;
  const goneCallbacks: Array<() => void> = [];
  const markGone = () => {
    if (ended || gone) return;
    gone = true;
    clearInterval(keepAlive);
    for (const callback of goneCallbacks.splice(0)) callback();
  };
  // `close` on the response fires when the underlying connection closes, whether or not the response finished.
  res.on('close', markGone);

  const comment = (text: string) => {
    if (!ended && !gone && !res.destroyed) res.write(framing.keepAlive(text));
  };
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const keepAlive = setInterval(() => comment('keep-alive'), keepAliveMs || 2 ** 31 - 1);
  keepAlive.unref();
  if (!keepAliveMs) clearInterval(keepAlive);

  async function write(frame: string): Promise<void> {
    if (ended || gone || res.destroyed) return;
    const ok = res.write(frame);
    if (!ok && !res.destroyed) {
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
    }
  }

  return {
    send: (data, event) => write(framing.event(data, event, events++)),
    sendRaw: async (data) => (framing.raw ? write(framing.raw(data)) : undefined),
    comment,
    end() {
      if (ended) return;
      ended = true;
      clearInterval(keepAlive);
      if (!res.destroyed && !res.writableEnded) res.end(framing.closing || undefined);
    },
    get closed() {
      return ended || gone || res.destroyed;
    },
    get clientGone() {
      return gone;
    },
    onClientGone(callback) {
      if (gone) callback();
      else goneCallbacks.push(callback);
    },
  };
}
