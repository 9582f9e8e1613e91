import { FORMAT_CONTENT_TYPE, baseContentType, sniffFormat } from '../../../../platform/media/sniff.js';
import { FetchError } from '../../../../platform/net/outbound-policy.js';
import type { SafeFetcher } from '../../../../platform/net/safe-fetch.js';
import { UpstreamError } from '../types.js';
import type { MediaFile, MediaOutput } from './media-types.js';

export interface FetchMediaOptions {
  /** Used when neither the bytes nor the provider say what they are. */
  fallbackMimeType: string;
  /** Largest result accepted (default 200 MB: a video). */
  maxBytes?: number;
  /** Time for the whole download (default 120 s). */
  timeoutMs?: number;
}

export const DEFAULT_MEDIA_MAX_BYTES = 200 * 1024 * 1024;
export const DEFAULT_MEDIA_TIMEOUT_MS = 120_000;

/** The content type the bytes really have: sniffed first, then what was declared, then the fallback. */
export function mediaTypeOf(bytes: Buffer, declared: string | null, fallback: string): string {
  const format = sniffFormat(bytes);
  if (format) return FORMAT_CONTENT_TYPE[format];
  const base = declared ? baseContentType(declared) : '';
  return /^(image|video|audio)\//.test(base) ? base : fallback;
}

/**
 * The bytes of a provider's result. URL results (signed, expiring links on the provider's CDN) are downloaded through
 * the SSRF-safe fetcher with a time and size cap; a failed download is a provider failure (`server`), reported with
 * the fetch status, so the caller can retry or refund.
 */
export async function fetchMediaOutput(fetcher: SafeFetcher, output: MediaOutput, options: FetchMediaOptions): Promise<MediaFile> {
  if (output.kind === 'bytes') return { bytes: output.bytes, mimeType: mediaTypeOf(output.bytes, output.mimeType, options.fallbackMimeType) };
  try {
    const response = await fetcher(output.url, {
      timeoutMs: options.timeoutMs ?? DEFAULT_MEDIA_TIMEOUT_MS,
      maxBytes: options.maxBytes ?? DEFAULT_MEDIA_MAX_BYTES,
    });
    if (response.body.length === 0) throw new UpstreamError('server', "The provider's result file is empty.", response.status, 'empty_result');
    return { bytes: response.body, mimeType: mediaTypeOf(response.body, response.contentType ?? output.mimeType, output.mimeType ?? options.fallbackMimeType) };
  } catch (err) {
    if (err instanceof UpstreamError) throw err;
    if (err instanceof FetchError) {
      const kind = err.reason === 'TIMEOUT' ? 'timeout' : 'server';
      throw new UpstreamError(kind, `Could not download the provider's result: ${err.message}`, err.status, `download_${err.reason.toLowerCase()}`);
    }
    throw err;
  }
}
