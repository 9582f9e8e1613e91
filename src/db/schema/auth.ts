import { sql } from 'drizzle-orm';
import { boolean, check, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tz } from './columns.js';

/** The service's own accounts (the admin playground's identity): one row per kind, created by the service itself. */
export const INTERNAL_ACCOUNT_KINDS = ['PLAYGROUND'] as const;
export type InternalAccountKind = (typeof INTERNAL_ACCOUNT_KINDS)[number];

/** The stored "hash" of an account without a password: not a PHC string, so no password ever verifies against it. */
export const NO_PASSWORD = '!no-password';

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
    role: text('role', { enum: ['USER', 'ADMIN', 'SUPER_ADMIN'] })
      .notNull()
      .default('USER'),
    /** SUSPENDED: an operator stopped the account (no sign-in, sessions revoked); it keeps its email and handle. */
    status: text('status', { enum: ['ACTIVE', 'SUSPENDED', 'DELETED'] })
      .notNull()
      .default('ACTIVE'),
    /**
     * The role of the operator who suspended the account (the CLI counts as a SUPER_ADMIN), so only an operator of at
     * least that rank lifts it; null when not suspended, or suspended before this was recorded.
     */
    suspendedByRole: text('suspended_by_role', { enum: ['ADMIN', 'SUPER_ADMIN', 'CLI'] }),
    createdAt: createdAt(),
    updatedAt: tz('updated_at').notNull().defaultNow(),
    deletedAt: tz('deleted_at'),
    /**
     * Set only by the service when it creates one of its own accounts (never by sign-up, identity-provider sign-in or
     * operators), and how the service finds that account: never by its email. Such an account cannot sign in.
     */
    internalKind: text('internal_kind', { enum: INTERNAL_ACCOUNT_KINDS }),
  },
  (t) => [
    uniqueIndex('users_email_active_key')
      .on(t.email)
      .where(sql`${t.status} <> 'DELETED'`),
    uniqueIndex('users_handle_lower_key').on(sql`lower(${t.handle})`),
    uniqueIndex('users_internal_kind_key')
      .on(t.internalKind)
      .where(sql`${t.internalKind} IS NOT NULL`),
    // The admin list, newest accounts first.
    index('users_created_idx').on(t.createdAt, t.id),
    check('users_internal_no_password', sql`${t.internalKind} IS NULL OR ${t.passwordHash} = ${sql.raw(`'${NO_PASSWORD}'`)}`),
  ],
);

/** One row per signed-in device. */
export const sessions = pgTable(
  'sessions',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
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
    sessionId: uuid('session_id')
      .notNull()
      .references(() => sessions.id),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    tokenHash: text('token_hash').notNull(),
    expiresAt: tz('expires_at').notNull(),
    createdAt: createdAt(),
    revokedAt: tz('revoked_at'),
    revokedReason: text('revoked_reason', {
      enum: ['ROTATED', 'LOGOUT', 'REUSE_DETECTED', 'SESSION_REVOKED', 'PASSWORD_RESET', 'ACCOUNT_DELETED', 'NEW_LOGIN', 'ACCOUNT_SUSPENDED'],
    }),
  },
  (t) => [uniqueIndex('refresh_tokens_hash_key').on(t.tokenHash), index('refresh_tokens_session_idx').on(t.sessionId)],
);

/**
 * The login lockout, one row per key (`email:<address>` or `user:<id>`): the attempts counted in the sliding window
 * (each one taken before its password or code is checked; a right one gives its place back) and the lock, if any.
 */
export const loginAttempts = pgTable('login_attempts', {
  key: text('key').primaryKey(),
  /** When the counted attempts were made, oldest first; never more than the threshold. */
  attempts: tz('attempts')
    .array()
    .notNull()
    .default(sql`'{}'::timestamptz[]`),
  /** Whether the latest attempt was let through: written by the counting upsert so that its RETURNING can tell. */
  admitted: boolean('admitted').notNull().default(true),
  lockedUntil: tz('locked_until'),
});

export const securityEvents = pgTable(
  'security_events',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    kind: text('kind', {
      enum: [
        'LOGIN_SUCCESS',
        'LOGIN_FAILED',
        'LOGIN_LOCKED',
        'LOGOUT',
        'PASSWORD_CHANGED',
        'PASSWORD_RESET',
        'EMAIL_CHANGED',
        'TWO_FA_ENABLED',
        'TWO_FA_DISABLED',
        'TWO_FA_FAILED',
        'SESSION_REVOKED',
        'IMPERSONATED_BY_ADMIN',
      ],
    }).notNull(),
    ipAddress: text('ip_address'),
    userAgent: text('user_agent'),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull().default({}),
    createdAt: createdAt(),
  },
  (t) => [index('security_events_user_idx').on(t.userId, t.createdAt, t.id)],
);

/** TOTP two-factor of a user: the row exists from setup on; `enabledAt` set means two-factor is on. */
export const twoFactor = pgTable('two_factor', {
  userId: uuid('user_id')
    .primaryKey()
    .references(() => users.id),
  /** Base32 TOTP secret (an authenticator app needs the secret itself, so it cannot be hashed). */
  secret: text('secret').notNull(),
  enabledAt: tz('enabled_at'),
  /** The last TOTP time step accepted; a code of this step or an earlier one is never accepted again. */
  lastUsedStep: integer('last_used_step'),
  createdAt: createdAt(),
  updatedAt: tz('updated_at').notNull().defaultNow(),
});

/** Single-use recovery codes, stored as keyed hashes. */
export const recoveryCodes = pgTable(
  'recovery_codes',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    codeHash: text('code_hash').notNull(),
    usedAt: tz('used_at'),
    createdAt: createdAt(),
  },
  (t) => [index('recovery_codes_user_idx').on(t.userId)],
);

/** A pending second step of a login: the 402 challenge token carries its id. */
export const mfaChallenges = pgTable(
  'mfa_challenges',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    failedAttempts: integer('failed_attempts').notNull().default(0),
    createdAt: createdAt(),
    expiresAt: tz('expires_at').notNull(),
    usedAt: tz('used_at'),
  },
  (t) => [index('mfa_challenges_user_idx').on(t.userId)],
);

/** A link between a user and an account at the OpenID Connect identity provider. */
export const userIdentities = pgTable(
  'user_identities',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    issuer: text('issuer').notNull(),
    subject: text('subject').notNull(),
    email: text('email').notNull(),
    createdAt: createdAt(),
    lastUsedAt: tz('last_used_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('user_identities_issuer_subject_key').on(t.issuer, t.subject), index('user_identities_user_idx').on(t.userId)],
);
