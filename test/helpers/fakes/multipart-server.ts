import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { MediaDecide, MediaFake, MediaFakeRequest } from '../fake-media-upstreams.js';

/**
 * The HTTP server under the Stability, Ideogram and Recraft fakes: records every request (method, path, headers and
 * the parsed body: JSON, or multipart fields with files as `{ filename, type, bytes }`), lets a test override one
 * answer with `decide`, and otherwise answers with the provider's handler.
 */

export type FakeAnswer =
  | { status: number; json: unknown; contentType?: string; headers?: Record<string, string> }
  | { status: number; bytes: Buffer; contentType: string; headers?: Record<string, string> };

export type FakeHandler = (request: MediaFakeRequest, origin: string) => FakeAnswer | Promise<FakeAnswer>;

export interface MultipartFile {
  filename: string;
  type: string;
  bytes: Buffer;
}

export const isFile = (value: unknown): value is MultipartFile =>
  typeof value === 'object' && value !== null && Buffer.isBuffer((value as MultipartFile).bytes);

async function readBody(req: IncomingMessage): Promise<unknown> {
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
  if (type.startsWith('application/json')) return JSON.parse(raw.toString('utf8'));
  return raw;
}

export async function startFakeServer(handle: FakeHandler): Promise<MediaFake> {
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
      const answer: FakeAnswer =
        override.kind === 'error'
          ? { status: override.status, json: override.body }
          : override.kind === 'raw'
            ? { status: override.status, bytes: override.body, contentType: override.contentType }
            : await handle(request, origin);
      if ('json' in answer) {
        res.writeHead(answer.status, { 'content-type': answer.contentType ?? 'application/json', ...answer.headers });
        res.end(JSON.stringify(answer.json));
      } else {
        res.writeHead(answer.status, { 'content-type': answer.contentType, 'content-length': String(answer.bytes.length), ...answer.headers });
        res.end(answer.bytes);
      }
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(err));
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
    baseUrl: origin,
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

/** A header's single value (Node joins repeated ones). */
export const header = (request: MediaFakeRequest, name: string): string => {
  const value = request.headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(', ') : (value ?? '');
};
