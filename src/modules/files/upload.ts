import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { and, eq, gt } from 'drizzle-orm';
import { files } from '../../db/schema/files.js';
import { MINUTE_MS } from '../../platform/clock/clock.js';
import { badRequest, conflict, forbidden } from '../../platform/http/errors.js';
import { newId } from '../../platform/ids.js';
import { baseContentType } from '../../platform/media/sniff.js';
import { formatBytes } from '../../platform/net/safe-fetch.js';
import { cap, newKey, type FilesContext } from './context.js';
import { canonicalContentType, KIND_RULES } from './kinds.js';
import type { FileRecord, InitUploadInput, UploadBody } from './types.js';
import { UploadInspector } from './upload-stream.js';

// Uploads in two steps: a single-use, expiring upload URL, then the bytes checked while they stream into storage.

const GENERIC_BINARY = 'application/octet-stream';
export const UPLOAD_URL_TTL_MS = 15 * MINUTE_MS;

const sha256Hex = (value: string) => createHash('sha256').update(value).digest('hex');

const sameHash = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** Step one of an upload: checks the kind's limits and hands out a single-use, expiring upload URL. */
export async function initUpload(ctx: FilesContext, ownerId: string, input: InitUploadInput) {
  const { db, clock, publicBaseUrl, rawUrl } = ctx;
  const rule = KIND_RULES[input.kind];
  const contentType = canonicalContentType(baseContentType(input.contentType));
  if (!rule.contentTypes.map(canonicalContentType).includes(contentType)) {
    throw badRequest(
      `${cap(rule.label)} must be one of ${[...new Set(rule.contentTypes.map(canonicalContentType))].join(', ')} (got "${input.contentType}").`,
      {
        field: 'contentType',
        allowed: rule.contentTypes,
      },
    );
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
}

/** Step two: the bytes arrive at the upload URL; they are checked while they stream into storage. */
export async function completeUpload(ctx: FilesContext, fileId: string, token: string, upload: UploadBody): Promise<FileRecord> {
  const { db, clock, storage, rawUrl } = ctx;
  const row = await ctx.rowById(fileId);
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
  ctx.storageUsed.forget(row.ownerId);
  return ctx.toRecord(ready!);
}
