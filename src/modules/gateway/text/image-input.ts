import { badRequest } from '../../../platform/http/errors.js';
import { readImageSize } from '../../../platform/media/image-size.js';
import type { ImagePart } from '../providers/types.js';

/** Limits of images in text requests (documented in the README): what every supported provider takes. */
export const MAX_IMAGES_PER_REQUEST = 20;
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
export const IMAGE_MEDIA_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const;

const DATA_URL = /^data:([a-z0-9.+/-]+);base64,(.*)$/is;

/**
 * An image the caller sent as inline base64: its type must be one providers read, its bytes at most 5 MB, and its
 * header must say the same type (a mislabelled file is refused here rather than by the provider, after a reservation).
 * `field` names where it came from, in the caller's own terms.
 */
export function imagePartFromBase64(mediaType: string, data: string, field: string, detail?: ImagePart['detail']): ImagePart {
  const type = mediaType.toLowerCase();
  if (!(IMAGE_MEDIA_TYPES as readonly string[]).includes(type)) {
    throw badRequest(`${field} is ${mediaType}; images must be PNG, JPEG, GIF or WebP.`, [
      { field, message: 'must be image/png, image/jpeg, image/gif or image/webp' },
    ]);
  }
  const compact = data.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) throw badRequest(`${field} is not valid base64.`, [{ field, message: 'must be base64' }]);
  const bytes = Buffer.from(compact, 'base64');
  if (bytes.length > MAX_IMAGE_BYTES) {
    throw badRequest(`${field} is ${(bytes.length / 1024 / 1024).toFixed(1)} MB; an image may be at most 5 MB. Resize it first.`, [
      { field, message: 'must be at most 5 MB' },
    ]);
  }
  const size = readImageSize(bytes);
  if (!size) throw badRequest(`${field} does not hold a readable ${mediaType} image.`, [{ field, message: 'must be a PNG, JPEG, GIF or WebP image' }]);
  return { type: 'image', source: { kind: 'base64', mediaType: type, data: compact }, ...(detail ? { detail } : {}), width: size.width, height: size.height };
}

/**
 * An image the caller sent as a URL: a `data:` URL becomes inline bytes; an https URL is passed to the provider, which
 * fetches it itself (the gateway checks its address against the outbound policy before the call, see `prepare.ts`).
 */
export function imagePartFromUrl(url: string, field: string, detail?: ImagePart['detail']): ImagePart {
  const data = DATA_URL.exec(url);
  if (data) return imagePartFromBase64(data[1]!, data[2]!, field, detail);
  if (url.startsWith('data:'))
    throw badRequest(`${field} is a data: URL without base64 content; send data:<type>;base64,<bytes>.`, [{ field, message: 'must be base64' }]);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw badRequest(`${field} is not a URL; send an https URL or a data: URL.`, [{ field, message: 'must be an https or data: URL' }]);
  }
  if (parsed.protocol !== 'https:') throw badRequest(`${field} must use https (or be a data: URL).`, [{ field, message: 'must be an https or data: URL' }]);
  return { type: 'image', source: { kind: 'url', url: parsed.href }, ...(detail ? { detail } : {}) };
}
