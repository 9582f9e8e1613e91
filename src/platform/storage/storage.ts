import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomUUID } from 'node:crypto';

export interface StoredObject {
  key: string;
  size: number;
}

export interface ByteRange {
  start: number;
  /** Inclusive. */
  end: number;
}

export interface PutOptions {
  /** Recorded with the object where the backend keeps metadata (S3); the files table is the source of truth. */
  contentType?: string;
}

/** Thrown (as a rejection of `read`) when no object is stored under the key, whichever the backend. */
export class StoredObjectMissing extends Error {
  constructor(readonly key: string) {
    super(`No stored object under ${JSON.stringify(key)}`);
    this.name = 'StoredObjectMissing';
  }
}

/**
 * Where file bytes live: a local folder in embedded mode; in the database with DATABASE_URL (shared by every
 * instance); an S3-compatible bucket when configured.
 */
export interface Storage {
  /** `local`, `database` or `s3`, for logs and the health page. */
  readonly kind: 'local' | 'database' | 's3';
  put(key: string, body: Buffer | Readable, options?: PutOptions): Promise<StoredObject>;
  /** Returns null when the key does not exist. */
  stat(key: string): Promise<{ size: number; modifiedAt: Date } | null>;
  /** The object's bytes, or the inclusive `range` of them; rejects with StoredObjectMissing when the key does not exist. */
  read(key: string, range?: ByteRange): Promise<Readable>;
  delete(key: string): Promise<void>;
}

const SAFE_KEY = /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/;

export function assertSafeKey(key: string): void {
  if (!SAFE_KEY.test(key) || key.length > 512 || key.split('/').some((part) => part === '..' || part === '.')) {
    throw new Error(`Invalid storage key: ${JSON.stringify(key)}`);
  }
}

export function createLocalStorage(root: string): Storage {
  const fileOf = (key: string) => {
    assertSafeKey(key);
    return path.join(root, ...key.split('/'));
  };
  return {
    kind: 'local',
    async put(key, body) {
      const file = fileOf(key);
      await mkdir(path.dirname(file), { recursive: true });
      // Write beside the target and rename, so a reader never sees half a file.
      const temp = `${file}.${randomUUID()}.part`;
      const sink = createWriteStream(temp);
      try {
        await pipeline(Buffer.isBuffer(body) ? Readable.from([body]) : body, sink);
        await rename(temp, file);
      } catch (err) {
        // A source that fails at once can beat the file's open: the stream still creates it, then closes. Remove it
        // only after that, or the partial file outlives this call.
        if (!sink.closed) await once(sink, 'close').catch(() => undefined);
        await rm(temp, { force: true });
        throw err;
      }
      const { size } = await stat(file);
      return { key, size };
    },
    async stat(key) {
      try {
        const info = await stat(fileOf(key));
        return info.isFile() ? { size: info.size, modifiedAt: info.mtime } : null;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw err;
      }
    },
    async read(key, range) {
      const stream = createReadStream(fileOf(key), range ? { start: range.start, end: range.end } : {});
      // Surface a missing file as a rejected promise, as the S3 backend does, rather than a later stream error.
      await new Promise<void>((resolve, reject) => {
        stream.once('ready', () => resolve());
        stream.once('error', (err: NodeJS.ErrnoException) => reject(err.code === 'ENOENT' ? new StoredObjectMissing(key) : err));
      });
      return stream;
    },
    async delete(key) {
      await rm(fileOf(key), { force: true });
    },
  };
}
