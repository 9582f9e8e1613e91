import { sql } from 'drizzle-orm';
import { boolean, index, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tz } from './columns.js';

export const users = pgTable(
  'users',
  {
    id: idColumn(),
    /** Stored lower-cased, so uniqueness is case-insensitive. */
    email: text('email').notNull(),
    emailVerified: boolean('email_verified').notNull().default(false),
    passwordHash: text('password_hash').notNull(),
    name: text('name'),
    handle: text('handle').notNull(),
    avatarUrl: text('avatar_url'),
    bio: text('bio'),
    role: text('role', { enum: ['USER', 'ADMIN', 'SUPER_ADMIN'] }).notNull().default('USER'),
    status: text('status', { enum: ['ACTIVE', 'DELETED'] }).notNull().default('ACTIVE'),
    createdAt: createdAt(),
    updatedAt: tz('updated_at').notNull().defaultNow(),
    deletedAt: tz('deleted_at'),
  },
  (t) => [
    uniqueIndex('users_email_active_key').on(t.email).where(sql`${t.status} <> 'DELETED'`),
    uniqueIndex('users_handle_lower_key').on(sql`lower(${t.handle})`),
  ],
);

/** One row per signed-in device. */
export const sessions = pgTable(
  'sessions',
  {
    id: idColumn(),
    userId: uuid('user_id').notNull().references(() => users.id),
    device: text('device').notNull(),
    userAgent: text('user_agent'),
    ipAddress: text('ip_address'),
    location: text('location'),
    createdAt: createdAt(),
    lastSeenAt: tz('last_seen_at').notNull().defaultNow(),
    revokedAt: tz('revoked_at'),
  },
  (t) => [index('sessions_user_idx').on(t.userId, t.revokedAt)],
);

export const refreshTokens = pgTable(
  'refresh_tokens',
  {
    id: idColumn(),
    sessionId: uuid('session_id').notNull().references(() => sessions.id),
    userId: uuid('user_id').notNull().references(() => users.id),
    tokenHash: text('token_hash').notNull(),
    expiresAt: tz('expires_at').notNull(),
    createdAt: createdAt(),
    revokedAt: tz('revoked_at'),
    revokedReason: text('revoked_reason', { enum: ['ROTATED', 'LOGOUT', 'REUSE_DETECTED', 'SESSION_REVOKED', 'PASSWORD_RESET', 'ACCOUNT_DELETED', 'NEW_LOGIN'] }),
  },
  (t) => [uniqueIndex('refresh_tokens_hash_key').on(t.tokenHash), index('refresh_tokens_session_idx').on(t.sessionId)],
);

/** Failed sign-in attempts, the input of the lockout rule. */
export const loginFailures = pgTable(
  'login_failures',
  {
    id: idColumn(),
    userId: uuid('user_id'),
    email: text('email').notNull(),
    ipAddress: text('ip_address'),
    createdAt: createdAt(),
  },
  (t) => [index('login_failures_email_idx').on(t.email, t.createdAt), index('login_failures_user_idx').on(t.userId, t.createdAt)],
);

/** An active lock, keyed `user:<id>` or `email:<address>`. */
export const loginLocks = pgTable('login_locks', {
  key: text('key').primaryKey(),
  lockedUntil: tz('locked_until').notNull(),
});

export const securityEvents = pgTable(
  'security_events',
  {
    id: idColumn(),
    userId: uuid('user_id').notNull().references(() => users.id),
    kind: text('kind', {
      enum: [
        'LOGIN_SUCCESS', 'LOGIN_FAILED', 'LOGIN_LOCKED', 'LOGOUT', 'PASSWORD_CHANGED', 'PASSWORD_RESET', 'EMAIL_CHANGED',
        'TWO_FA_ENABLED', 'TWO_FA_DISABLED', 'TWO_FA_FAILED', 'SESSION_REVOKED', 'IMPERSONATED_BY_ADMIN',
      ],
    }).notNull(),
    ipAddress: text('ip_address'),
    userAgent: text('user_agent'),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull().default({}),
    createdAt: createdAt(),
  },
  (t) => [index('security_events_user_idx').on(t.userId, t.createdAt)],
);
