import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { solidPng } from '../../../../../test/helpers/fake-media-upstreams.js';
import { createSafeFetcher } from '../../../../platform/net/safe-fetch.js';
import { UpstreamError } from '../types.js';
import { pcm16ToWav, wavDurationSeconds } from './audio.js';
import { fetchMediaOutput, mediaTypeOf } from './download.js';

let server: Server;
let origin: string;
const png = solidPng(16, 16);
const fetcher = createSafeFetcher({ allowPrivateNetwork: true });

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = req.url ?? '/';
    if (path.startsWith('/image')) return void res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(png);
    if (path.startsWith('/labelled')) return void res.writeHead(200, { 'content-type': 'audio/mpeg' }).end(Buffer.from('no magic here'));
    if (path.startsWith('/empty')) return void res.writeHead(200, { 'content-type': 'video/mp4' }).end();
    if (path.startsWith('/big')) return void res.writeHead(200, { 'content-type': 'video/mp4' }).end(Buffer.alloc(64 * 1024));
    if (path.startsWith('/slow')) return void setTimeout(() => res.writeHead(200).end(png), 2000);
    res.writeHead(404, { 'content-type': 'text/plain' }).end('gone');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function upstreamError(promise: Promise<unknown>): Promise<UpstreamError> {
  const error = await promise.then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(UpstreamError);
  return error as UpstreamError;
}

describe('fetchMediaOutput', () => {
  it('passes bytes through, typed by what they really are', async () => {
    expect(await fetchMediaOutput(fetcher, { kind: 'bytes', bytes: png, mimeType: 'image/jpeg' }, { fallbackMimeType: 'image/png' })).toEqual({
      bytes: png,
      mimeType: 'image/png',
    });
  });

  it('downloads a URL result and sniffs its type over a vague content type', async () => {
    const file = await fetchMediaOutput(fetcher, { kind: 'url', url: `${origin}/image?sig=SECRET`, mimeType: null }, { fallbackMimeType: 'image/webp' });
    expect(file.bytes.equals(png)).toBe(true);
    expect(file.mimeType).toBe('image/png');
    const labelled = await fetchMediaOutput(fetcher, { kind: 'url', url: `${origin}/labelled`, mimeType: null }, { fallbackMimeType: 'audio/wav' });
    expect(labelled.mimeType).toBe('audio/mpeg');
  });

  it.each([
    ['a 404', '/missing', 'server', 'download_http_status', 404],
    ['an empty file', '/empty', 'server', 'empty_result', 200],
  ] as const)('reports %s as a provider failure', async (_label, path, kind, code, status) => {
    const error = await upstreamError(
      fetchMediaOutput(fetcher, { kind: 'url', url: `${origin}${path}`, mimeType: 'video/mp4' }, { fallbackMimeType: 'video/mp4' }),
    );
    expect(error).toMatchObject({ kind, code, status });
  });

  it('caps the size and the time', async () => {
    const big = await upstreamError(
      fetchMediaOutput(fetcher, { kind: 'url', url: `${origin}/big`, mimeType: null }, { fallbackMimeType: 'video/mp4', maxBytes: 1024 }),
    );
    expect(big).toMatchObject({ kind: 'server', code: 'download_too_large' });
    const slow = await upstreamError(
      fetchMediaOutput(fetcher, { kind: 'url', url: `${origin}/slow`, mimeType: null }, { fallbackMimeType: 'image/png', timeoutMs: 200 }),
    );
    expect(slow).toMatchObject({ kind: 'timeout', code: 'download_timeout' });
  });

  it('refuses a result URL pointing into a private network unless that is allowed', async () => {
    const strict = createSafeFetcher({ allowPrivateNetwork: false });
    const error = await upstreamError(fetchMediaOutput(strict, { kind: 'url', url: `${origin}/image`, mimeType: null }, { fallbackMimeType: 'image/png' }));
    expect(error.kind).toBe('server');
    expect(error.code).toMatch(/^download_(protocol_not_allowed|address_not_allowed)$/);
  });
});

describe('media helpers', () => {
  it('mediaTypeOf prefers the bytes, then a media content type, then the fallback', () => {
    expect(mediaTypeOf(png, 'text/html', 'image/webp')).toBe('image/png');
    expect(mediaTypeOf(Buffer.from('??'), 'video/webm; codecs=vp9', 'video/mp4')).toBe('video/webm');
    expect(mediaTypeOf(Buffer.from('??'), 'text/html', 'video/mp4')).toBe('video/mp4');
    expect(mediaTypeOf(Buffer.from('??'), null, 'audio/wav')).toBe('audio/wav');
  });

  it('wraps PCM into WAV and measures WAV files, streamed headers included', () => {
    const wav = pcm16ToWav(Buffer.alloc(48_001), 24_000);
    expect(wav.length).toBe(44 + 48_000);
    expect(wavDurationSeconds(wav)).toBe(1);
    wav.writeUInt32LE(0xffffffff, 40);
    expect(wavDurationSeconds(wav)).toBe(1);
    expect(wavDurationSeconds(png)).toBeNull();
    expect(wavDurationSeconds(Buffer.from('RIFF\0\0\0\0WAVEdata\0\0\0\0'))).toBeNull();
  });
});
