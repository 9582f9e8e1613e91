import { buffer } from 'node:stream/consumers';
import { and, eq, inArray } from 'drizzle-orm';
import { files } from '../../db/schema/files.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { StoredObjectMissing } from '../../platform/storage/storage.js';
import type { FilesContext } from './context.js';

/**
 * Files another module stored through `saveBytes` and keeps by id (a stored response's images): read back whole, and
 * removed with what refers to them.
 */

/** The bytes of a READY file, or null when the file or its bytes are gone. */
export async function readFileBytes(ctx: FilesContext, id: string): Promise<{ bytes: Buffer; contentType: string } | null> {
  const row = await ctx.rowById(id);
  if (!row || row.status !== 'READY') return null;
  try {
    return { bytes: await buffer(await ctx.storage.read(row.key)), contentType: row.contentType };
  } catch (err) {
    if (err instanceof StoredObjectMissing) return null;
    throw err;
  }
}

/**
 * Deletes the files' rows in `handle`, then their bytes, best effort (bytes that cannot be deleted stay under a key no
 * row names). In a caller's transaction the bytes are not waited for: a storage in the database may need a connection
 * the transaction holds (PGlite has one), so they go when it ends; if it rolls back, its rows name bytes that are gone.
 */
export async function removeFiles(ctx: FilesContext, ids: readonly string[], handle: DbOrTx = ctx.db): Promise<number> {
  const valid = ids.filter((id) => /^[0-9a-f-]{36}$/i.test(id));
  if (valid.length === 0) return 0;
  const removed = await handle
    .delete(files)
    .where(and(inArray(files.id, valid), eq(files.status, 'READY')))
    .returning({ key: files.key, ownerId: files.ownerId });
  const bytesGone = Promise.all(removed.map((file) => ctx.storage.delete(file.key).catch(() => undefined)));
  if (handle === ctx.db) await bytesGone;
  for (const ownerId of new Set(removed.map((file) => file.ownerId))) ctx.storageUsed.forget(ownerId);
  return removed.length;
}
