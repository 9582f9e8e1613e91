import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BuiltApp } from '../../src/app.js';
import { pathOf, samplePng, uploadFile } from '../helpers/files.js';
import { sharedDatabase, type SharedDatabase } from '../helpers/shared-database.js';
import { bearer, json, signUp } from '../helpers/test-app.js';

/**
 * Two instances of a scaled deployment on one database, each with a DATA_DIR of its own (as two hosts have): a file
 * written by one is served by the other, whole and by range, because the bytes live in the shared database.
 * The storage is named explicitly so the embedded pass proves the same thing on the in-process database.
 */
let shared: SharedDatabase;
let a: BuiltApp;
let b: BuiltApp;
const dirs: string[] = [];

beforeAll(async () => {
  shared = await sharedDatabase('shared-files');
  const instance = async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'storefront-instance-'));
    dirs.push(dir);
    return shared.instance({ env: { DATA_DIR: dir, FILE_STORAGE: 'database' } });
  };
  a = await instance();
  b = await instance();
});
afterAll(async () => {
  await a?.app.close();
  await b?.app.close();
  await shared?.close();
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('files across instances', () => {
  it('stores in the database when so configured', () => {
    expect(a.platform.storage.kind).toBe('database');
    expect(b.platform.storage.kind).toBe('database');
  });

  it('serves an upload made on one instance from the other, whole, by range and by HEAD', async () => {
    const { accessToken } = await signUp(a.app);
    const png = samplePng(200, 3);
    const { file } = await uploadFile(a.app, accessToken, png);
    const whole = await b.app.inject({ method: 'GET', url: pathOf(file.url) });
    expect(whole.statusCode).toBe(200);
    expect(whole.rawPayload.equals(png)).toBe(true);
    expect(whole.headers['content-type']).toBe('image/png');
    const part = await b.app.inject({ method: 'GET', url: pathOf(file.url), headers: { range: 'bytes=100-1099' } });
    expect(part.statusCode).toBe(206);
    expect(part.headers['content-range']).toBe(`bytes 100-1099/${png.length}`);
    expect(part.rawPayload.equals(png.subarray(100, 1100))).toBe(true);
    const suffix = await b.app.inject({ method: 'GET', url: pathOf(file.url), headers: { range: 'bytes=-10' } });
    expect(suffix.rawPayload.equals(png.subarray(png.length - 10))).toBe(true);
    const head = await b.app.inject({ method: 'HEAD', url: pathOf(file.url) });
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-length']).toBe(String(png.length));
  });

  it('serves generated media (image and audio) made on one instance from the other', async () => {
    const { accessToken } = await signUp(a.app);
    const image = await a.app.inject({
      method: 'POST',
      url: '/v1/ai/image',
      headers: bearer(accessToken),
      payload: { model: 'local/image', prompt: 'a lighthouse', width: 64, height: 64 },
    });
    expect(image.statusCode).toBe(200);
    const audio = await a.app.inject({
      method: 'POST',
      url: '/v1/ai/audio',
      headers: bearer(accessToken),
      payload: { model: 'local/speech', text: 'Shared between instances.' },
    });
    expect(audio.statusCode).toBe(200);
    const urls = [...JSON.stringify([json(image), json(audio)]).matchAll(/https?:\/\/[^"]+\/v1\/files\/raw\/[^"]+/g)].map((m) => m[0]);
    expect(urls.length).toBeGreaterThanOrEqual(2);
    for (const url of urls) {
      const fromA = await a.app.inject({ method: 'GET', url: pathOf(url) });
      const fromB = await b.app.inject({ method: 'GET', url: pathOf(url) });
      expect(fromB.statusCode, url).toBe(200);
      expect(fromB.rawPayload.equals(fromA.rawPayload)).toBe(true);
      expect(fromB.rawPayload.length).toBeGreaterThan(0);
    }
  });

  it('answers 404 in the envelope, never 500, for a listed file whose bytes are gone (regression)', async () => {
    const { accessToken } = await signUp(a.app);
    const { file } = await uploadFile(a.app, accessToken, samplePng(48, 9));
    await a.platform.storage.delete(decodeURIComponent(new URL(file.url).pathname.replace('/v1/files/raw/', '')));
    for (const headers of [{}, { range: 'bytes=0-9' }]) {
      const response = await b.app.inject({ method: 'GET', url: pathOf(file.url), headers });
      expect(response.statusCode).toBe(404);
      expect(json(response)).toEqual({ error: { code: 'NOT_FOUND', message: expect.stringMatching(/no longer stored/), details: null } });
    }
  });
});
