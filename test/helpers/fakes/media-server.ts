import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * The HTTP server under the media fakes of `../fake-media-upstreams.ts` (and the types every media fake shares): a real
 * server on 127.0.0.1 that records each request (method, path, query, headers, and the body parsed as JSON or as
 * multipart fields with files as `{ filename, type, bytes }`) and lets a test override one answer with `decide`.
 * A leaf module, so the fakes that use it import nothing that imports them.
 */

export interface MediaFakeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  /** Parsed JSON, or the multipart fields (files as `{ filename, type, bytes }`). */
  body: any;
}

export type Override =
  | { kind: 'error'; status: number; body: unknown }
  /** Any bytes with any status, e.g. audio in a format the caller did not ask for. */
  | { kind: 'raw'; status: number; contentType: string; body: Buffer }
  | { kind: 'hang' }
  | { kind: 'default' };
export type MediaDecide = (request: MediaFakeRequest) => Override | Promise<Override>;

export interface MediaFake {
  origin: string;
  /** What to configure as the account's base URL. */
  baseUrl: string;
  requests: MediaFakeRequest[];
  decide(fn: MediaDecide): void;
  close(): Promise<void>;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, request: MediaFakeRequest, origin: string) => Promise<void>;

export const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};
export const sendBytes = (res: ServerResponse, bytes: Buffer, contentType: string) => {
  res.writeHead(200, { 'content-type': contentType, 'content-length': String(bytes.length) });
  res.end(bytes);
};

async function readBody(req: IncomingMessage): Promise<any> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  const raw = Buffer.concat(parts);
  const type = req.headers['content-type'] ?? '';
  if (raw.length === 0) return null;
  if (type.startsWith('multipart/form-data')) {
    const form = await new Response(raw, { headers: { 'content-type': type } }).formData();
    const fields: Record<string, unknown> = {};
    for (const [key, value] of form.entries()) {
      fields[key] = typeof value === 'string' ? value : { filename: value.name, type: value.type, bytes: Buffer.from(await value.arrayBuffer()) };
    }
    return fields;
  }
  return JSON.parse(raw.toString('utf8'));
}

export async function startFake(basePath: string, handle: Handler): Promise<MediaFake> {
  let decide: MediaDecide = () => ({ kind: 'default' });
  const requests: MediaFakeRequest[] = [];
  const sockets = new Set<Socket>();
  let origin = '';
  const server: Server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const request: MediaFakeRequest = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: await readBody(req),
      };
      requests.push(request);
      const override = await decide(request);
      if (override.kind === 'hang') return;
      if (override.kind === 'error') return send(res, override.status, override.body);
      if (override.kind === 'raw') {
        res.writeHead(override.status, { 'content-type': override.contentType });
        return void res.end(override.body);
      }
      await handle(req, res, request, origin);
    })().catch((err) => {
      if (!res.headersSent) send(res, 500, { error: String(err) });
      else res.end();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    baseUrl: `${origin}${basePath}`,
    requests,
    decide(fn) {
      decide = fn;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
