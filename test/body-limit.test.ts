import { Agent, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/test-app.js';

/**
 * A body over the 1 MiB limit is answered 413 while the client is still sending it: the client must read that answer,
 * never lose it to a reset connection (EPIPE or ECONNRESET), however the body is framed and however it is paced.
 */
let t: TestApp;
let port: number;
beforeAll(async () => {
  t = await createTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as AddressInfo).port;
});
afterAll(async () => t?.close());

const CHUNK = Buffer.alloc(64 * 1024, 'a');

interface Outcome {
  status?: number;
  body?: string;
  error?: string;
}

/**
 * Sends `chunks` chunks of 64 KiB as one JSON body, paced like a slow client still writing when the answer comes,
 * with a Content-Length or chunked; resolves with what the client read by the end of the answer, or the error that
 * came first.
 */
function sendLargeBody(
  chunks: number,
  framing: 'content-length' | 'chunked',
  agent: Agent | false,
  options: { stopAtAnswer: boolean } = { stopAtAnswer: true },
): Promise<Outcome> {
  return new Promise((resolve) => {
    const headers: Record<string, string | number> = { 'content-type': 'application/json' };
    if (framing === 'content-length') headers['content-length'] = chunks * CHUNK.length;
    const request = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/v1/auth/signup', headers, agent }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (piece: string) => (body += piece));
      response.on('end', () => {
        if (!options.stopAtAnswer) return void request.once('finish', () => resolve({ status: response.statusCode, body }));
        resolve({ status: response.statusCode, body });
        request.destroy();
      });
    });
    request.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    let sent = 0;
    const writeNext = () => {
      if (request.destroyed) return;
      if (sent === chunks) {
        request.end();
        return;
      }
      sent++;
      // A slow client: one chunk a millisecond, so the answer comes (and the server closes) while it writes.
      request.write(CHUNK);
      setTimeout(writeNext, 1);
    };
    writeNext();
  });
}

describe('a request body over the limit', () => {
  for (const framing of ['content-length', 'chunked'] as const) {
    it(`is answered 413 in the envelope, which the client reads while still sending (${framing}, 100 tries)`, async () => {
      const outcomes: Outcome[] = [];
      // Without an agent the client sends `connection: close`: the case where the server closes after the answer.
      for (let i = 0; i < 100; i++) outcomes.push(await sendLargeBody(64, framing, false));
      const failures = outcomes.filter((o) => o.status !== 413 || o.error !== undefined);
      expect(failures).toEqual([]);
      for (const outcome of outcomes) expect(JSON.parse(outcome.body!).error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    });
  }

  it('keeps a keep-alive connection for the next request once the rest of the body was read and dropped', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect(await sendLargeBody(40, 'content-length', agent, { stopAtAnswer: false })).toMatchObject({ status: 413 });
      const next = await new Promise<{ status?: number; reused: boolean }>((resolve, reject) => {
        const request = httpRequest({ host: '127.0.0.1', port, path: '/healthz', agent }, (response) => {
          response.resume();
          response.on('end', () => resolve({ status: response.statusCode, reused: request.reusedSocket }));
        });
        request.on('error', reject).end();
      });
      expect(next).toEqual({ status: 200, reused: true });
    } finally {
      agent.destroy();
    }
  });
});
