import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../config.js';
import { startS3Server, type TestS3Server } from '../../../test/helpers/s3-server.js';
import { createS3Storage } from './s3-storage.js';
import { openTestDatabase } from '../../../test/helpers/test-database.js';
import { createDatabaseStorage } from './database-storage.js';
import { createLocalStorage, StoredObjectMissing, type Storage } from './storage.js';

let s3: TestS3Server;
let localDir: string;
let database: Awaited<ReturnType<typeof openTestDatabase>>;
const backends: Record<Storage['kind'], Storage> = {} as Record<Storage['kind'], Storage>;

beforeAll(async () => {
  s3 = await startS3Server();
  localDir = await mkdtemp(path.join(os.tmpdir(), 'storage-contract-'));
  backends.local = createLocalStorage(localDir);
  database = await openTestDatabase();
  // Small chunks, so the large file spans many of them and ranges cross chunk boundaries.
  backends.database = createDatabaseStorage(database.database, { chunkSize: 512 * 1024 + 3 });
  backends.s3 = createS3Storage({
    bucket: s3.bucket,
    region: 'us-east-1',
    endpoint: s3.endpoint,
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
    forcePathStyle: true,
  });
});

afterAll(async () => {
  await s3?.close();
  await database?.close();
  await rm(localDir, { recursive: true, force: true });
});

const bytes = (n: number, seed = 7) => Buffer.from(Array.from({ length: n }, (_, i) => (i * seed + (i >> 8)) & 255));

describe.each(['local', 'database', 's3'] as const)('%s storage', (name) => {
  const storage = () => backends[name];

  it('says which backend it is', () => {
    expect(storage().kind).toBe(name);
  });

  it('stores a buffer and reads it whole and by inclusive byte ranges', async () => {
    const data = bytes(1000);
    expect(await storage().put('contract/a.bin', data, { contentType: 'application/octet-stream' })).toEqual({ key: 'contract/a.bin', size: 1000 });
    expect((await buffer(await storage().read('contract/a.bin'))).equals(data)).toBe(true);
    expect((await buffer(await storage().read('contract/a.bin', { start: 0, end: 99 }))).equals(data.subarray(0, 100))).toBe(true);
    expect((await buffer(await storage().read('contract/a.bin', { start: 500, end: 999 }))).equals(data.subarray(500))).toBe(true);
    expect((await buffer(await storage().read('contract/a.bin', { start: 999, end: 999 }))).equals(data.subarray(999))).toBe(true);
    const info = await storage().stat('contract/a.bin');
    expect(info?.size).toBe(1000);
    expect(info?.modifiedAt).toBeInstanceOf(Date);
  });

  it('stores a stream of unknown length, including one large enough for a multipart upload', async () => {
    const small = await storage().put('contract/small-stream.bin', Readable.from([Buffer.from('ab'), Buffer.from('cd')]));
    expect(small.size).toBe(4);
    expect((await buffer(await storage().read('contract/small-stream.bin'))).toString()).toBe('abcd');

    const big = bytes(9 * 1024 * 1024 + 123, 13);
    const chunks = Array.from({ length: Math.ceil(big.length / 65536) }, (_, i) => big.subarray(i * 65536, (i + 1) * 65536));
    const stored = await storage().put('contract/big-stream.bin', Readable.from(chunks), { contentType: 'video/mp4' });
    expect(stored.size).toBe(big.length);
    expect((await storage().stat('contract/big-stream.bin'))?.size).toBe(big.length);
    const tail = await buffer(await storage().read('contract/big-stream.bin', { start: big.length - 500, end: big.length - 1 }));
    expect(tail.equals(big.subarray(big.length - 500))).toBe(true);
    expect((await buffer(await storage().read('contract/big-stream.bin'))).equals(big)).toBe(true);
  });

  it('answers null for a missing key, rejects reading it, and deletes idempotently', async () => {
    expect(await storage().stat('contract/missing.bin')).toBeNull();
    await expect(storage().read('contract/missing.bin')).rejects.toBeInstanceOf(StoredObjectMissing);
    await storage().put('contract/gone.bin', Buffer.from('x'));
    await storage().delete('contract/gone.bin');
    await storage().delete('contract/gone.bin');
    expect(await storage().stat('contract/gone.bin')).toBeNull();
  });

  it('overwrites an existing key', async () => {
    await storage().put('contract/over.txt', Buffer.from('first'));
    await storage().put('contract/over.txt', Buffer.from('second!'));
    expect((await buffer(await storage().read('contract/over.txt'))).toString()).toBe('second!');
  });

  it.each(['../escape.txt', '/abs.txt', 'a//b', '', 'a/./b'])('refuses the unsafe key %j', async (key) => {
    await expect(storage().put(key, Buffer.from('x'))).rejects.toThrow(/Invalid storage key/);
  });
});

