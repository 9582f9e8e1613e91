import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { files } from '../../db/schema/files.js';
import { encodeWav } from '../../platform/media/wav.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { initUpload, pathOf, samplePng, uploadFile } from '../../../test/helpers/files.js';

let t: TestApp;
let owner: { accessToken: string; user: { id: string } };
let other: { accessToken: string; user: { id: string } };
beforeAll(async () => {
  t = await createTestApp();
});
// Fresh users for every test: some tests move the clock past the access tokens' 15-minute lifetime.
beforeEach(async () => {
  owner = await signUp(t.app);
  other = await signUp(t.app);
});
afterAll(async () => t?.close());

const init = (payload: unknown, token = owner.accessToken) =>
  t.app.inject({ method: 'POST', url: '/v1/files/init', headers: bearer(token), payload: payload as object });
const put = (uploadUrl: string, payload: Buffer | Readable | string, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'PUT', url: pathOf(uploadUrl), headers, payload });
const rowOf = async (id: string) => (await t.platform.db.select().from(files).where(eq(files.id, id)))[0]!;
/** The test app listening on a real port (started once, on first use). */
const listeningPort = async (): Promise<number> => {
  if (!t.app.server.listening) await t.app.listen({ port: 0, host: '127.0.0.1' });
  return (t.app.server.address() as AddressInfo).port;
};
const keyOf = (url: string) => new URL(url).pathname.replace('/v1/files/raw/', '');

describe('POST /v1/files/init', () => {
  it('hands out a single-use upload URL that expires in 15 minutes, and records a pending file', async () => {
    const png = samplePng();
    const response = await init({ kind: 'AVATAR', contentType: 'image/png', size: png.length, filename: 'me.png' });
    expect(response.statusCode).toBe(201);
    const body = json(response);
    expect(body).toEqual({
      fileId: expect.any(String),
      uploadUrl: expect.stringMatching(new RegExp(`^${t.platform.config.publicBaseUrl}/v1/files/upload/${body.fileId}\\?token=[A-Za-z0-9_-]{43}$`)),
      method: 'PUT',
      headers: { 'Content-Type': 'image/png' },
      expiresAt: new Date(t.clock.now().getTime() + 15 * 60_000).toISOString(),
      url: expect.stringMatching(new RegExp(`^${t.platform.config.publicBaseUrl}/v1/files/raw/avatar/${body.fileId}-[0-9a-f]{32}\\.png$`)),
    });
    const row = await rowOf(body.fileId);
    expect(row).toMatchObject({ ownerId: owner.user.id, kind: 'AVATAR', status: 'PENDING', size: png.length, filename: 'me.png' });
    // Only a hash of the token is stored.
    expect(row.uploadTokenHash).not.toContain(new URL(body.uploadUrl).searchParams.get('token'));
  });

  it('stores alias content types under their canonical name', async () => {
    const body = json(await init({ kind: 'AUDIO', contentType: 'audio/x-wav', size: 100 }));
    expect(body.headers).toEqual({ 'Content-Type': 'audio/wav' });
    expect(body.url).toMatch(/\.wav$/);
  });

  it.each([
    [{ kind: 'AVATAR', contentType: 'image/png', size: 5 * 1024 * 1024 + 1 }, 'at most 5 MB'],
    [{ kind: 'INIT_IMAGE', contentType: 'image/png', size: 15 * 1024 * 1024 + 1 }, 'at most 15 MB'],
    [{ kind: 'AVATAR', contentType: 'video/mp4', size: 100 }, 'must be one of image/png, image/jpeg, image/webp, image/gif'],
    [{ kind: 'INIT_IMAGE', contentType: 'image/gif', size: 100 }, 'must be one of image/png, image/jpeg, image/webp'],
    [{ kind: 'VIDEO', contentType: 'image/png', size: 100 }, 'video/mp4'],
    [{ kind: 'AUDIO', contentType: 'text/html', size: 100 }, 'audio/wav'],
    [{ kind: 'IMAGE', contentType: 'image/svg+xml', size: 100 }, 'image/png'],
  ])('enforces the per-kind limits: %j', async (payload, message) => {
    const before = await t.platform.db.$count(files);
    const response = await init(payload);
    expect(response.statusCode).toBe(400);
    expect(json(response).error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining(message) });
    expect(await t.platform.db.$count(files)).toBe(before);
  });

  it.each([
    ['a missing kind', { contentType: 'image/png', size: 10 }, 'kind'],
    ['an unknown kind', { kind: 'DOCUMENT', contentType: 'image/png', size: 10 }, 'kind'],
    ['a missing content type', { kind: 'IMAGE', size: 10 }, 'contentType'],
    ['a malformed content type', { kind: 'IMAGE', contentType: 'png', size: 10 }, 'contentType'],
    ['a missing size', { kind: 'IMAGE', contentType: 'image/png' }, 'size'],
    ['a size of the wrong type', { kind: 'IMAGE', contentType: 'image/png', size: '10' }, 'size'],
    ['a zero size', { kind: 'IMAGE', contentType: 'image/png', size: 0 }, 'size'],
    ['a fractional size', { kind: 'IMAGE', contentType: 'image/png', size: 1.5 }, 'size'],
    ['a size over every limit', { kind: 'VIDEO', contentType: 'video/mp4', size: 201 * 1024 * 1024 }, 'size'],
    ['an over-long filename', { kind: 'IMAGE', contentType: 'image/png', size: 10, filename: 'f'.repeat(256) }, 'filename'],
    ['a filename with a path', { kind: 'IMAGE', contentType: 'image/png', size: 10, filename: '../../etc/passwd' }, 'filename'],
    ['an unknown field', { kind: 'IMAGE', contentType: 'image/png', size: 10, ownerId: 'someone' }, 'ownerId'],
  ])('refuses %s with 400 naming the field, creating nothing', async (_label, payload, field) => {
    const before = await t.platform.db.$count(files);
    const response = await init(payload);
    expect(response.statusCode).toBe(400);
    const { error } = json(response);
    expect(error.code).toBe('BAD_REQUEST');
    expect(JSON.stringify(error.details)).toContain(field);
    expect(await t.platform.db.$count(files)).toBe(before);
  });

  it('needs a signed-in user', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/v1/files/init', payload: { kind: 'IMAGE', contentType: 'image/png', size: 10 } });
    expect(response.statusCode).toBe(401);
    expect(json(response).error.code).toBe('UNAUTHORIZED');
  });
});

