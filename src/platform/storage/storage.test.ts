import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { createLocalStorage, type Storage } from './storage.js';

let dir: string;
let storage: Storage;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'storage-test-'));
  storage = createLocalStorage(dir);
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

describe('local storage', () => {
  it('stores buffers and streams, and reads them whole or by byte range', async () => {
    expect(await storage.put('a/b/file.txt', Buffer.from('0123456789'))).toEqual({ key: 'a/b/file.txt', size: 10 });
    expect(await text(await storage.read('a/b/file.txt'))).toBe('0123456789');
    expect(await text(await storage.read('a/b/file.txt', { start: 2, end: 4 }))).toBe('234');
    await storage.put('stream.bin', Readable.from([Buffer.from('ab'), Buffer.from('cd')]));
    expect((await storage.stat('stream.bin'))?.size).toBe(4);
  });

  it('reports a missing key as null and deletes idempotently', async () => {
    expect(await storage.stat('missing.txt')).toBeNull();
    await storage.put('gone.txt', Buffer.from('x'));
    await storage.delete('gone.txt');
    await storage.delete('gone.txt');
    expect(await storage.stat('gone.txt')).toBeNull();
  });

  it('leaves no partial file when the source stream fails', async () => {
    const failing = new Readable({
      read() {
        this.destroy(new Error('upstream broke'));
      },
    });
    await expect(storage.put('partial.bin', failing)).rejects.toThrow('upstream broke');
    expect(await storage.stat('partial.bin')).toBeNull();
    expect((await readdir(dir)).filter((f) => f.endsWith('.part'))).toEqual([]);
  });

  it.each(['../escape.txt', '/abs.txt', 'a/../../b', 'a//b', '', '.hidden', 'a/./b', 'sp ace'])('refuses the unsafe key %j', async (key) => {
    await expect(storage.put(key, Buffer.from('x'))).rejects.toThrow(/Invalid storage key/);
  });
});
