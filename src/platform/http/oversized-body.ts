import type { FastifyReply, FastifyRequest } from 'fastify';

/** What is read and dropped of a body over the limit, at most, before the connection is closed anyway. */
const DRAIN_BYTES_MAX = 16 * 1024 * 1024;
const DRAIN_MS_MAX = 10_000;

/**
 * A body over the limit is answered 413 while the client may still be sending it. Closing the connection right after
 * the answer (Fastify asks for it, and Node does it at once) makes the kernel reset it when more of the body arrives,
 * and the reset can reach the client before it read the answer, which it then never sees (EPIPE or ECONNRESET instead
 * of the 413). So the rest of the body is read and dropped: a keep-alive connection stays open for the next request;
 * one the client asked to close is closed in stages (RFC 9112, 9.6): our side ends after the answer, and the socket
 * goes when the client closes its side (or the keep-alive timeout ends it). A client that sends more than `DRAIN_BYTES_MAX` or for longer than
 * `DRAIN_MS_MAX` has had the time to read the answer, and is cut.
 */
export function drainOversizedBody(request: FastifyRequest, reply: FastifyReply): void {
  const raw = request.raw;
  const socket = raw.socket;
  if (raw.complete || socket.destroyed) return;
  const res = reply.raw;
  // Node keeps the connection when the client did not ask to close it; else it would destroy the socket at once.
  const clientCloses = !res.shouldKeepAlive;
  reply.removeHeader('connection');
  res.shouldKeepAlive = true;
  if (clientCloses) res.once('finish', () => socket.end());

  let drained = 0;
  const timer = setTimeout(() => cut(), DRAIN_MS_MAX);
  timer.unref();
  const done = () => {
    clearTimeout(timer);
    raw.off('data', onData);
    raw.off('end', done);
    raw.off('close', done);
  };
  const cut = () => {
    done();
    socket.destroy();
  };
  const onData = (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_BYTES_MAX) cut();
  };
  raw.on('data', onData);
  raw.once('end', done);
  raw.once('close', done);
  raw.resume();
}
