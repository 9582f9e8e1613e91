import { bigint, boolean, index, integer, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { users } from './auth.js';
import { createdAt, idColumn, tz } from './columns.js';

/**
 * One password-reset attempt: a 4-digit OTP mailed to the user, then (after the right OTP) a reset token.
 * Status moves OTP_ISSUED -> TOKEN_ISSUED -> COMPLETED, or ends OTP_DEAD (5 wrong codes) or SUPERSEDED (a newer OTP).
 */
export const passwordResets = pgTable(
  'password_resets',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    status: text('status', { enum: ['OTP_ISSUED', 'OTP_DEAD', 'TOKEN_ISSUED', 'COMPLETED', 'SUPERSEDED'] }).notNull(),
    otpHash: text('otp_hash').notNull(),
    otpAttempts: integer('otp_attempts').notNull().default(0),
    otpExpiresAt: tz('otp_expires_at').notNull(),
    resetTokenHash: text('reset_token_hash'),
    resetTokenExpiresAt: tz('reset_token_expires_at'),
    createdAt: createdAt(),
    completedAt: tz('completed_at'),
  },
  (t) => [index('password_resets_user_idx').on(t.userId, t.createdAt), uniqueIndex('password_resets_token_key').on(t.resetTokenHash)],
);

/** Links mailed to confirm an address: the account's own (VERIFY_EMAIL) or a new one (CHANGE_EMAIL). */
export const emailTokens = pgTable(
  'email_tokens',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    purpose: text('purpose', { enum: ['VERIFY_EMAIL', 'CHANGE_EMAIL'] }).notNull(),
    /** The address the link was sent to (for CHANGE_EMAIL, the new address). */
    email: text('email').notNull(),
    tokenHash: text('token_hash').notNull(),
    createdAt: createdAt(),
    expiresAt: tz('expires_at').notNull(),
    usedAt: tz('used_at'),
  },
  (t) => [uniqueIndex('email_tokens_hash_key').on(t.tokenHash), index('email_tokens_user_idx').on(t.userId, t.purpose, t.createdAt)],
);

/** Account preferences; a user without a row has the defaults. */
export const userPreferences = pgTable('user_preferences', {
  userId: uuid('user_id')
    .primaryKey()
    .references(() => users.id),
  locale: text('locale').notNull().default('en'),
  timezone: text('timezone').notNull().default('UTC'),
  theme: text('theme', { enum: ['light', 'dark', 'system'] })
    .notNull()
    .default('system'),
  profileVisibility: text('profile_visibility', { enum: ['PUBLIC', 'FOLLOWERS_ONLY', 'PRIVATE'] })
    .notNull()
    .default('PUBLIC'),
  allowDmFromAnyone: boolean('allow_dm_from_anyone').notNull().default(true),
  defaultGenerationVisibility: text('default_generation_visibility', { enum: ['PRIVATE', 'UNLISTED', 'PUBLIC'] })
    .notNull()
    .default('PRIVATE'),
  updatedAt: tz('updated_at').notNull().defaultNow(),
});

/** A user blocking or muting another. */
export const userBlocks = pgTable(
  'user_blocks',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    blockedUserId: uuid('blocked_user_id')
      .notNull()
      .references(() => users.id),
    kind: text('kind', { enum: ['BLOCK', 'MUTE'] }).notNull(),
    reason: text('reason'),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('user_blocks_pair_key').on(t.userId, t.blockedUserId), index('user_blocks_blocked_idx').on(t.blockedUserId)],
);

/** A request for an archive of the account's data, built by a background job. */
export const dataExports = pgTable(
  'data_exports',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    status: text('status', { enum: ['QUEUED', 'RUNNING', 'READY', 'FAILED', 'EXPIRED'] }).notNull(),
    storageKey: text('storage_key'),
    sizeBytes: bigint('size_bytes', { mode: 'number' }),
    error: text('error'),
    createdAt: createdAt(),
    startedAt: tz('started_at'),
    completedAt: tz('completed_at'),
    expiresAt: tz('expires_at'),
  },
  (t) => [index('data_exports_user_idx').on(t.userId, t.createdAt)],
);