describe('s3 storage specifics', () => {
  it('records the content type on the object', async () => {
    await backends.s3.put('meta/picture.png', Buffer.from('png-ish'), { contentType: 'image/png' });
    const client = new S3Client({
      region: 'us-east-1',
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    const head = await client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: 'meta/picture.png' }));
    expect(head.ContentType).toBe('image/png');
    client.destroy();
  });

  it('keeps objects under a prefix when one is given', async () => {
    const prefixed = createS3Storage({
      bucket: s3.bucket,
      region: 'us-east-1',
      endpoint: s3.endpoint,
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
      forcePathStyle: true,
      prefix: 'tenant-a/',
    });
    await prefixed.put('x.txt', Buffer.from('hello'));
    expect((await buffer(await backends.s3.read('tenant-a/x.txt'))).toString()).toBe('hello');
  });

  it('fails clearly with wrong credentials', async () => {
    const wrong = createS3Storage({
      bucket: s3.bucket,
      region: 'us-east-1',
      endpoint: s3.endpoint,
      accessKeyId: s3.accessKeyId,
      secretAccessKey: 'not-the-secret',
      forcePathStyle: true,
    });
    await expect(wrong.put('denied.txt', Buffer.from('x'))).rejects.toThrow(/signature/i);
  });
});

describe('S3 configuration', () => {
  const base = { DATA_DIR: '/tmp/storefront-config-test', JWT_SECRET: 'x'.repeat(40) };

  it('is off without S3_BUCKET and on with it', () => {
    expect(loadConfig(base).s3).toBeNull();
    expect(
      loadConfig({
        ...base,
        S3_BUCKET: 'media-bucket',
        S3_ENDPOINT: 'http://127.0.0.1:9000',
        S3_ACCESS_KEY_ID: 'a',
        S3_SECRET_ACCESS_KEY: 'b',
        S3_FORCE_PATH_STYLE: 'true',
      }).s3,
    ).toEqual({ bucket: 'media-bucket', region: 'us-east-1', endpoint: 'http://127.0.0.1:9000', accessKeyId: 'a', secretAccessKey: 'b', forcePathStyle: true });
    expect(loadConfig({ ...base, S3_BUCKET: 'media-bucket', S3_REGION: 'eu-west-3' }).s3).toMatchObject({
      region: 'eu-west-3',
      endpoint: null,
      accessKeyId: null,
      forcePathStyle: false,
    });
  });

  it.each([
    [{ S3_ENDPOINT: 'http://127.0.0.1:9000' }, 'S3_ENDPOINT set without S3_BUCKET'],
    [{ S3_BUCKET: 'Bad_Bucket' }, 'S3_BUCKET must be a valid bucket name'],
    [{ S3_BUCKET: 'media-bucket', S3_ACCESS_KEY_ID: 'a' }, 'S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together'],
    [{ S3_BUCKET: 'media-bucket', S3_ENDPOINT: 'ftp://x' }, 'S3_ENDPOINT must use http: or https:'],
    [{ S3_BUCKET: 'media-bucket', S3_FORCE_PATH_STYLE: 'maybe' }, 'S3_FORCE_PATH_STYLE must be true or false'],
    [{ S3_BUCKET: 'media-bucket', S3_REGION: 'Europe West' }, 'S3_REGION must look like'],
  ])('refuses %j', (env, message) => {
    expect(() => loadConfig({ ...base, ...env })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, ...env })).toThrow(message);
  });
});
