/** HTTP semantics for serving stored bytes (RFC 9110: Range, conditional requests). Pure functions of header values. */

export type RangeDecision = { kind: 'full' } | { kind: 'partial'; start: number; end: number } | { kind: 'unsatisfiable' };

/**
 * Interprets a Range header for a representation of `size` bytes. One byte range is served as 206; a malformed
 * header, another unit or several ranges are ignored (the whole file, 200), as RFC 9110 allows; a well-formed range
 * that lies outside the file is unsatisfiable (416).
 */
export function parseRange(header: string | undefined, size: number): RangeDecision {
  if (header === undefined) return { kind: 'full' };
  const match = /^\s*bytes\s*=\s*(.+)$/i.exec(header);
  if (!match) return { kind: 'full' };
  const specs = match[1]!.split(',').map((s) => s.trim());
  if (specs.length !== 1) return { kind: 'full' };
  const spec = /^(\d*)\s*-\s*(\d*)$/.exec(specs[0]!);
  if (!spec) return { kind: 'full' };
  const [, first, last] = spec as unknown as [string, string, string];
  if (first === '' && last === '') return { kind: 'full' };
  if (first === '') {
    // Suffix range: the last N bytes.
    const length = Number(last);
    if (!Number.isSafeInteger(length)) return { kind: 'full' };
    if (length === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'partial', start: Math.max(0, size - length), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Number(last);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end)) return { kind: 'full' };
  if (last !== '' && end < start) return { kind: 'full' }; // an invalid range-spec: ignore the header
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'partial', start, end: Math.min(end, size - 1) };
}

const opaque = (tag: string) => tag.trim().replace(/^W\//, '');

/** If-None-Match with the weak comparison (a list of tags or `*`). */
export function noneMatch(header: string | undefined, etag: string): boolean | null {
  if (header === undefined) return null;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => opaque(tag) === opaque(etag));
}

/** HTTP dates have whole seconds; compare at that precision. */
const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

/** Whether a GET with these validators may answer 304 Not Modified. If-None-Match takes precedence over If-Modified-Since. */
export function notModified(headers: { ifNoneMatch?: string; ifModifiedSince?: string }, etag: string, lastModified: Date): boolean {
  const tagged = noneMatch(headers.ifNoneMatch, etag);
  if (tagged !== null) return tagged;
  if (headers.ifModifiedSince === undefined) return false;
  const since = Date.parse(headers.ifModifiedSince);
  return Number.isFinite(since) && seconds(lastModified) <= Math.floor(since / 1000);
}

/** If-Range: the Range applies only when the validator still matches (a strong ETag, or the exact Last-Modified date). */
export function rangeStillValid(ifRange: string | undefined, etag: string, lastModified: Date): boolean {
  if (ifRange === undefined) return true;
  const value = ifRange.trim();
  if (value.startsWith('"') || value.startsWith('W/')) return !value.startsWith('W/') && value === etag;
  const date = Date.parse(value);
  return Number.isFinite(date) && Math.floor(date / 1000) === seconds(lastModified);
}
