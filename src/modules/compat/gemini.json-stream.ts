import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SseOptions, SseStream } from '../../platform/http/sse.js';

/** Between two elements, as Google writes them. */
const SEPARATOR = '\r\n,\r\n';

/**
 * `streamGenerateContent` without `alt=sse`, served as Google serves it: one JSON array written as the chunks come,
 * `[` then the first chunk, `\r\n,\r\n` before each further one and `\r\n]` at the end. A client may read it whole
 * with any JSON parser, or element by element as it arrives. It offers the gateway's stream interface, so the same
 * translation (`gemini.stream.ts`) and the same metering feed it as feed the SSE answer.
 *
 * The reply is hijacked like an SSE answer (the request id header is written here). The keep-alive that stops a
 * proxy from closing a quiet stream (a model thinking without showing its thoughts) is a newline: whitespace is
 * valid anywhere between the array's tokens, where an SSE comment would not be.
 */
export function openJsonArrayStream(request: FastifyRequest, reply: FastifyReply, options: SseOptions = {}): SseStream {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-request-id': request.id,
    ...options.headers,
  });
  res.write('[');

  let ended = false;
  let gone = false;
  let elements = 0;
  const goneCallbacks: Array<() => void> = [];
  const markGone = () => {
    if (ended || gone) return;
    gone = true;
    clearInterval(keepAlive);
    for (const callback of goneCallbacks.splice(0)) callback();
  };
  // `close` fires when the connection closes, whether or not the answer was finished.
  res.on('close', markGone);

  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const keepAlive = setInterval(() => {
    if (!ended && !gone) res.write('\n');
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
    // Event names belong to SSE; an element is just the chunk.
    send: (data) => write(`${elements++ === 0 ? '' : SEPARATOR}${JSON.stringify(data)}`),
    // A non-JSON line (OpenAI's `[DONE]`) has no place in an array, and the Gemini translation never sends one.
    sendRaw: async () => undefined,
    comment() {
      if (!ended && !gone && !res.destroyed) res.write('\n');
    },
    end() {
      if (ended) return;
      ended = true;
      clearInterval(keepAlive);
      if (!res.destroyed && !res.writableEnded) res.end('\r\n]');
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
