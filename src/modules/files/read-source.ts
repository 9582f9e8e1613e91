import { buffer } from 'node:stream/consumers';
import { and, eq } from 'drizzle-orm';
import { files } from '../../db/schema/files.js';
import { badRequest } from '../../platform/http/errors.js';
import { baseContentType, FORMAT_CONTENT_TYPE, sniffFormat } from '../../platform/media/sniff.js';
import { FetchError } from '../../platform/net/outbound-policy.js';
import { DEFAULT_FETCH_MAX_BYTES, DEFAULT_FETCH_TIMEOUT_MS, formatBytes, unreadableRemoteFile } from '../../platform/net/safe-fetch.js';
import { StoredObjectMissing } from '../../platform/storage/storage.js';
import { cap, type FilesContext } from './context.js';
import { FAMILY } from './kinds.js';
import { RAW_PATH } from './raw-urls.js';
import { parseDataUrl } from './sources.js';
import type { FileRecord, ReadSourceOptions, SourceContent } from './types.js';

export async function findReadyByKey(ctx: Pick<FilesContext, 'db' | 'toRecord'>, key: string): Promise<FileRecord | null> {
  const [row] = await ctx.db
    .select()
    .from(files)
    .where(and(eq(files.key, key), eq(files.status, 'READY')));
  return row ? ctx.toRecord(row) : null;
}

/**
 * The bytes behind one of our `/v1/files/raw/<key>` URLs; null when the URL is not ours. A URL of ours that names
 * no stored file is a 400 the caller can show.
 */
export async function resolveRawUrl(
  ctx: FilesContext,
  url: string,
  options: { maxBytes?: number } = {},
): Promise<{ file: FileRecord; bytes: Buffer; contentType: string } | null> {
  const key = ctx.ownKeyOf(url);
  if (key === null) return null;
  const file = await findReadyByKey(ctx, key);
  if (!file) throw badRequest(`The file ${RAW_PATH}${key} does not exist.`);
  if (options.maxBytes !== undefined && file.size > options.maxBytes) {
    throw badRequest(`The file is ${formatBytes(file.size)}; at most ${formatBytes(options.maxBytes)} can be used here.`);
  }
  const stream = await ctx.storage.read(key).catch((err: unknown) => {
    throw err instanceof StoredObjectMissing ? badRequest(`The file ${RAW_PATH}${key} is no longer stored.`) : err;
  });
  return { file, bytes: await buffer(stream), contentType: file.contentType };
}

/**
 * Reads a media source given by a user: a `data:` URL, one of our raw-file URLs, or a remote URL fetched through the
 * SSRF-safe fetcher (defaults 8 s, 15 MB). Anything unreadable is a 400 naming what went wrong.
 */
export async function readSource(ctx: FilesContext, url: string, options: ReadSourceOptions = {}): Promise<SourceContent> {
  const maxBytes = options.maxBytes ?? DEFAULT_FETCH_MAX_BYTES;
  const what = options.what ?? 'the file';
  let bytes: Buffer;
  let declared: string | null;
  let origin: SourceContent['origin'];
  if (/^data:/i.test(url)) {
    ({ bytes, contentType: declared } = parseDataUrl(url, maxBytes));
    origin = 'data';
  } else {
    const own = await resolveRawUrl(ctx, url, { maxBytes });
    if (own) {
      ({ bytes, contentType: declared } = own);
      origin = 'file';
    } else if (/^https?:\/\//i.test(url)) {
      try {
        const response = await ctx.fetcher(url, { maxBytes, timeoutMs: options.timeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS });
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
  return { bytes, contentType: format ? FORMAT_CONTENT_TYPE[format] : (declared ?? 'application/octet-stream'), format, origin };
}