describe('PUT to the upload URL', () => {
  it('stores the bytes, marks the file ready, and serves them at the returned url', async () => {
    const png = samplePng(40, 2);
    const started = await initUpload(t.app, owner.accessToken, { kind: 'IMAGE', contentType: 'image/png', size: png.length });
    // No Authorization header: the token in the URL is the credential.
    const response = await put(started.uploadUrl, png, { 'content-type': 'image/png' });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({
      id: started.fileId,
      kind: 'IMAGE',
      status: 'READY',
      contentType: 'image/png',
      size: png.length,
      filename: null,
      url: started.url,
      createdAt: expect.any(String),
      readyAt: t.clock.now().toISOString(),
    });
    const served = await t.app.inject({ method: 'GET', url: pathOf(started.url) });
    expect(served.statusCode).toBe(200);
    expect(served.rawPayload.equals(png)).toBe(true);
  });

  it('accepts WAV audio and an MP4-family upload of the declared type', async () => {
    const wav = encodeWav(new Int16Array(800), 8000);
    const { file } = await uploadFile(t.app, owner.accessToken, wav, 'audio/wav', 'AUDIO');
    expect(file).toMatchObject({ status: 'READY', contentType: 'audio/wav', size: wav.length });
    const mp4 = Buffer.concat([Buffer.from('\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2', 'latin1'), Buffer.alloc(100)]);
    const video = await uploadFile(t.app, owner.accessToken, mp4, 'video/mp4', 'VIDEO');
    expect(video.file).toMatchObject({ status: 'READY', contentType: 'video/mp4' });
  });

  it('is single-use: a second PUT is refused with 409', async () => {
    const png = samplePng();
    const { uploadUrl } = await uploadFile(t.app, owner.accessToken, png);
    const again = await put(uploadUrl, png, { 'content-type': 'image/png' });
    expect(again.statusCode).toBe(409);
    expect(json(again).error).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('already been used') });
  });

  it('expires after 15 minutes', async () => {
    const png = samplePng();
    const started = await initUpload(t.app, owner.accessToken, { kind: 'IMAGE', contentType: 'image/png', size: png.length });
    t.clock.advance(15 * 60_000);
    const response = await put(started.uploadUrl, png, { 'content-type': 'image/png' });
    expect(response.statusCode).toBe(403);
    expect(json(response).error).toMatchObject({ code: 'FORBIDDEN', message: expect.stringContaining('expired') });
    expect((await rowOf(started.fileId)).status).toBe('PENDING');
  });

  it('still works one second before it expires', async () => {
    const png = samplePng();
    const started = await initUpload(t.app, owner.accessToken, { kind: 'IMAGE', contentType: 'image/png', size: png.length });
    t.clock.advance(15 * 60_000 - 1000);
    expect((await put(started.uploadUrl, png, { 'content-type': 'image/png' })).statusCode).toBe(200);
  });

  it('refuses a wrong or missing token and an unknown file with 403', async () => {
    const png = samplePng();
    const started = await initUpload(t.app, owner.accessToken, { kind: 'IMAGE', contentType: 'image/png', size: png.length });
    const wrong = started.uploadUrl.replace(/token=.*/, `token=${'A'.repeat(43)}`);
    expect((await put(wrong, png, { 'content-type': 'image/png' })).statusCode).toBe(403);
    const unknown = started.uploadUrl.replace(started.fileId, '01900000-0000-7000-8000-000000000000');
    expect((await put(unknown, png, { 'content-type': 'image/png' })).statusCode).toBe(403);
    const missing = await put(started.uploadUrl.replace(/\?.*/, ''), png, { 'content-type': 'image/png' });
    expect(missing.statusCode).toBe(400);
    expect(JSON.stringify(json(missing).error.details)).toContain('token');
    const extra = await put(`${started.uploadUrl}&admin=1`, png, { 'content-type': 'image/png' });
    expect(extra.statusCode).toBe(400);
    expect((await rowOf(started.fileId)).status).toBe('PENDING');
  });

  it('checks the Content-Type header and Content-Length against what was declared', async () => {
    const png = samplePng();
    const started = await initUpload(t.app, owner.accessToken, { kind: 'IMAGE', contentType: 'image/png', size: png.length });
    const wrongType = await put(started.uploadUrl, png, { 'content-type': 'image/jpeg' });
    expect(wrongType.statusCode).toBe(400);
    expect(json(wrongType).error.message).toContain('Content-Type: image/png');
    const noType = await put(started.uploadUrl, png);
    expect(noType.statusCode).toBe(400);
    const short = await put(started.uploadUrl, png.subarray(0, 20), { 'content-type': 'image/png' });
    expect(short.statusCode).toBe(400);
    expect(json(short).error.message).toContain(`${png.length} were declared`);
    // Refusals leave the URL usable until it expires.
    expect((await rowOf(started.fileId)).status).toBe('PENDING');
    expect((await put(started.uploadUrl, png, { 'content-type': 'image/png' })).statusCode).toBe(200);
  });

  it('checks the real bytes: a file that is not what it claims is refused and nothing is kept', async () => {
    const jpegBytes = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(200, 7)]);
    const started = await initUpload(t.app, owner.accessToken, { kind: 'IMAGE', contentType: 'image/png', size: jpegBytes.length });
    const response = await put(started.uploadUrl, jpegBytes, { 'content-type': 'image/png' });
    expect(response.statusCode).toBe(400);
    expect(json(response).error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('JPEG, not the declared image/png') });
    const html = Buffer.from('<html><script>alert(document.cookie)</script></html>'.padEnd(200, ' '));
    const second = await initUpload(t.app, owner.accessToken, { kind: 'AVATAR', contentType: 'image/png', size: html.length });
    const refused = await put(second.uploadUrl, html, { 'content-type': 'image/png' });
    expect(refused.statusCode).toBe(400);
    expect(json(refused).error.message).toContain('not image/png');
    for (const { url, fileId } of [started, second]) {
      expect(await t.platform.storage.stat(keyOf(url))).toBeNull();
      expect((await rowOf(fileId)).status).toBe('PENDING');
      expect((await t.app.inject({ method: 'GET', url: pathOf(url) })).statusCode).toBe(404);
    }
  });

  it('enforces the declared size while streaming a body of unknown length', async () => {
    const png = samplePng();
    const started = await initUpload(t.app, owner.accessToken, { kind: 'IMAGE', contentType: 'image/png', size: png.length });
    const tooLong = await put(started.uploadUrl, Readable.from([png, Buffer.alloc(100)]), { 'content-type': 'image/png' });
    expect(tooLong.statusCode).toBe(413);
    expect(json(tooLong).error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', message: expect.stringContaining('larger than') });
    const tooShort = await put(started.uploadUrl, Readable.from([png.subarray(0, 100)]), { 'content-type': 'image/png' });
    expect(tooShort.statusCode).toBe(400);
    expect(await t.platform.storage.stat(keyOf(started.url))).toBeNull();
    const exact = await put(started.uploadUrl, Readable.from([png.subarray(0, 10), png.subarray(10)]), { 'content-type': 'image/png' });
    expect(exact.statusCode).toBe(200);
  });

  it('lets exactly one of two concurrent uploads to the same URL win', async () => {
    const png = samplePng(64, 9);
    const started = await initUpload(t.app, owner.accessToken, { kind: 'IMAGE', contentType: 'image/png', size: png.length });
    const results = await Promise.all([0, 1, 2].map(() => put(started.uploadUrl, png, { 'content-type': 'image/png' })));
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409, 409]);
    expect((await rowOf(started.fileId)).status).toBe('READY');
  });

  it('answers a refused oversized upload over real HTTP with the error, not a reset connection', async () => {
    const port = await listeningPort();
    const started = await initUpload(t.app, owner.accessToken, { kind: 'IMAGE', contentType: 'image/png', size: 1000 });
    const png = samplePng(256, 3);
    expect(png.length).toBeGreaterThan(1000);
    const answer = await new Promise<{ status: number; body: string; connection: string | undefined }>((resolve, reject) => {
      const request = http.request(
        { host: '127.0.0.1', port, method: 'PUT', path: pathOf(started.uploadUrl), headers: { 'content-type': 'image/png', 'transfer-encoding': 'chunked' } },
        (response) => {
          let body = '';
          response.on('data', (chunk) => (body += chunk));
          response.on('end', () => resolve({ status: response.statusCode!, body, connection: response.headers.connection }));
        },
      );
      request.on('error', reject);
      for (let i = 0; i < png.length; i += 512) request.write(png.subarray(i, i + 512));
      request.end();
    });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body).error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(answer.connection).toBe('close');
  });
});

