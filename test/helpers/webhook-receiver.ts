import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedDelivery {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface ReceiverAnswer {
  status: number;
  headers?: Record<string, string>;
  /** Wait this long before answering. */
  delayMs?: number;
}

/**
 * A real HTTP server on loopback that records every request and answers each path with what its handler says
 * (200 by default). `answer(path, n)` gets the 1-based number of the request to that path.
 */
export async function startReceiver() {
  const received: ReceivedDelivery[] = [];
  const handlers = new Map<string, (n: number) => ReceiverAnswer>();
  const counts = new Map<string, number>();
  const sockets = new Set<import('node:net').Socket>();
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '/';
      received.push({ path, headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      const n = (counts.get(path) ?? 0) + 1;
      counts.set(path, n);
      const answer = handlers.get(path)?.(n) ?? { status: 200 };
      const reply = () => {
        if (response.destroyed) return;
        response.writeHead(answer.status, answer.headers ?? { 'content-type': 'text/plain' });
        response.end('ok');
      };
      if (answer.delayMs) setTimeout(reply, answer.delayMs);
      else reply();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: (path: string) => `${base}${path}`,
    received,
    to: (path: string) => received.filter((r) => r.path === path),
    answer(path: string, handler: (n: number) => ReceiverAnswer) {
      handlers.set(path, handler);
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/**
 * Polls `check` every 50 ms until it returns a value other than undefined/false, or fails after `timeoutMs`; the
 * failure adds what `explain` says of the state then (a process's output, the rows still waited for).
 */
export async function eventually<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  what: string,
  timeoutMs = 15_000,
  explain?: () => Promise<string> | string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${explain ? `: ${await explain()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
