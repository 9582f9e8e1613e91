import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { and, eq, gt, sql } from 'drizzle-orm';
import { newId } from '../../platform/ids.js';
import { files, type FileKind } from '../../db/schema/files.js';
import type { Clock } from '../../platform/clock/clock.js';
import { MINUTE_MS } from '../../platform/clock/clock.js';
import type { Db } from '../../platform/db/database.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { createInvalidatingCache } from '../../platform/events/invalidating-cache.js';
import { badRequest, conflict, forbidden, notFound } from '../../platform/http/errors.js';
import { baseContentType, FORMAT_CONTENT_TYPE, formatMatches, sniffFormat, type MediaFormat } from '../../platform/media/sniff.js';
import { DEFAULT_FETCH_MAX_BYTES, DEFAULT_FETCH_TIMEOUT_MS, FetchError, formatBytes, unreadableRemoteFile, type SafeFetcher } from '../../platform/net/safe-fetch.js';
import { stripUrlCredentials } from '../../platform/net/url-credentials.js';
import { assertSafeKey, StoredObjectMissing, type ByteRange, type Storage } from '../../platform/storage/storage.js';
import { canonicalContentType, extensionFor, FAMILY, KIND_RULES } from './kinds.js';
import { parseDataUrl } from './sources.js';
import { UploadInspector } from './upload-stream.js';

const GENERIC_BINARY = 'application/octet-stream';
export const UPLOAD_URL_TTL_MS = 15 * MINUTE_MS;
export const RAW_PATH = '/v1/files/raw/';

type FileRow = typeof files.$inferSelect;

/** A stored file as the rest of the service sees it. */
export interface FileRecord {
  id: string;
  ownerId: string;
  kind: FileKind;
  status: FileRow['status'];
  key: string;
  contentType: string;
  size: number;
  sha256: string | null;
  filename: string | null;
  sourceUrl: string | null;
  url: string;
  createdAt: Date;
  readyAt: Date | null;
}

export interface InitUploadInput {
  kind: FileKind;
  contentType: string;
  size: number;
  filename?: string;
}

export interface UploadBody {
  contentType: string | undefined;
  contentLength: number | undefined;
  body: Readable;
}

export interface SaveBytesInput {
  ownerId: string;
  kind: FileKind;
  contentType: string;
  body: Buffer;
  filename?: string | null;
  /** Where the bytes came from; credential query parameters are stripped before it is recorded. */
  sourceUrl?: string | null;
}

export interface ReadSourceOptions {
  maxBytes?: number;
  timeoutMs?: number;
  /** Media families accepted (by the bytes, not the declared type); default: any. */
  accept?: ('image' | 'audio' | 'video')[];
  /** How messages name the source, e.g. "the image". */
  what?: string;
}

export interface SourceContent {
  bytes: Buffer;
  contentType: string;
  format: MediaFormat | null;
  origin: 'data' | 'file' | 'remote';
}

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

const sha256Hex = (value: string) => createHash('sha256').update(value).digest('hex');

