import { index, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { users } from './auth.js';
import { createdAt, idColumn, tz } from './columns.js';

/** A user's API key for server-to-server calls on /v1/ai/*. Only the SHA-256 of the raw key is stored. */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: idColumn(),
    userId: uuid('user_id').notNull().references(() => users.id),
    label: text('label').notNull(),
    keyHash: text('key_hash').notNull(),
    /** The last 4 characters of the raw key. */
    keyPrefix: text('key_prefix').notNull(),
    scopes: text('scopes').array().notNull(),
    expiresAt: tz('expires_at'),
    lastUsedAt: tz('last_used_at'),
    createdAt: createdAt(),
    revokedAt: tz('revoked_at'),
  },
  (t) => [uniqueIndex('api_keys_hash_key').on(t.keyHash), index('api_keys_user_idx').on(t.userId, t.createdAt)],
);
