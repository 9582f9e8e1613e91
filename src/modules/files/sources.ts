import { badRequest } from '../../platform/http/errors.js';
import { formatBytes } from '../../platform/net/safe-fetch.js';
import { baseContentType } from '../../platform/media/sniff.js';

export interface DataUrlContent {
  contentType: string | null;
  bytes: Buffer;
}

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** Decodes a `data:` URL (RFC 2397), refusing one over `maxBytes` before decoding it. */
export function parseDataUrl(url: string, maxBytes: number): DataUrlContent {
  const comma = url.indexOf(',');
  if (!/^data:/i.test(url) || comma < 0) throw badRequest('The data: URL is malformed. Use data:<type>;base64,<data>.');
  const meta = url.slice(5, comma);
  const payload = url.slice(comma + 1);
  const parts = meta.split(';').map((p) => p.trim());
  const isBase64 = parts.slice(1).some((p) => p.toLowerCase() === 'base64');
  const contentType = parts[0] ? baseContentType(parts[0]) : null;
  let bytes: Buffer;
  if (isBase64) {
    const clean = payload.replace(/\s+/g, '');
    if (!BASE64.test(clean)) throw badRequest('The data: URL is not valid base64.');
    if (Math.floor((clean.length * 3) / 4) - 2 > maxBytes) throw tooBig(maxBytes);
    bytes = Buffer.from(clean, clean.includes('-') || clean.includes('_') ? 'base64url' : 'base64');
  } else {
    let decoded: string;
    try {
      decoded = decodeURIComponent(payload);
    } catch {
      throw badRequest('The data: URL is not validly percent-encoded.');
    }
    bytes = Buffer.from(decoded, 'latin1');
  }
  if (bytes.length > maxBytes) throw tooBig(maxBytes);
  if (bytes.length === 0) throw badRequest('The data: URL is empty.');
  return { contentType, bytes };
}

const tooBig = (maxBytes: number) => badRequest(`The data: URL holds more than ${formatBytes(maxBytes)}.`, { maxBytes });
