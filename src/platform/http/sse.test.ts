import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSse, type SseStream } from './sse.js';

let app: FastifyInstance;
let lastStream: SseStream | null = null;
let goneCalls = 0;
let release!: () => void;

beforeAll(async () => {
  app = Fastify();
  app.get('/events', async (request, reply) => {
    const sse = openSse(request, reply, { keepAliveMs: 20, headers: { 'x-extra': 'yes' } });
    await sse.send({ type: 'text', delta: 'hello\nworld' });
    await new Promise((r) => setTimeout(r, 70));
    sse.comment('note');
    await sse.send({ type: 'finish', finishReason: 'stop' });
    sse.end();
    sse.end();
    return reply;
  });
  app.get('/slow', async (request, reply) => {
    const sse = openSse(request, reply, { keepAliveMs: 0 });
    lastStream = sse;
    sse.onClientGone(() => goneCalls++);
    await sse.send({ type: 'text', delta: 'first' });
    await new Promise<void>((resolve) => (release = resolve));
    await sse.send({ type: 'text', delta: 'after the client left' });
    sse.end();
    return reply;
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => app?.close());

describe('openSse', () => {
  it('writes data: <json> events with the stream headers, keep-alive comments, and ends once', async () => {
    const response = await app.inject({ method: 'GET', url: '/events' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(response.headers['cache-control']).toBe('no-cache, no-transform');
    expect(response.headers['x-accel-buffering']).toBe('no');
    expect(response.headers['x-request-id']).toBeTruthy();
    expect(response.headers['x-extra']).toBe('yes');
    expect(response.body.startsWith('data: {"type":"text","delta":"hello\\nworld"}\n\n')).toBe(true);
    expect(response.body).toContain(': keep-alive\n\n');
    expect(response.body).toContain(': note\n\n');
    expect(response.body.endsWith('data: {"type":"finish","finishReason":"stop"}\n\n')).toBe(true);
  });

  it('tells the producer when the client leaves and ignores later writes', async () => {
    const { port } = app.server.address() as AddressInfo;
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/slow' }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => undefined);
      req.on('close', () => resolve());
      req.end();
      setTimeout(() => reject(new Error('no first event')), 2000);
    });
    for (let i = 0; i < 100 && goneCalls === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(goneCalls).toBe(1);
    expect(lastStream!.clientGone).toBe(true);
    expect(lastStream!.closed).toBe(true);
    release();
    await expect(lastStream!.send({ type: 'text', delta: 'x' })).resolves.toBeUndefined();
    let late = 0;
    lastStream!.onClientGone(() => late++);
    expect(late).toBe(1);
  });
});