describe('uploads over real HTTP, as a browser or curl sends them', () => {
  it.each([
    ['a PNG sent as image/png', 'IMAGE', 'image/png', 'image/png', () => samplePng(32, 5)],
    ['a PNG sent as application/octet-stream', 'IMAGE', 'image/png', 'application/octet-stream', () => samplePng(48, 6)],
    ['a WAV sent as audio/wav', 'AUDIO', 'audio/wav', 'audio/wav', () => encodeWav(new Int16Array(800).fill(4000), 8000)],
  ] as const)('stores %s and serves the same bytes back', async (_name, kind, declared, sentAs, bytesOf) => {
    const base = `http://127.0.0.1:${await listeningPort()}`;
    const bytes = Buffer.from(bytesOf());
    const started = await initUpload(t.app, owner.accessToken, { kind, contentType: declared, size: bytes.length });
    const uploaded = await fetch(`${base}${pathOf(started.uploadUrl)}`, { method: 'PUT', headers: { 'content-type': sentAs }, body: bytes });
    expect(uploaded.status, await uploaded.clone().text()).toBe(200);
    expect(await uploaded.json()).toMatchObject({ status: 'READY', contentType: declared, size: bytes.length });
    const served = await fetch(`${base}${pathOf(started.url)}`);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toContain(declared);
    expect(Buffer.from(await served.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('refuses another type than declared over real HTTP, naming both types it accepts', async () => {
    const base = `http://127.0.0.1:${await listeningPort()}`;
    const png = samplePng(16, 2);
    const started = await initUpload(t.app, owner.accessToken, { kind: 'IMAGE', contentType: 'image/png', size: png.length });
    const refused = await fetch(`${base}${pathOf(started.uploadUrl)}`, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: png });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/image\/png.*application\/octet-stream/);
    expect((await rowOf(started.fileId)).status).toBe('PENDING');
  });
});

describe('GET /v1/files/:id', () => {
  it('shows the owner their file and hides it from everyone else', async () => {
    const { fileId } = await uploadFile(t.app, owner.accessToken, samplePng(), 'image/png', 'AVATAR', 'portrait.png');
    const mine = await t.app.inject({ method: 'GET', url: `/v1/files/${fileId}`, headers: bearer(owner.accessToken) });
    expect(mine.statusCode).toBe(200);
    expect(json(mine)).toMatchObject({ id: fileId, kind: 'AVATAR', status: 'READY', filename: 'portrait.png' });
    const theirs = await t.app.inject({ method: 'GET', url: `/v1/files/${fileId}`, headers: bearer(other.accessToken) });
    expect(theirs.statusCode).toBe(404);
    expect(json(theirs).error.code).toBe('NOT_FOUND');
    expect((await t.app.inject({ method: 'GET', url: `/v1/files/${fileId}` })).statusCode).toBe(401);
    expect((await t.app.inject({ method: 'GET', url: '/v1/files/not-a-uuid', headers: bearer(owner.accessToken) })).statusCode).toBe(404);
  });
});
