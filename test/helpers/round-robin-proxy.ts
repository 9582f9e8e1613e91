import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A load balancer for tests: a node:http server that hands each request to the next backend in turn, forwarding the
 * method, headers and body and streaming the answer back as it comes (SSE included). `X-Forwarded-For` from the
 * client is kept, so instances with TRUST_PROXY see the address the test chose. A backend that does not answer (a
 * killed process) is skipped, as a load balancer's health check would; the request goes to the next one.
 */
export async function startRoundRobinProxy() {
  let backends: string[] = [];
  let next = 0;
  const served = new Map<string, number>();
  const sockets = new Set<import('node:net').Socket>();

  const forward = (request: http.IncomingMessage, response: http.ServerResponse, body: Buffer, attempt: number) => {
    if (backends.length === 0) {
      response.writeHead(502).end('no backend');
      return;
    }
    const backend = backends[next++ % backends.length]!;
    const target = new URL(request.url ?? '/', backend);
    const upstream = http.request(target, { method: request.method, headers: { ...request.headers, host: target.host } }, (answer) => {
      served.set(backend, (served.get(backend) ?? 0) + 1);
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
      response.on('close', () => answer.destroy());
    });
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      // Refused before anything was sent back: try the next backend (never replays a request a backend received).
      if (!response.headersSent && err.code === 'ECONNREFUSED' && attempt < backends.length) forward(request, response, body, attempt + 1);
      else if (!response.headersSent) response.writeHead(502).end(`backend failed: ${err.message}`);
      else response.destroy(err);
    });
    upstream.end(body);
  };

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => forward(request, response, Buffer.concat(chunks), 1));
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    /** The backends' base URLs, in the order requests go round. */
    setBackends(list: string[]) {
      backends = [...list];
    },
    /** Requests each backend answered. */
    served,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export type RoundRobinProxy = Awaited<ReturnType<typeof startRoundRobinProxy>>;
