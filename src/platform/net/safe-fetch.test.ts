import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../../../test/helpers/plain-http-server.js';
import { rejection } from '../../../test/helpers/rejection.js';
import { FetchError } from './outbound-policy.js';
import { createSafeFetcher, unreadableRemoteFile, type SafeFetcher } from './safe-fetch.js';

// Reading remote files through the safe fetcher: statuses, caps, timeouts and redirects. Its SSRF protection is
// tested in safe-fetch-ssrf.test.ts.

/** Fails with the FetchError the promise rejects with. */
const failure = (promise: Promise<unknown>) => rejection(promise, FetchError);

const servers: TestServer[] = [];
let origin: string;
let target: TestServer;
const open: SafeFetcher = createSafeFetcher({ allowPrivateNetwork: true });

beforeAll(async () => {
  target = await startServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    switch (url.pathname) {
      case '/image.png':
        res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
        return;
      case '/missing':
        res.writeHead(404).end('nope');
        return;
      case '/forbidden':
        res.writeHead(403).end('blocked');
        return;
      case '/big-declared':
        res.writeHead(200, { 'content-length': String(2048) }).end(Buffer.alloc(2048));
        return;
      case '/big-chunked': {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        let sent = 0;
        const pump = () => {
          while (sent < 64 * 1024 && !res.destroyed) {
            sent += 1024;
            if (!res.write(Buffer.alloc(1024))) return void res.once('drain', pump);
          }
          res.end();
        };
        pump();
        return;
      }
      case '/hang':
        return; // never answers
      case '/trickle':
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('a');
        return; // headers and one byte, then silence
      case '/loop':
        res.writeHead(302, { location: '/loop' }).end();
        return;
      case '/hop':
        res.writeHead(301, { location: `/image.png` }).end();
        return;
      case '/see-other':
        res.writeHead(303, { location: '/echo' }).end();
        return;
      case '/echo':
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ method: req.method, authorization: req.headers.authorization ?? null }));
        return;
      default:
        res.writeHead(500).end();
    }
  });
  servers.push(target);
  origin = target.origin;
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

describe('safe fetch: reading remote files', () => {
  it('returns the body, status, content type and final URL', async () => {
    const response = await open(`${origin}/image.png`);
    expect(response).toMatchObject({ status: 200, contentType: 'image/png', url: `${origin}/image.png` });
    expect([...response.body]).toEqual([0x89, 0x50, 0x4e, 0x47]);
  });

  it('names the remote status of a 404 and a 403', async () => {
    const missing = await failure(open(`${origin}/missing`));
    expect(missing).toMatchObject({ reason: 'HTTP_STATUS', status: 404 });
    expect(missing.message).toBe('The remote server answered 404 Not Found.');
    const forbidden = await failure(open(`${origin}/forbidden`));
    expect(forbidden).toMatchObject({ reason: 'HTTP_STATUS', status: 403 });
  });

  it('can hand back a non-2xx answer instead of throwing', async () => {
    const response = await open(`${origin}/missing`, { throwOnHttpError: false });
    expect(response.status).toBe(404);
    expect(response.body.toString()).toBe('nope');
  });

  it('refuses a body over the cap, from the declared length and while streaming', async () => {
    const declared = await failure(open(`${origin}/big-declared`, { maxBytes: 1024 }));
    expect(declared.reason).toBe('TOO_LARGE');
    expect(declared.message).toContain('too large');
    expect(declared.message).toContain('1 KB');
    const streamed = await failure(open(`${origin}/big-chunked`, { maxBytes: 10 * 1024 }));
    expect(streamed.reason).toBe('TOO_LARGE');
    // Under the cap the same stream is read whole.
    expect((await open(`${origin}/big-chunked`)).body.length).toBe(64 * 1024);
  });

  it('times out a server that never answers and one that stalls mid-body', async () => {
    const hang = await failure(open(`${origin}/hang`, { timeoutMs: 300 }));
    expect(hang.reason).toBe('TIMEOUT');
    expect(hang.message).toContain('did not answer in time');
    const trickle = await failure(open(`${origin}/trickle`, { timeoutMs: 300 }));
    expect(trickle.reason).toBe('TIMEOUT');
  });

  it('follows redirects, switches a 303 to GET, and stops a redirect loop after the limit', async () => {
    const hopped = await open(`${origin}/hop`);
    expect(hopped.url).toBe(`${origin}/image.png`);
    const seeOther = await open(`${origin}/see-other`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    expect(JSON.parse(seeOther.body.toString())).toMatchObject({ method: 'GET' });
    const before = target.requests.filter((r) => r === 'GET /loop').length;
    const loop = await failure(open(`${origin}/loop`));
    expect(loop.reason).toBe('TOO_MANY_REDIRECTS');
    expect(target.requests.filter((r) => r === 'GET /loop').length - before).toBe(6);
    const none = await failure(open(`${origin}/hop`, { maxRedirects: 0 }));
    expect(none.reason).toBe('TOO_MANY_REDIRECTS');
  });

  it('refuses URLs that are not http(s) or not URLs at all', async () => {
    for (const url of ['file:///etc/passwd', 'ftp://example.com/a.png', 'gopher://example.com/']) {
      expect((await failure(open(url))).reason).toBe('PROTOCOL_NOT_ALLOWED');
    }
    expect((await failure(open('not a url'))).reason).toBe('INVALID_URL');
    expect((await failure(open(`http://user:pw@127.0.0.1:${target.port}/image.png`))).reason).toBe('INVALID_URL');
  });

  it('maps a failure to a 400 that names the fetch status', () => {
    const error = unreadableRemoteFile(new FetchError('HTTP_STATUS', 'The remote server answered 404 Not Found.', 404, 'https://x.example/a.png'), 'the image');
    expect(error.statusCode).toBe(400);
    expect(error.code).toBe('BAD_REQUEST');
    expect(error.message).toBe('The image could not be read (HTTP 404): The remote server answered 404 Not Found.');
    expect(error.details).toEqual({ fetch: { reason: 'HTTP_STATUS', status: 404, url: 'https://x.example/a.png' } });
  });
});
