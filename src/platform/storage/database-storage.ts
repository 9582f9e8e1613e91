import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Database } from '../db/database.js';
import { assertSafeKey, StoredObjectMissing, type ByteRange, type Storage } from './storage.js';

/** 1 MiB: a Range read fetches only the chunks it covers, and a file streams one chunk per round trip. */
export const DEFAULT_CHUNK_SIZE = 1024 * 1024;

const toBuffer = (data: Uint8Array) => (Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength));

/**
 * File bytes in the database itself (tables `storage_objects` and `storage_chunks`): the shared default of scaled mode
 * when no S3-compatible store is configured, so every instance on one PostgreSQL serves every file with nothing but
 * `DATABASE_URL`. A file is written as chunks of a new version, then one statement points the key at that version and
 * drops the chunks of the previous one; readers stream the chunks of the version they found, never the whole file.
 */
export function createDatabaseStorage(database: Pick<Database, 'query'>, options: { chunkSize?: number } = {}): Storage {
  const chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;

  async function insertChunk(version: string, seq: number, data: Buffer) {
    await database.query('INSERT INTO storage_chunks (version, seq, data) VALUES ($1, $2, $3)', [version, seq, data]);
  }

  return {
    kind: 'database',
    async put(key, body, putOptions = {}) {
      assertSafeKey(key);
      const version = randomUUID();
      let size = 0;
      let seq = 0;
      try {
        if (Buffer.isBuffer(body)) {
          for (let offset = 0; offset < body.length; offset += chunkSize) await insertChunk(version, seq++, body.subarray(offset, offset + chunkSize));
          size = body.length;
        } else {
          // Chunks are cut to exactly `chunkSize` whatever sizes the stream delivers, so a byte's chunk is offset / chunkSize.
          let pending: Buffer[] = [];
          let pendingBytes = 0;
          for await (const piece of body as AsyncIterable<Buffer | string>) {
            let rest = typeof piece === 'string' ? Buffer.from(piece) : piece;
            size += rest.length;
            while (rest.length > 0) {
              const take = Math.min(chunkSize - pendingBytes, rest.length);
              pending.push(rest.subarray(0, take));
              pendingBytes += take;
              rest = rest.subarray(take);
              if (pendingBytes === chunkSize) {
                await insertChunk(version, seq++, Buffer.concat(pending));
                pending = [];
                pendingBytes = 0;
              }
            }
          }
          if (pendingBytes > 0) await insertChunk(version, seq++, Buffer.concat(pending));
        }
        // One statement: the key points at the new version and the previous version's chunks go. `previous` reads the
        // statement's snapshot (a FOR UPDATE there would skip the row the same statement updates).
        await database.query(
          `WITH previous AS (SELECT version FROM storage_objects WHERE key = $1),
                stored AS (
                  INSERT INTO storage_objects (key, version, size, chunk_size, content_type, modified_at)
                  VALUES ($1, $2, $3, $4, $5, now())
                  ON CONFLICT (key) DO UPDATE SET version = EXCLUDED.version, size = EXCLUDED.size, chunk_size = EXCLUDED.chunk_size,
                    content_type = EXCLUDED.content_type, modified_at = EXCLUDED.modified_at
                  RETURNING key)
           DELETE FROM storage_chunks WHERE version IN (SELECT version FROM previous) AND EXISTS (SELECT 1 FROM stored)`,
          [key, version, size, chunkSize, putOptions.contentType ?? null],
        );
      } catch (err) {
        await database.query('DELETE FROM storage_chunks WHERE version = $1', [version]).catch(() => undefined);
        throw err;
      }
      return { key, size };
    },

    async stat(key) {
      assertSafeKey(key);
      const { rows } = await database.query<{ size: string | number; modified_at: Date | string }>(
        'SELECT size, modified_at FROM storage_objects WHERE key = $1',
        [key],
      );
      const row = rows[0];
      return row ? { size: Number(row.size), modifiedAt: new Date(row.modified_at) } : null;
    },

    async read(key, range?: ByteRange) {
      assertSafeKey(key);
      const { rows } = await database.query<{ version: string; size: string | number; chunk_size: number }>(
        'SELECT version, size, chunk_size FROM storage_objects WHERE key = $1',
        [key],
      );
      const object = rows[0];
      if (!object) throw new StoredObjectMissing(key);
      const size = Number(object.size);
      const start = range?.start ?? 0;
      const end = Math.min(range?.end ?? size - 1, size - 1);
      if (end < start) return Readable.from([]);
      const perChunk = object.chunk_size;
      let seq = Math.floor(start / perChunk);
      const lastSeq = Math.floor(end / perChunk);
      return new Readable({
        read() {
          if (seq > lastSeq) {
            this.push(null);
            return;
          }
          const current = seq++;
          database
            .query<{ data: Uint8Array }>('SELECT data FROM storage_chunks WHERE version = $1 AND seq = $2', [object.version, current])
            .then(({ rows: chunks }) => {
              const chunk = chunks[0];
              if (!chunk) throw new StoredObjectMissing(key);
              const data = toBuffer(chunk.data);
              const chunkStart = current * perChunk;
              this.push(data.subarray(Math.max(0, start - chunkStart), Math.min(data.length, end - chunkStart + 1)));
            })
            .catch((err: unknown) => this.destroy(err as Error));
        },
      });
    },

    async delete(key) {
      assertSafeKey(key);
      await database.query(
        `WITH gone AS (DELETE FROM storage_objects WHERE key = $1 RETURNING version)
         DELETE FROM storage_chunks WHERE version IN (SELECT version FROM gone)`,
        [key],
      );
    },
  };
}
