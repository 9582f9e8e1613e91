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

export function openSse(request: FastifyRequest, reply: FastifyReply, options: SseOptions = {}): SseStream {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-request-id': request.id,
    ...options.headers,
  });
  res.flushHeaders?.();

  let ended = false;
  let gone = false;
  const goneCallbacks: Array<() => void> = [];
  const markGone = () => {
    if (ended || gone) return;
    gone = true;
    clearInterval(keepAlive);
    for (const callback of goneCallbacks.splice(0)) callback();
  };
  // `close` on the response fires when the underlying connection closes, whether or not the response finished.
  res.on('close', markGone);

  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const keepAlive = setInterval(() => {
    if (!ended && !gone) res.write(': keep-alive\n\n');
  }, keepAliveMs || 2 ** 31 - 1);
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
    send: (data, event) => write(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`),
    sendRaw: (data) => write(`data: ${data}\n\n`),
    comment(text) {
      if (!ended && !gone && !res.destroyed) res.write(`: ${text.replace(/\n/g, ' ')}\n\n`);
    },
    end() {
      if (ended) return;
      ended = true;
      clearInterval(keepAlive);
      if (!res.destroyed && !res.writableEnded) res.end();
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
