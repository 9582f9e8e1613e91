import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase } from '../../../test/helpers/test-database.js';
import { createDatabaseStorage } from './database-storage.js';
import type { Storage } from './storage.js';

let database: Awaited<ReturnType<typeof openTestDatabase>>;
let storage: Storage;
const chunkCount = async () => Number((await database.database.query<{ n: string }>('SELECT count(*) AS n FROM storage_chunks')).rows[0]!.n);

beforeAll(async () => {
  database = await openTestDatabase();
  storage = createDatabaseStorage(database.database, { chunkSize: 7 });
});
afterAll(async () => database?.close());

describe('database storage', () => {
  const data = Buffer.from('0123456789abcdefghijklmnopqrstuvwxyz');

  it('cuts a stream of odd-sized pieces into fixed chunks and reads any range across chunk boundaries', async () => {
    const pieces = [data.subarray(0, 3), data.subarray(3, 4), data.subarray(4, 20), data.subarray(20)];
    expect(await storage.put('db/a.txt', Readable.from(pieces), { contentType: 'text/plain' })).toEqual({ key: 'db/a.txt', size: data.length });
    expect(await chunkCount()).toBe(Math.ceil(data.length / 7));
    for (let start = 0; start < data.length; start += 5) {
      for (const end of [start, start + 6, start + 7, start + 15, data.length - 1]) {
        if (end >= data.length) continue;
        expect((await buffer(await storage.read('db/a.txt', { start, end }))).toString()).toBe(data.subarray(start, end + 1).toString());
      }
    }
    expect((await buffer(await storage.read('db/a.txt'))).equals(data)).toBe(true);
  });

  it('stores an empty file', async () => {
    expect(await storage.put('db/empty.bin', Buffer.alloc(0))).toEqual({ key: 'db/empty.bin', size: 0 });
    expect((await buffer(await storage.read('db/empty.bin'))).length).toBe(0);
    expect((await storage.stat('db/empty.bin'))?.size).toBe(0);
  });

  it('drops the previous version on overwrite and every chunk on delete', async () => {
    const before = await chunkCount();
    await storage.put('db/b.txt', data);
    expect(await chunkCount()).toBe(before + 6);
    await storage.put('db/b.txt', Buffer.from('short'));
    expect(await chunkCount()).toBe(before + 1);
    expect((await buffer(await storage.read('db/b.txt'))).toString()).toBe('short');
    await storage.delete('db/b.txt');
    expect(await chunkCount()).toBe(before);
  });

  it('leaves no chunks and no object when the source stream fails midway', async () => {
    const before = await chunkCount();
    let sent = 0;
    const failing = new Readable({
      read() {
        if (sent++ < 3) this.push(Buffer.from('0123456789'));
        else this.destroy(new Error('upstream broke'));
      },
    });
    await expect(storage.put('db/partial.bin', failing)).rejects.toThrow('upstream broke');
    expect(await storage.stat('db/partial.bin')).toBeNull();
    expect(await chunkCount()).toBe(before);
  });
});
