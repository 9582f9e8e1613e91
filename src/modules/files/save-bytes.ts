import { createHash } from 'node:crypto';
import { files } from '../../db/schema/files.js';
import { newId } from '../../platform/ids.js';
import { baseContentType, FORMAT_CONTENT_TYPE, formatMatches, sniffFormat } from '../../platform/media/sniff.js';
import { stripUrlCredentials } from '../../platform/net/url-credentials.js';
import { newKey, type FilesContext } from './context.js';
import { canonicalContentType } from './kinds.js';
import type { SaveBytesInput } from './types.js';

/**
 * Stores bytes the service produced or copied (provider media). The content type is taken from the bytes when
 * they reveal it; a source URL is recorded without credentials.
 */
export async function saveBytes(
  ctx: FilesContext,
  input: SaveBytesInput,
): Promise<{ id: string; key: string; url: string; contentType: string; size: number }> {
  const { db, clock, storage } = ctx;
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
  ctx.storageUsed.forget(input.ownerId);
  return { id, key, url: ctx.rawUrl(key), contentType, size: input.body.length };
}
