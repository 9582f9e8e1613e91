import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3Server, type TestS3Server } from '../../../test/helpers/s3-server.js';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { pathOf, samplePng, uploadFile } from '../../../test/helpers/files.js';

let s3: TestS3Server;
let t: TestApp;
let client: S3Client;
beforeAll(async () => {
  s3 = await startS3Server('storefront-media');
  t = await createTestApp({ env: s3.env });
  client = new S3Client({
    region: 'us-east-1',
    endpoint: s3.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  });
});
afterAll(async () => {
  client?.destroy();
  await t?.close();
  await s3?.close();
});

const keyOf = (url: string) => new URL(url).pathname.replace('/v1/files/raw/', '');

describe('files on S3-compatible storage (S3_BUCKET set)', () => {
  it('uploads into the bucket and serves the object whole and by range', async () => {
    expect(t.platform.storage.kind).toBe('s3');
    const { accessToken } = await signUp(t.app);
    const png = samplePng(80, 6);
    const { url } = await uploadFile(t.app, accessToken, png);
    const head = await client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: keyOf(url) }));
    expect(head).toMatchObject({ ContentLength: png.length, ContentType: 'image/png' });
    // Nothing lands in the local files folder.
    const local = await readdir(path.join(t.dataDir, 'files')).catch(() => []);
    expect(local).toEqual([]);

    const whole = await t.app.inject({ method: 'GET', url: pathOf(url) });
    expect(whole.statusCode).toBe(200);
    expect(whole.rawPayload.equals(png)).toBe(true);
    const first = await t.app.inject({ method: 'GET', url: pathOf(url), headers: { range: 'bytes=0-99' } });
    expect(first.statusCode).toBe(206);
    expect(first.headers['content-range']).toBe(`bytes 0-99/${png.length}`);
    expect(first.rawPayload.equals(png.subarray(0, 100))).toBe(true);
    const suffix = await t.app.inject({ method: 'GET', url: pathOf(url), headers: { range: 'bytes=-500' } });
    expect(suffix.rawPayload.equals(png.subarray(png.length - 500))).toBe(true);
    const beyond = await t.app.inject({ method: 'GET', url: pathOf(url), headers: { range: `bytes=${png.length}-` } });
    expect(beyond.statusCode).toBe(416);
  });

  it('keeps nothing in the bucket when an upload is refused', async () => {
    const { accessToken } = await signUp(t.app);
    const fake = Buffer.concat([Buffer.from('GIF89a'), Buffer.alloc(300)]);
    const started = await t.app.inject({
      method: 'POST',
      url: '/v1/files/init',
      headers: { authorization: `Bearer ${accessToken}` },
      payload: { kind: 'IMAGE', contentType: 'image/png', size: fake.length },
    });
    const { uploadUrl, url } = started.json<{ uploadUrl: string; url: string }>();
    const response = await t.app.inject({ method: 'PUT', url: pathOf(uploadUrl), headers: { 'content-type': 'image/png' }, payload: fake });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.message).toContain('GIF, not the declared image/png');
    await expect(client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: keyOf(url) }))).rejects.toMatchObject({ name: 'NotFound' });
  });

  it('saves service-made media into the bucket and resolves it back', async () => {
    const { user } = await signUp(t.app);
    const png = samplePng(24, 8);
    const saved = await t.services.files.saveBytes({ ownerId: user.id, kind: 'IMAGE', contentType: 'image/png', body: png });
    expect((await client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: saved.key }))).ContentLength).toBe(png.length);
    expect((await t.services.files.resolveRawUrl(saved.url))?.bytes.equals(png)).toBe(true);
  });
});
