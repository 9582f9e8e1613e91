import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { generateMp4 } from '../../../src/platform/media/video.js';
import type { MediaDecide, MediaFake, MediaFakeRequest } from '../fake-media-upstreams.js';

/**
 * The HTTP server under the JSON-speaking provider fakes of this folder: a real server on 127.0.0.1 that records every
 * request (method, path, query, headers, parsed JSON body) and lets a test override one answer with `decide` (an error,
 * any body, a hang). The provider's own behaviour is the `handle` function.
 */

export type FakeHandler = (request: MediaFakeRequest, res: ServerResponse, origin: string) => Promise<void> | void;

export const sendJson = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

export const sendBytes = (res: ServerResponse, bytes: Buffer, contentType: string) => {
  res.writeHead(200, { 'content-type': contentType, 'content-length': String(bytes.length) });
  res.end(bytes);
};

async function readJson(req: IncomingMessage): Promise<unknown> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  const raw = Buffer.concat(parts);
  if (raw.length === 0) return null;
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return { unparsed: raw.toString('utf8') };
  }
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
        body: await readJson(req),
      };
      requests.push(request);
      const override = await decide(request);
      if (override.kind === 'hang') return;
      if (override.kind === 'error') return sendJson(res, override.status, override.body);
      if (override.kind === 'raw') {
        res.writeHead(override.status, { 'content-type': override.contentType });
        return void res.end(override.body);
      }
      await handle(request, res, origin);
    })().catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: String(err) });
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

let clip: Promise<Buffer> | null = null;

/** A real, tiny MP4 (64x36, one second), rendered once per test process. */
export function fakeClip(): Promise<Buffer> {
  clip ??= generateMp4({ prompt: 'provider fake', seed: 1, width: 64, height: 36, durationSeconds: 1, fps: 4 });
  return clip;
}

/** Task ids as the providers print them: long decimal strings. */
export function numericIds(start: number): () => string {
  let next = start;
  return () => String(next++);
}
