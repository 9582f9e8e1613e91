import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { initUpload, pathOf, samplePng, uploadFile } from '../../../test/helpers/files.js';
import { notModified, parseRange, rangeStillValid } from './http-range.js';

let t: TestApp;
let png: Buffer;
let path: string;
let size: number;
beforeAll(async () => {
  t = await createTestApp();
  const { accessToken } = await signUp(t.app);
  png = samplePng(96, 5);
  size = png.length;
  const { url } = await uploadFile(t.app, accessToken, png, 'image/png', 'IMAGE', 'Café été.png');
  path = pathOf(url);
});
afterAll(async () => t?.close());

const validators = async () => {
  const headers = (await get()).headers;
  return { etag: String(headers.etag), lastModified: String(headers['last-modified']) };
};
const get = (headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET', url = path) => t.app.inject({ method, url, headers });

describe('GET /v1/files/raw/<key>', () => {
  it('serves the whole file to anyone with the link, with type, length and caching headers', async () => {
    const response = await get();
    expect(response.statusCode).toBe(200);
    expect(response.rawPayload.equals(png)).toBe(true);
    expect(response.headers).toMatchObject({
      'content-type': 'image/png',
      'content-length': String(size),
      'accept-ranges': 'bytes',
      'cache-control': 'public, max-age=31536000, immutable',
      'x-content-type-options': 'nosniff',
      'cross-origin-resource-policy': 'cross-origin',
      etag: expect.stringMatching(/^"[A-Za-z0-9_-]{43}"$/),
      'last-modified': t.clock.now().toUTCString(),
    });
    expect(response.headers['content-disposition']).toBe(`inline; filename="Caf_ _t_.png"; filename*=UTF-8''Caf%C3%A9%20%C3%A9t%C3%A9.png`);
  });

  it('answers HEAD with the headers and no body', async () => {
    const response = await get({}, 'HEAD');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-length']).toBe(String(size));
    expect(response.headers['content-type']).toBe('image/png');
    expect(response.rawPayload.length).toBe(0);
  });

  it('serves the first bytes of a range with 206 and Content-Range', async () => {
    const response = await get({ range: 'bytes=0-99' });
    expect(response.statusCode).toBe(206);
    expect(response.headers['content-range']).toBe(`bytes 0-99/${size}`);
    expect(response.headers['content-length']).toBe('100');
    expect(response.rawPayload.equals(png.subarray(0, 100))).toBe(true);
  });

  it('serves a suffix range (the last N bytes)', async () => {
    const response = await get({ range: 'bytes=-500' });
    expect(response.statusCode).toBe(206);
    expect(response.headers['content-range']).toBe(`bytes ${size - 500}-${size - 1}/${size}`);
    expect(response.rawPayload.equals(png.subarray(size - 500))).toBe(true);
  });

  it('serves an open-ended range, and clips an end past the file', async () => {
    const open = await get({ range: 'bytes=100-' });
    expect(open.statusCode).toBe(206);
    expect(open.headers['content-range']).toBe(`bytes 100-${size - 1}/${size}`);
    expect(open.rawPayload.equals(png.subarray(100))).toBe(true);
    const clipped = await get({ range: `bytes=10-${size * 10}` });
    expect(clipped.headers['content-range']).toBe(`bytes 10-${size - 1}/${size}`);
    const last = await get({ range: `bytes=${size - 1}-${size - 1}` });
    expect(last.rawPayload.equals(png.subarray(size - 1))).toBe(true);
    const bigSuffix = await get({ range: `bytes=-${size + 50}` });
    expect(bigSuffix.statusCode).toBe(206);
    expect(bigSuffix.rawPayload.equals(png)).toBe(true);
  });

  it.each([`bytes=${'SIZE'}-`, 'bytes=SIZE-SIZE9', 'bytes=-0'])(
    'answers an unsatisfiable range (%s) with 416 and Content-Range: bytes */size',
    async (template) => {
      const response = await get({ range: template.replaceAll('SIZE', String(size)) });
      expect(response.statusCode).toBe(416);
      expect(response.headers['content-range']).toBe(`bytes */${size}`);
      expect(json(response).error).toMatchObject({ code: 'RANGE_NOT_SATISFIABLE', message: expect.stringContaining(`${size} bytes`) });
    },
  );

  it.each(['bytes=abc', 'items=0-10', 'bytes=50-10', 'bytes=0-1,5-6', 'bytes=', 'bytes=--5', '0-10'])(
    'ignores the malformed or unsupported range %j and serves the whole file',
    async (range) => {
      const response = await get({ range });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-range']).toBeUndefined();
      expect(response.rawPayload.equals(png)).toBe(true);
    },
  );

  it('answers a conditional GET with 304 when the ETag or the date still matches', async () => {
    const { etag, lastModified } = await validators();
    const matching: Record<string, string>[] = [
      { 'if-none-match': etag },
      { 'if-none-match': `"other", W/${etag}` },
      { 'if-none-match': '*' },
      { 'if-modified-since': lastModified },
      { 'if-modified-since': new Date(Date.parse(lastModified) + 60_000).toUTCString() },
    ];
    for (const headers of matching) {
      const response = await get(headers);
      expect(response.statusCode, JSON.stringify(headers)).toBe(304);
      expect(response.rawPayload.length).toBe(0);
      expect(response.headers.etag).toBe(etag);
      expect(response.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    }
    const changed: Record<string, string>[] = [
      { 'if-none-match': '"something-else"' },
      { 'if-modified-since': new Date(Date.parse(lastModified) - 60_000).toUTCString() },
      // If-None-Match wins over If-Modified-Since.
      { 'if-none-match': '"something-else"', 'if-modified-since': lastModified },
      { 'if-modified-since': 'not a date' },
    ];
    for (const headers of changed) {
      expect((await get(headers)).statusCode, JSON.stringify(headers)).toBe(200);
    }
  });

  it('honours If-Range: the range when the validator matches, the whole file when it does not', async () => {
    const { etag, lastModified } = await validators();
    expect((await get({ range: 'bytes=0-9', 'if-range': etag })).statusCode).toBe(206);
    expect((await get({ range: 'bytes=0-9', 'if-range': lastModified })).statusCode).toBe(206);
    expect((await get({ range: 'bytes=0-9', 'if-range': '"stale"' })).statusCode).toBe(200);
    expect((await get({ range: 'bytes=0-9', 'if-range': `W/${etag}` })).statusCode).toBe(200);
  });

  it('answers 404 for unknown keys, files not uploaded yet, and path tricks', async () => {
    const { accessToken } = await signUp(t.app);
    const pending = await initUpload(t.app, accessToken, { kind: 'IMAGE', contentType: 'image/png', size: 100 });
    for (const url of [
      pathOf(pending.url),
      '/v1/files/raw/image/00000000-0000-7000-8000-000000000000-00000000000000000000000000000000.png',
      '/v1/files/raw/%2e%2e/%2e%2e/secrets.json',
      '/v1/files/raw/..%2fsecrets.json',
      '/v1/files/raw/.hidden',
    ]) {
      const response = await get({}, 'GET', url);
      expect(response.statusCode, url).toBe(404);
      expect(json(response).error.code).toBe('NOT_FOUND');
    }
  });
});

describe('range and conditional helpers', () => {
  it('parses ranges per RFC 9110', () => {
    expect(parseRange(undefined, 10)).toEqual({ kind: 'full' });
    expect(parseRange('bytes=0-0', 10)).toEqual({ kind: 'partial', start: 0, end: 0 });
    expect(parseRange('BYTES = 2 - 4', 10)).toEqual({ kind: 'partial', start: 2, end: 4 });
    expect(parseRange('bytes=-3', 10)).toEqual({ kind: 'partial', start: 7, end: 9 });
    expect(parseRange('bytes=9-', 10)).toEqual({ kind: 'partial', start: 9, end: 9 });
    expect(parseRange('bytes=10-', 10)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=-0', 10)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=0-', 0)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=99999999999999999999-', 10)).toEqual({ kind: 'full' });
    expect(parseRange('bytes=5-2', 10)).toEqual({ kind: 'full' });
  });

  it('compares validators', () => {
    const modified = new Date('2025-01-01T10:00:00.750Z');
    expect(notModified({}, '"a"', modified)).toBe(false);
    expect(notModified({ ifNoneMatch: 'W/"a"' }, '"a"', modified)).toBe(true);
    expect(notModified({ ifModifiedSince: 'Wed, 01 Jan 2025 10:00:00 GMT' }, '"a"', modified)).toBe(true);
    expect(notModified({ ifModifiedSince: 'Wed, 01 Jan 2025 09:59:59 GMT' }, '"a"', modified)).toBe(false);
    expect(rangeStillValid(undefined, '"a"', modified)).toBe(true);
    expect(rangeStillValid('"a"', '"a"', modified)).toBe(true);
    expect(rangeStillValid('Wed, 01 Jan 2025 10:00:00 GMT', '"a"', modified)).toBe(true);
    expect(rangeStillValid('Wed, 01 Jan 2025 10:00:01 GMT', '"a"', modified)).toBe(false);
  });
});