const sameHash = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

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
  const base = new URL(publicBaseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');
  const rawUrl = (key: string) => `${publicBaseUrl}${RAW_PATH}${key}`;

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

  /** An unguessable key that is never reused: the kind, the UUIDv7 and 128 random bits. */
  const newKey = (kind: FileKind, id: string, contentType: string) =>
    `${kind.toLowerCase().replace('_', '-')}/${id}-${randomBytes(16).toString('hex')}.${extensionFor(contentType)}`;

  async function rowById(id: string): Promise<FileRow | null> {
    if (!/^[0-9a-f-]{36}$/i.test(id)) return null;
    const [row] = await db.select().from(files).where(eq(files.id, id));
    return row ?? null;
  }

  /** The storage key of one of our raw-file URLs (absolute under PUBLIC_BASE_URL, or same-origin relative), else null. */
  function ownKeyOf(url: string): string | null {
    let path: string;
    if (url.startsWith(RAW_PATH) || url.startsWith(`${basePath}${RAW_PATH}`)) {
      path = url.replace(/[?#].*$/, '');
      if (basePath && path.startsWith(basePath + RAW_PATH)) path = path.slice(basePath.length);
    } else {
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        return null;
      }
      if (parsed.origin !== base.origin || !parsed.pathname.startsWith(`${basePath}${RAW_PATH}`)) return null;
      path = parsed.pathname.slice(basePath.length);
    }
    let key: string;
    try {
      key = decodeURIComponent(path.slice(RAW_PATH.length));
      assertSafeKey(key);
    } catch {
      throw badRequest('That is not a valid /v1/files/raw/ URL.');
    }
    return key;
  }

  async function findReadyByKey(key: string): Promise<FileRecord | null> {
    const [row] = await db
      .select()
      .from(files)
      .where(and(eq(files.key, key), eq(files.status, 'READY')));
    return row ? toRecord(row) : null;
  }

  /**
   * The bytes behind one of our `/v1/files/raw/<key>` URLs; null when the URL is not ours. A URL of ours that names
   * no stored file is a 400 the caller can show.
   */
  async function resolveRawUrl(
    url: string,
    options: { maxBytes?: number } = {},
  ): Promise<{ file: FileRecord; bytes: Buffer; contentType: string } | null> {
    const key = ownKeyOf(url);
    if (key === null) return null;
    const file = await findReadyByKey(key);
    if (!file) throw badRequest(`The file ${RAW_PATH}${key} does not exist.`);
    if (options.maxBytes !== undefined && file.size > options.maxBytes) {
      throw badRequest(`The file is ${formatBytes(file.size)}; at most ${formatBytes(options.maxBytes)} can be used here.`);
    }
    const stream = await storage.read(key).catch((err: unknown) => {
      throw err instanceof StoredObjectMissing ? badRequest(`The file ${RAW_PATH}${key} is no longer stored.`) : err;
    });
    return { file, bytes: await buffer(stream), contentType: file.contentType };
  }

  return {
    rawUrl,

    /** Step one of an upload: checks the kind's limits and hands out a single-use, expiring upload URL. */
    async initUpload(ownerId: string, input: InitUploadInput) {
      const rule = KIND_RULES[input.kind];
      const contentType = canonicalContentType(baseContentType(input.contentType));
      if (!rule.contentTypes.map(canonicalContentType).includes(contentType)) {
        throw badRequest(`${cap(rule.label)} must be one of ${[...new Set(rule.contentTypes.map(canonicalContentType))].join(', ')} (got "${input.contentType}").`, {
          field: 'contentType',
          allowed: rule.contentTypes,
        });
      }
      if (input.size > rule.maxBytes) {
        throw badRequest(`${cap(rule.label)} can be at most ${formatBytes(rule.maxBytes)}; this one is ${formatBytes(input.size)}.`, {
          field: 'size',
          maxBytes: rule.maxBytes,
        });
      }
      const id = newId();
      const token = randomBytes(32).toString('base64url');
      const now = clock.now();
      const expiresAt = new Date(now.getTime() + UPLOAD_URL_TTL_MS);
      const key = newKey(input.kind, id, contentType);
      await db.insert(files).values({
        id,
        ownerId,
        kind: input.kind,
        status: 'PENDING',
        key,
        contentType,
        size: input.size,
        filename: input.filename ?? null,
        uploadTokenHash: sha256Hex(token),
        uploadExpiresAt: expiresAt,
        createdAt: now,
      });
      return {
        fileId: id,
        uploadUrl: `${publicBaseUrl}/v1/files/upload/${id}?token=${token}`,
        method: 'PUT' as const,
        headers: { 'Content-Type': contentType },
        expiresAt,
        url: rawUrl(key),
      };
    },

    /** Step two: the bytes arrive at the upload URL; they are checked while they stream into storage. */
    async completeUpload(fileId: string, token: string, upload: UploadBody): Promise<FileRecord> {
      const row = await rowById(fileId);
      if (!row || !row.uploadTokenHash || !sameHash(row.uploadTokenHash, sha256Hex(token))) {
        throw forbidden('This upload URL is not valid. Use the uploadUrl returned by POST /v1/files/init.');
      }
      if (row.status === 'READY') throw conflict(`This upload URL has already been used; the file is at ${rawUrl(row.key)}.`);
      if (row.status === 'UPLOADING') throw conflict('An upload to this URL is already in progress.');
      const now = clock.now();
      if (!row.uploadExpiresAt || row.uploadExpiresAt <= now) {
        throw forbidden(`This upload URL expired at ${row.uploadExpiresAt?.toISOString()}. Start again with POST /v1/files/init.`);
      }
      // The declared type, or generic bytes (what many HTTP clients send for a file); the bytes are sniffed either way.
      const sent = upload.contentType ? canonicalContentType(baseContentType(upload.contentType)) : null;
      if (sent !== row.contentType && sent !== GENERIC_BINARY) {
        throw badRequest(
          `Send the upload with "Content-Type: ${row.contentType}" (as declared when it was started) or "${GENERIC_BINARY}" (got ${sent ? `"${sent}"` : 'none'}).`,
          { expected: row.contentType },
        );
      }
      if (upload.contentLength !== undefined && upload.contentLength !== row.size) {
        throw badRequest(`The upload is ${upload.contentLength} bytes but ${row.size} were declared when it was started.`, {
          declaredSize: row.size,
          contentLength: upload.contentLength,
        });
      }
      // Claim the upload: of two concurrent PUTs, exactly one gets here.
      const claimed = await db
        .update(files)
        .set({ status: 'UPLOADING' })
        .where(and(eq(files.id, row.id), eq(files.status, 'PENDING'), gt(files.uploadExpiresAt, now)))
        .returning({ id: files.id });
      if (claimed.length === 0) throw conflict('This upload URL is being used by another upload.');

      const inspector = new UploadInspector(row.size, row.contentType);
      const interrupted = () => {
        if (!upload.body.readableEnded) inspector.destroy(badRequest('The upload was interrupted before it finished.'));
      };
      upload.body.once('aborted', interrupted);
      upload.body.once('error', interrupted);
      upload.body.once('close', interrupted);
      upload.body.pipe(inspector);
      try {
        await storage.put(row.key, inspector, { contentType: row.contentType });
        if (inspector.failure) throw inspector.failure;
      } catch (err) {
        upload.body.unpipe(inspector);
        upload.body.resume(); // drain what the client still sends, so it can read the answer
        await storage.delete(row.key).catch(() => undefined);
        await db.update(files).set({ status: 'PENDING' }).where(eq(files.id, row.id));
        throw inspector.failure ?? err;
      } finally {
        upload.body.off('aborted', interrupted);
        upload.body.off('error', interrupted);
        upload.body.off('close', interrupted);
      }
      const [ready] = await db
        .update(files)
        .set({ status: 'READY', size: inspector.bytes, sha256: inspector.sha256, readyAt: clock.now() })
        .where(eq(files.id, row.id))
        .returning();
      storageUsed.forget(row.ownerId);
      return toRecord(ready!);
    },

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

    findReadyByKey,

    /** The stored bytes of a ready file, or the inclusive `range` of them. */
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
    async saveBytes(input: SaveBytesInput): Promise<{ id: string; key: string; url: string; contentType: string; size: number }> {
      if (input.body.length === 0) throw new Error('saveBytes needs at least one byte');
      const format = sniffFormat(input.body);
      const declared = canonicalContentType(baseContentType(input.contentType));
      const contentType = format && !formatMatches(declared, format) ? FORMAT_CONTENT_TYPE[format] : declared;
      const id = newId();
      const key = newKey(input.kind, id, contentType);
      const now = clock.now();
      await storage.put(key, input.body, { contentType });
      try {
        await db.insert(files).values({
          id,
          ownerId: input.ownerId,
          kind: input.kind,
          status: 'READY',
          key,
          contentType,
          size: input.body.length,
          sha256: createHash('sha256').update(input.body).digest('base64url'),
          filename: input.filename ?? null,
          sourceUrl: input.sourceUrl ? stripUrlCredentials(input.sourceUrl) : null,
          createdAt: now,
          readyAt: now,
        });
      } catch (err) {
        await storage.delete(key).catch(() => undefined);
        throw err;
      }
      storageUsed.forget(input.ownerId);
      return { id, key, url: rawUrl(key), contentType, size: input.body.length };
    },

    /** Whether a URL points at one of our raw files (absolute under PUBLIC_BASE_URL, or relative). */
    isRawUrl(url: string): boolean {
      try {
        return ownKeyOf(url) !== null;
      } catch {
        return false;
      }
    },

    resolveRawUrl,

    /**
     * Reads a media source given by a user: a `data:` URL, one of our raw-file URLs, or a remote URL fetched through the
     * SSRF-safe fetcher (defaults 8 s, 15 MB). Anything unreadable is a 400 naming what went wrong.
     */
    async readSource(url: string, options: ReadSourceOptions = {}): Promise<SourceContent> {
      const maxBytes = options.maxBytes ?? DEFAULT_FETCH_MAX_BYTES;
      const what = options.what ?? 'the file';
      let bytes: Buffer;
      let declared: string | null;
      let origin: SourceContent['origin'];
      if (/^data:/i.test(url)) {
        ({ bytes, contentType: declared } = parseDataUrl(url, maxBytes));
        origin = 'data';
      } else {
        const own = await resolveRawUrl(url, { maxBytes });
        if (own) {
          ({ bytes, contentType: declared } = own);
          origin = 'file';
        } else if (/^https?:\/\//i.test(url)) {
          try {
            const response = await fetcher(url, { maxBytes, timeoutMs: options.timeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS });
            bytes = response.body;
            declared = response.contentType ? baseContentType(response.contentType) : null;
          } catch (err) {
            if (err instanceof FetchError) throw unreadableRemoteFile(err, what);
            throw err;
          }
          origin = 'remote';
        } else {
          throw badRequest(`${cap(what)} must be a data: URL, an https URL or a ${RAW_PATH}<key> URL.`);
        }
      }
      const format = sniffFormat(bytes);
      if (options.accept && (!format || !options.accept.includes(FAMILY[format]))) {
        throw badRequest(`${cap(what)} is not a supported ${options.accept.join(' or ')} file${format ? ` (it is ${format.toUpperCase()})` : ''}.`, {
          detectedFormat: format,
        });
      }
      return { bytes, contentType: format ? FORMAT_CONTENT_TYPE[format] : declared ?? 'application/octet-stream', format, origin };
    },
  };
}

const cap = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

export type FilesService = ReturnType<typeof createFilesService>;
