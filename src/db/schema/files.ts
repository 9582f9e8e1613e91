import { bigint, index, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { users } from './auth.js';
import { createdAt, idColumn, tz } from './columns.js';

export const FILE_KINDS = ['AVATAR', 'IMAGE', 'INIT_IMAGE', 'VIDEO', 'AUDIO'] as const;
export type FileKind = (typeof FILE_KINDS)[number];

/**
 * Every stored file: uploads (two steps: PENDING with a single-use upload token, then READY) and media the
 * service saves itself (READY at once). The storage key is unguessable and never reused, so its bytes never change.
 */
export const files = pgTable(
  'files',
  {
    id: idColumn(),
    ownerId: uuid('owner_id')
      .notNull()
      .references(() => users.id),
    kind: text('kind', { enum: FILE_KINDS }).notNull(),
    status: text('status', { enum: ['PENDING', 'UPLOADING', 'READY'] }).notNull(),
    key: text('key').notNull(),
    contentType: text('content_type').notNull(),
    /** Declared size while PENDING; the stored size once READY. */
    size: bigint('size', { mode: 'number' }).notNull(),
    /** SHA-256 of the bytes (base64url), the strong ETag. */
    sha256: text('sha256'),
    filename: text('filename'),
    /** Where the bytes were copied from, with credentials stripped; null for uploads. */
    sourceUrl: text('source_url'),
    /** SHA-256 (hex) of the upload token; cleared once the upload succeeds. */
    uploadTokenHash: text('upload_token_hash'),
    uploadExpiresAt: tz('upload_expires_at'),
    createdAt: createdAt(),
    readyAt: tz('ready_at'),
  },
  (t) => [uniqueIndex('files_key_key').on(t.key), index('files_owner_idx').on(t.ownerId, t.createdAt)],
);
