import type { FileKind } from '../../db/schema/files.js';
import type { MediaFormat } from '../../platform/media/sniff.js';

const MB = 1024 * 1024;

export interface KindRule {
  /** Largest upload accepted, in bytes. */
  maxBytes: number;
  /** Content types an upload may declare (lower case, no parameters). */
  contentTypes: readonly string[];
  /** What the kind holds, for messages. */
  label: string;
}

const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'] as const;

/** Per-kind upload limits. */
export const KIND_RULES: Record<FileKind, KindRule> = {
  AVATAR: { maxBytes: 5 * MB, contentTypes: IMAGE_TYPES, label: 'an avatar image' },
  IMAGE: { maxBytes: 25 * MB, contentTypes: IMAGE_TYPES, label: 'an image' },
  INIT_IMAGE: { maxBytes: 15 * MB, contentTypes: ['image/png', 'image/jpeg', 'image/webp'], label: 'a source image' },
  VIDEO: { maxBytes: 200 * MB, contentTypes: ['video/mp4', 'video/webm', 'video/quicktime'], label: 'a video' },
  AUDIO: {
    maxBytes: 50 * MB,
    contentTypes: ['audio/wav', 'audio/x-wav', 'audio/wave', 'audio/mpeg', 'audio/ogg', 'audio/flac', 'audio/aac', 'audio/mp4', 'audio/webm'],
    label: 'an audio file',
  },
};

/** The largest upload of any kind (the schema's bound; each kind has its own, smaller or equal). */
export const MAX_UPLOAD_BYTES = Math.max(...Object.values(KIND_RULES).map((rule) => rule.maxBytes));

/** The file extension a stored key gets for a content type, so downloads open in the right program. */
const EXTENSIONS: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'image/svg+xml': 'svg',
  'audio/wav': 'wav',
  'audio/mpeg': 'mp3',
  'audio/ogg': 'ogg',
  'audio/flac': 'flac',
  'audio/aac': 'aac',
  'audio/mp4': 'm4a',
  'audio/webm': 'weba',
  'video/mp4': 'mp4',
  'video/webm': 'webm',
  'video/quicktime': 'mov',
};

export const extensionFor = (contentType: string): string => EXTENSIONS[contentType] ?? 'bin';

/** Canonical content types of the sniffed formats, as they are stored and served. */
export const CANONICAL_TYPE: Record<string, string> = {
  'audio/x-wav': 'audio/wav',
  'audio/wave': 'audio/wav',
  'audio/vnd.wave': 'audio/wav',
  'image/jpg': 'image/jpeg',
  'image/pjpeg': 'image/jpeg',
  'audio/mp3': 'audio/mpeg',
  'audio/x-flac': 'audio/flac',
  'audio/x-m4a': 'audio/mp4',
};

export const canonicalContentType = (contentType: string): string => CANONICAL_TYPE[contentType] ?? contentType;

/** The broad media family of a sniffed format. */
export const FAMILY: Record<MediaFormat, 'image' | 'audio' | 'video'> = {
  png: 'image',
  jpeg: 'image',
  gif: 'image',
  webp: 'image',
  wav: 'audio',
  mp3: 'audio',
  ogg: 'audio',
  flac: 'audio',
  aac: 'audio',
  mp4: 'video',
  quicktime: 'video',
  webm: 'video',
};
