import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { files } from '../../db/schema/files.js';
import { AppError } from '../../platform/http/errors.js';
import { createFilesService } from './service.js';
import { encodeWav } from '../../platform/media/wav.js';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { pathOf, samplePng, uploadFile } from '../../../test/helpers/files.js';

let t: TestApp;
let open: TestApp; // ALLOW_PRIVATE_NETWORK=true, so remote sources can be served from this machine
let userId: string;
let server: http.Server;
let origin: string;
const png = samplePng(32, 4);

beforeAll(async () => {
  [t, open] = await Promise.all([createTestApp(), createTestApp({ env: { ALLOW_PRIVATE_NETWORK: 'true' } })]);
  userId = (await signUp(t.app)).user.id;
  server = http.createServer((req, res) => {
    if (req.url === '/cat.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end(png);
    if (req.url === '/mislabelled') return void res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(png);
    if (req.url === '/page.html') return void res.writeHead(200, { 'content-type': 'text/html' }).end('<html></html>');
    if (req.url === '/blocked') return void res.writeHead(403).end();
    if (req.url === '/slow') return; // never answers
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server?.closeAllConnections();
  server?.close();
  await Promise.all([t?.close(), open?.close()]);
});

/** The AppError a promise rejects with. */
async function appError(promise: Promise<unknown>): Promise<AppError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

describe('files service: saveBytes', () => {
  it('stores bytes as a ready file, serves them, and records the source URL without credentials', async () => {
    const saved = await t.services.files.saveBytes({
      ownerId: userId,
      kind: 'IMAGE',
      contentType: 'image/png',
      body: png,
      sourceUrl: 'https://cdn.provider.example/out/1.png?X-Amz-Signature=abc&X-Amz-Credential=key&X-Amz-Security-Token=tok&size=large',
    });
    expect(saved).toEqual({
      id: expect.any(String),
      key: expect.stringMatching(/^image\/[0-9a-f-]{36}-[0-9a-f]{32}\.png$/),
      url: `${t.platform.config.publicBaseUrl}/v1/files/raw/${saved.key}`,
      contentType: 'image/png',
      size: png.length,
    });
    const [row] = await t.platform.db.select().from(files).where(eq(files.id, saved.id));
    expect(row).toMatchObject({ ownerId: userId, status: 'READY', sourceUrl: 'https://cdn.provider.example/out/1.png?size=large', readyAt: t.clock.now() });
    const served = await t.app.inject({ method: 'GET', url: pathOf(saved.url) });
    expect(served.statusCode).toBe(200);
    expect(served.rawPayload.equals(png)).toBe(true);
  });

  it('takes the content type from the bytes when a provider mislabels them', async () => {
    const saved = await t.services.files.saveBytes({ ownerId: userId, kind: 'IMAGE', contentType: 'image/jpeg', body: png });
    expect(saved.contentType).toBe('image/png');
    expect(saved.key).toMatch(/\.png$/);
    const wav = await t.services.files.saveBytes({ ownerId: userId, kind: 'AUDIO', contentType: 'audio/x-wav', body: encodeWav(new Int16Array(10), 8000) });
    expect(wav.contentType).toBe('audio/wav');
    const served = await t.app.inject({ method: 'GET', url: pathOf(wav.url) });
    expect(served.headers['content-type']).toBe('audio/wav');
  });

  it('gives every saved file its own unguessable key, even for the same bytes', async () => {
    const a = await t.services.files.saveBytes({ ownerId: userId, kind: 'IMAGE', contentType: 'image/png', body: png });
    const b = await t.services.files.saveBytes({ ownerId: userId, kind: 'IMAGE', contentType: 'image/png', body: png });
    expect(a.key).not.toBe(b.key);
  });
});

describe('files service: resolveRawUrl', () => {
  it('recognises our absolute and relative raw URLs, with or without a query string', async () => {
    const saved = await t.services.files.saveBytes({ ownerId: userId, kind: 'INIT_IMAGE', contentType: 'image/png', body: png });
    for (const url of [saved.url, `/v1/files/raw/${saved.key}`, `${saved.url}?download=1`, `${saved.url}#x`]) {
      const resolved = await t.services.files.resolveRawUrl(url);
      expect(resolved?.bytes.equals(png), url).toBe(true);
      expect(resolved?.contentType).toBe('image/png');
      expect(resolved?.file.id).toBe(saved.id);
      expect(t.services.files.isRawUrl(url)).toBe(true);
    }
  });

  it('returns null for URLs that are not ours', async () => {
    for (const url of [
      'https://example.com/v1/files/raw/image/x.png',
      'https://example.com/cat.png',
      'data:image/png;base64,AAAA',
      '/v1/files/other',
      'nonsense',
    ]) {
      expect(await t.services.files.resolveRawUrl(url)).toBeNull();
      expect(t.services.files.isRawUrl(url)).toBe(false);
    }
  });

  it('refuses a URL of ours that names no file, a bad key, or a file over the limit', async () => {
    expect((await appError(t.services.files.resolveRawUrl('/v1/files/raw/image/missing.png'))).message).toContain('does not exist');
    expect((await appError(t.services.files.resolveRawUrl('/v1/files/raw/../secret'))).statusCode).toBe(400);
    const saved = await t.services.files.saveBytes({ ownerId: userId, kind: 'IMAGE', contentType: 'image/png', body: png });
    expect((await appError(t.services.files.resolveRawUrl(saved.url, { maxBytes: 10 }))).message).toContain('at most 10 bytes');
  });

  it('understands a PUBLIC_BASE_URL with a path prefix', async () => {
    const prefixed = createFilesService({
      db: t.platform.db,
      clock: t.clock,
      storage: t.platform.storage,
      fetcher: t.platform.fetcher,
      publicBaseUrl: 'https://media.example.com/storefront',
    });
    const saved = await prefixed.saveBytes({ ownerId: userId, kind: 'IMAGE', contentType: 'image/png', body: png });
    expect(saved.url).toBe(`https://media.example.com/storefront/v1/files/raw/${saved.key}`);
    expect((await prefixed.resolveRawUrl(saved.url))?.file.id).toBe(saved.id);
    expect((await prefixed.resolveRawUrl(`/storefront/v1/files/raw/${saved.key}`))?.file.id).toBe(saved.id);
    expect((await prefixed.resolveRawUrl(`/v1/files/raw/${saved.key}`))?.file.id).toBe(saved.id);
    expect(await prefixed.resolveRawUrl(`https://media.example.com/v1/files/raw/${saved.key}`)).toBeNull();
  });

  it('resolves an uploaded file the same way', async () => {
    const { accessToken } = await signUp(t.app);
    const { url } = await uploadFile(t.app, accessToken, png, 'image/png', 'INIT_IMAGE');
    expect((await t.services.files.resolveRawUrl(url))?.bytes.equals(png)).toBe(true);
  });
});

describe('files service: readSource', () => {
  it('reads a data: URL', async () => {
    const source = await t.services.files.readSource(`data:image/png;base64,${png.toString('base64')}`, { accept: ['image'] });
    expect(source).toMatchObject({ contentType: 'image/png', format: 'png', origin: 'data' });
    expect(source.bytes.equals(png)).toBe(true);
  });

  it('refuses a malformed, empty, oversized or wrong-kind data: URL with 400', async () => {
    expect((await appError(t.services.files.readSource('data:image/png;base64'))).message).toContain('malformed');
    expect((await appError(t.services.files.readSource('data:image/png;base64,@@@@'))).message).toContain('base64');
    expect((await appError(t.services.files.readSource('data:image/png;base64,'))).message).toContain('empty');
    expect((await appError(t.services.files.readSource(`data:image/png;base64,${png.toString('base64')}`, { maxBytes: 100 }))).message).toContain(
      'more than 100 bytes',
    );
    const html = await appError(t.services.files.readSource('data:text/html,<script>alert(1)</script>', { accept: ['image'], what: 'the image' }));
    expect(html.message).toBe('The image is not a supported image file.');
  });

  it('reads one of our raw URLs', async () => {
    const saved = await t.services.files.saveBytes({ ownerId: userId, kind: 'IMAGE', contentType: 'image/png', body: png });
    expect(await t.services.files.readSource(saved.url, { accept: ['image'] })).toMatchObject({ origin: 'file', contentType: 'image/png' });
  });

  it('refuses other schemes', async () => {
    for (const url of ['ftp://example.com/a.png', 'file:///etc/passwd', 'javascript:alert(1)']) {
      expect((await appError(t.services.files.readSource(url, { what: 'the image' }))).message).toContain('must be a data: URL, an https URL');
    }
  });

  it('refuses loopback and private addresses (SSRF) with a 400 that says why', async () => {
    for (const url of [
      `${origin}/cat.png`,
      `https://127.0.0.1:${new URL(origin).port}/cat.png`,
      'https://10.0.0.1/cat.png',
      'https://169.254.169.254/latest/meta-data/',
    ]) {
      const error = await appError(t.services.files.readSource(url, { what: 'the image' }));
      expect(error.statusCode).toBe(400);
      expect(error.code).toBe('BAD_REQUEST');
      expect(error.message).toMatch(/^The image could not be read: /);
      expect(error.message).toMatch(/not allowed/);
    }
  });

  it('fetches a remote file through the safe fetcher when private networking is allowed', async () => {
    const source = await open.services.files.readSource(`${origin}/cat.png`, { accept: ['image'] });
    expect(source).toMatchObject({ origin: 'remote', contentType: 'image/png' });
    expect(source.bytes.equals(png)).toBe(true);
    // The bytes decide the type, not the remote's label.
    expect((await open.services.files.readSource(`${origin}/mislabelled`, { accept: ['image'] })).contentType).toBe('image/png');
  });

  it('names the fetch status of a remote file that cannot be read: 404, 403, too large, timeout, wrong type', async () => {
    const files = open.services.files;
    const missing = await appError(files.readSource(`${origin}/nothing.png`, { what: 'the image' }));
    expect(missing.message).toBe('The image could not be read (HTTP 404): The remote server answered 404 Not Found.');
    expect(missing.details).toMatchObject({ fetch: { reason: 'HTTP_STATUS', status: 404 } });
    expect((await appError(files.readSource(`${origin}/blocked`))).message).toContain('HTTP 403');
    expect((await appError(files.readSource(`${origin}/cat.png`, { maxBytes: 64 }))).message).toContain('too large');
    expect((await appError(files.readSource(`${origin}/slow`, { timeoutMs: 200 }))).message).toContain('did not answer in time');
    expect((await appError(files.readSource(`${origin}/page.html`, { accept: ['image'], what: 'the image' }))).message).toBe(
      'The image is not a supported image file.',
    );
  });
});
