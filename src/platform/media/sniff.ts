/** Media formats recognised from their first bytes ("magic numbers"). */
export type MediaFormat = 'png' | 'jpeg' | 'gif' | 'webp' | 'wav' | 'mp3' | 'ogg' | 'flac' | 'aac' | 'mp4' | 'quicktime' | 'webm';

/** The canonical content type of each format. */
export const FORMAT_CONTENT_TYPE: Record<MediaFormat, string> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  wav: 'audio/wav',
  mp3: 'audio/mpeg',
  ogg: 'audio/ogg',
  flac: 'audio/flac',
  aac: 'audio/aac',
  mp4: 'video/mp4',
  quicktime: 'video/quicktime',
  webm: 'video/webm',
};

/** Which formats a declared content type may contain (aliases included). */
const CONTENT_TYPE_FORMATS: Record<string, MediaFormat[]> = {
  'image/png': ['png'],
  'image/jpeg': ['jpeg'],
  'image/jpg': ['jpeg'],
  'image/pjpeg': ['jpeg'],
  'image/gif': ['gif'],
  'image/webp': ['webp'],
  'audio/wav': ['wav'],
  'audio/wave': ['wav'],
  'audio/x-wav': ['wav'],
  'audio/vnd.wave': ['wav'],
  'audio/mpeg': ['mp3'],
  'audio/mp3': ['mp3'],
  'audio/ogg': ['ogg'],
  'audio/opus': ['ogg'],
  'audio/flac': ['flac'],
  'audio/x-flac': ['flac'],
  'audio/aac': ['aac', 'mp4'],
  'audio/mp4': ['mp4'],
  'audio/x-m4a': ['mp4'],
  'audio/webm': ['webm'],
  'video/mp4': ['mp4'],
  'video/quicktime': ['quicktime', 'mp4'],
  'video/webm': ['webm'],
};

/** Bytes that must be at hand to sniff every format above. */
export const SNIFF_BYTES = 64;

const ascii = (bytes: Uint8Array, at: number, text: string) => {
  if (bytes.length < at + text.length) return false;
  for (let i = 0; i < text.length; i++) if (bytes[at + i] !== text.charCodeAt(i)) return false;
  return true;
};

/** The format the bytes start with, or null when unknown (too few bytes, or not a media file we accept). */
export function sniffFormat(bytes: Uint8Array): MediaFormat | null {
  const b = bytes;
  if (b.length >= 8 && b[0] === 0x89 && ascii(b, 1, 'PNG\r\n\x1a\n')) return 'png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg';
  if (ascii(b, 0, 'GIF87a') || ascii(b, 0, 'GIF89a')) return 'gif';
  if (ascii(b, 0, 'RIFF') && ascii(b, 8, 'WEBP')) return 'webp';
  if (ascii(b, 0, 'RIFF') && ascii(b, 8, 'WAVE')) return 'wav';
  if (ascii(b, 0, 'OggS')) return 'ogg';
  if (ascii(b, 0, 'fLaC')) return 'flac';
  if (ascii(b, 4, 'ftyp')) return ascii(b, 8, 'qt  ') ? 'quicktime' : 'mp4';
  if (['moov', 'mdat', 'wide', 'free', 'skip'].some((type) => ascii(b, 4, type))) return 'quicktime';
  if (b.length >= 4 && b[0] === 0x1a && b[1] === 0x45 && b[2] === 0xdf && b[3] === 0xa3) {
    // EBML: Matroska or WebM; the DocType string names which.
    const head = Buffer.from(b.subarray(0, Math.min(b.length, SNIFF_BYTES))).toString('latin1');
    return head.includes('webm') ? 'webm' : null;
  }
  if (ascii(b, 0, 'ID3')) return 'mp3';
  if (b.length >= 2 && b[0] === 0xff && (b[1]! & 0xf6) === 0xf0) return 'aac'; // ADTS
  if (b.length >= 2 && b[0] === 0xff && (b[1]! & 0xe0) === 0xe0) return 'mp3'; // MPEG audio frame sync
  return null;
}

/** The declared content type without parameters, lower-cased (`Image/PNG; q=1` → `image/png`). */
export const baseContentType = (contentType: string): string => contentType.split(';')[0]!.trim().toLowerCase();

/** Whether bytes of `format` may be served as `contentType`. */
export function formatMatches(contentType: string, format: MediaFormat): boolean {
  return CONTENT_TYPE_FORMATS[baseContentType(contentType)]?.includes(format) ?? false;
}

/** The content types this module knows, for validation messages. */
export const KNOWN_MEDIA_CONTENT_TYPES = Object.keys(CONTENT_TYPE_FORMATS);
