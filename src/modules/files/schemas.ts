import { Type } from 'typebox';
import { FILE_KINDS } from '../../db/schema/files.js';
import { DateTime, Nullable, StrictObject } from '../../platform/http/schemas.js';
import { MAX_UPLOAD_BYTES } from './kinds.js';

export const FileKindSchema = Type.Enum([...FILE_KINDS], {
  description:
    'AVATAR and IMAGE: PNG/JPEG/WebP/GIF; INIT_IMAGE (source image for image-to-image): PNG/JPEG/WebP; VIDEO: MP4/WebM/QuickTime; AUDIO: WAV/MP3/OGG/FLAC/AAC/M4A/WebM',
});

export const InitUploadBody = StrictObject({
  kind: FileKindSchema,
  contentType: Type.String({ minLength: 3, maxLength: 100, pattern: '^[A-Za-z0-9.+-]+/[A-Za-z0-9.+-]+(\\s*;.*)?$', description: 'e.g. image/png' }),
  size: Type.Integer({ minimum: 1, maximum: MAX_UPLOAD_BYTES, description: 'Exact size in bytes; each kind has its own limit' }),
  filename: Type.Optional(Type.String({ minLength: 1, maxLength: 255, pattern: '^[^/\\\\\\u0000-\\u001f]+$' })),
});

export const InitUploadResponse = Type.Object({
  fileId: Type.String(),
  uploadUrl: Type.String({ description: 'Single-use; authorised by the token in the URL, not by the Authorization header' }),
  method: Type.Literal('PUT'),
  headers: Type.Object({ 'Content-Type': Type.String() }),
  expiresAt: DateTime,
  url: Type.String({ description: 'Where the file will be served once uploaded' }),
});

export const FileResponse = Type.Object({
  id: Type.String(),
  kind: FileKindSchema,
  status: Type.Enum(['PENDING', 'UPLOADING', 'READY']),
  contentType: Type.String(),
  size: Type.Integer(),
  filename: Nullable(Type.String()),
  url: Type.String(),
  createdAt: DateTime,
  readyAt: Nullable(DateTime),
});

export const UploadParams = StrictObject({ fileId: Type.String({ minLength: 1, maxLength: 64 }) });
export const UploadQuery = StrictObject({ token: Type.String({ minLength: 1, maxLength: 200 }) });
export const RawParams = StrictObject({ '*': Type.String({ minLength: 1, maxLength: 512 }) });
