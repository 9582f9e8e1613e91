import type { Readable } from 'node:stream';
import { and, eq, sql } from 'drizzle-orm';
import { files } from '../../db/schema/files.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { createInvalidatingCache } from '../../platform/events/invalidating-cache.js';
import { notFound } from '../../platform/http/errors.js';
import type { SafeFetcher } from '../../platform/net/safe-fetch.js';
import { StoredObjectMissing, type ByteRange, type Storage } from '../../platform/storage/storage.js';
import { readFileBytes, removeFiles } from './by-id.js';
import type { FilesContext } from './context.js';
import { createRawUrls } from './raw-urls.js';
import { findReadyByKey, readSource, resolveRawUrl } from './read-source.js';
import { saveBytes } from './save-bytes.js';
import type { FileRecord, FileRow, InitUploadInput, ReadSourceOptions, SaveBytesInput, SourceContent, UploadBody } from './types.js';
import { completeUpload, initUpload } from './upload.js';

export { RAW_PATH } from './raw-urls.js';
export { UPLOAD_URL_TTL_MS } from './upload.js';
export type { FileRecord, InitUploadInput, ReadSourceOptions, SaveBytesInput, SourceContent, UploadBody } from './types.js';

export interface FilesServiceDeps {
  db: Db;
  clock: Clock;
  storage: Storage;
  fetcher: SafeFetcher;
  publicBaseUrl: string;
  /** Where the storage figure of every instance's cache is dropped when a file becomes READY (migration 0029). */
  events?: EventBus;
}

const BYTES_PER_MB = 1024 * 1024;

/**
 * Stored files: uploads (upload.ts), bytes the service stores itself (save-bytes.ts), and the media sources users
 * give (read-source.ts); this factory builds what they share.
 */
export function createFilesService({ db, clock, storage, fetcher, publicBaseUrl, events }: FilesServiceDeps) {
  // Bytes of READY files per owner: read by every /v1/users/me, changed only when a file becomes READY (dropped here
  // at once, and on the other instances by the trigger on files).
  const storageUsed = createInvalidatingCache<number>({
    name: 'storage',
    bus: events,
    load: async (ownerId) => {
      const [row] = await db
        .select({ bytes: sql<string>`coalesce(sum(${files.size}), 0)` })
        .from(files)
        .where(and(eq(files.ownerId, ownerId), eq(files.status, 'READY')));
      return Number(row?.bytes ?? 0);
    },
  });
  const { rawUrl, ownKeyOf } = createRawUrls(publicBaseUrl);

  const toRecord = (row: FileRow): FileRecord => ({
    id: row.id,
    ownerId: row.ownerId,
    kind: row.kind,
    status: row.status,
    key: row.key,
    contentType: row.contentType,
    size: row.size,
    sha256: row.sha256,
    filename: row.filename,
    sourceUrl: row.sourceUrl,
    url: rawUrl(row.key),
    createdAt: row.createdAt,
    readyAt: row.readyAt,
  });

  async function rowById(id: string): Promise<FileRow | null> {
    if (!/^[0-9a-f-]{36}$/i.test(id)) return null;
    const [row] = await db.select().from(files).where(eq(files.id, id));
    return row ?? null;
  }

  const ctx: FilesContext = { db, clock, storage, fetcher, publicBaseUrl, storageUsed, rawUrl, ownKeyOf, toRecord, rowById };

  return {
    rawUrl,

    /** Step one of an upload: checks the kind's limits and hands out a single-use, expiring upload URL. */
    initUpload: (ownerId: string, input: InitUploadInput) => initUpload(ctx, ownerId, input),

    /** Step two: the bytes arrive at the upload URL; they are checked while they stream into storage. */
    completeUpload: (fileId: string, token: string, upload: UploadBody): Promise<FileRecord> => completeUpload(ctx, fileId, token, upload),

    /** Megabytes (to the byte: six decimals) of the owner's stored files: generated media and finished uploads. */
    async storageMbUsed(ownerId: string): Promise<number> {
      return Math.round(((await storageUsed.get(ownerId)) / BYTES_PER_MB) * 1e6) / 1e6;
    },

    /** The caller's own file; another user's or a missing one is 404. */
    async getOwnFile(ownerId: string, id: string): Promise<FileRecord> {
      const row = await rowById(id);
      if (!row || row.ownerId !== ownerId) throw notFound('No such file.');
      return toRecord(row);
    },

    findReadyByKey: (key: string): Promise<FileRecord | null> => findReadyByKey(ctx, key),

    /** The stored bytes (or an inclusive range); a record whose bytes are gone is a 404, never a 500. */
    async openStream(file: FileRecord, range?: ByteRange): Promise<Readable> {
      try {
        return await storage.read(file.key, range);
      } catch (err) {
        if (err instanceof StoredObjectMissing) throw notFound('The file is listed but its bytes are no longer stored.');
        throw err;
      }
    },

    /**
     * Stores bytes the service produced or copied (provider media). The content type is taken from the bytes when
     * they reveal it; a source URL is recorded without credentials.
     */
    saveBytes: (input: SaveBytesInput): Promise<{ id: string; key: string; url: string; contentType: string; size: number }> => saveBytes(ctx, input),

    /** The bytes of a file kept by id (stored with saveBytes), or null when the file or its bytes are gone. */
    readFileBytes: (id: string): Promise<{ bytes: Buffer; contentType: string } | null> => readFileBytes(ctx, id),

    /** Deletes files kept by id, with their bytes: in `handle` when the caller deletes what refers to them in a transaction. */
    removeFiles: (ids: readonly string[], handle?: DbOrTx): Promise<number> => removeFiles(ctx, ids, handle),

    /** Whether a URL points at one of our raw files (absolute under PUBLIC_BASE_URL, or relative). */
    isRawUrl(url: string): boolean {
      try {
        return ownKeyOf(url) !== null;
      } catch {
        return false;
      }
    },

    /**
     * The bytes behind one of our `/v1/files/raw/<key>` URLs; null when the URL is not ours. A URL of ours that names
     * no stored file is a 400 the caller can show.
     */
    resolveRawUrl: (url: string, options: { maxBytes?: number } = {}): Promise<{ file: FileRecord; bytes: Buffer; contentType: string } | null> =>
      resolveRawUrl(ctx, url, options),

    /**
     * Reads a media source given by a user: a `data:` URL, one of our raw-file URLs, or a remote URL fetched through the
     * SSRF-safe fetcher (defaults 8 s, 15 MB). Anything unreadable is a 400 naming what went wrong.
     */
    readSource: (url: string, options: ReadSourceOptions = {}): Promise<SourceContent> => readSource(ctx, url, options),
  };
}

export type FilesService = ReturnType<typeof createFilesService>;
