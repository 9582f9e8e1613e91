import { eq } from 'drizzle-orm';
import { users } from '../../db/schema/auth.js';
import type { Db, Tx } from '../../platform/db/database.js';
import type { Clock } from '../../platform/clock/clock.js';
import { AppError, unauthorized } from '../../platform/http/errors.js';
import { ACCESS_TOKEN_TTL_SECONDS, type AccessTokens } from '../../platform/auth/access-tokens.js';
import { hashPassword, verifyPassword } from './passwords.js';
import { clearFailures, lockedUntil, recordFailure } from './lockout.js';
import { recordSecurityEvent } from './security-events.js';
import {
  consumeRefreshToken,
  findRefreshToken,
  findSession,
  issueRefreshToken,
  openSession,
  revokeAllSessions,
  revokeSession,
  touchSession,
  type ClientInfo,
} from './sessions.js';
import { findActiveUserByEmail, findActiveUserById, insertUser, normalizeEmail, toAuthUser, toMeUser, type UserRow } from './users.js';

/** Work other modules attach to account creation, run in the sign-up transaction (e.g. the free plan grant). */
export type UserCreatedHook = (tx: Tx, user: UserRow) => Promise<void>;

export interface AuthServiceDeps {
  db: Db;
  clock: Clock;
  tokens: AccessTokens;
  onUserCreated?: UserCreatedHook[];
}

export interface TokenPair {
  accessToken: string;
  refreshToken: string;
  tokenType: 'Bearer';
  expiresIn: number;
}

export type TokenBundle = TokenPair & { user: ReturnType<typeof toAuthUser> };

const invalidCredentials = () => unauthorized('Email or password is incorrect.');
const sessionGone = () => unauthorized('Your session has ended. Sign in again.');

export function createAuthService(deps: AuthServiceDeps) {
  const { db, clock, tokens } = deps;

  const accessTokenFor = (user: Pick<UserRow, 'id' | 'role'>, sessionId: string) =>
    tokens.sign({ sub: user.id, kind: 'access', role: user.role, sid: sessionId }, ACCESS_TOKEN_TTL_SECONDS);

  /** Opens a session for a user who has proved who they are (password, 2FA or identity provider). */
  async function startSession(tx: Db | Tx, user: UserRow, client: ClientInfo, now: Date): Promise<TokenBundle> {
    const { session, refreshToken } = await openSession(tx, user.id, client, now);
    return {
      user: toAuthUser(user),
      accessToken: await accessTokenFor(user, session.id),
      refreshToken,
      tokenType: 'Bearer',
      expiresIn: ACCESS_TOKEN_TTL_SECONDS,
    };
  }

  function lockedError(until: Date, now: Date): AppError {
    const seconds = Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000));
    const minutes = Math.ceil(seconds / 60);
    return new AppError(
      429,
      'LOGIN_LOCKED',
      `Too many failed sign-in attempts. Sign-in is locked; try again in ${minutes} minute${minutes === 1 ? '' : 's'} or reset your password.`,
      { retryAfterSeconds: seconds },
      { 'retry-after': String(seconds) },
    );
  }

  return {
    startSession,

    async signup(input: { email: string; password: string; name?: string }, client: ClientInfo): Promise<TokenBundle> {
      const now = clock.now();
      const passwordHash = await hashPassword(input.password);
      return db.transaction(async (tx) => {
        const user = await insertUser(tx, { email: input.email, passwordHash, name: input.name?.trim() || null, createdAt: now });
        for (const hook of deps.onUserCreated ?? []) await hook(tx, user);
        return startSession(tx, user, client, now);
      });
    },

    async login(input: { email: string; password: string }, client: ClientInfo): Promise<TokenBundle> {
      const now = clock.now();
      const email = normalizeEmail(input.email);
      const user = await findActiveUserByEmail(db, email);
      const until = await lockedUntil(db, email, user?.id ?? null, now);
      if (until) throw lockedError(until, now);

      const valid = await verifyPassword(user?.passwordHash ?? null, input.password);
      if (!valid || !user || user.status !== 'ACTIVE') {
        const lockEnd = await db.transaction(async (tx) => {
          const end = await recordFailure(tx, { email, userId: user?.id ?? null, ip: client.ip }, now);
          if (user) {
            await recordSecurityEvent(tx, { userId: user.id, kind: 'LOGIN_FAILED', client, at: now });
            if (end) await recordSecurityEvent(tx, { userId: user.id, kind: 'LOGIN_LOCKED', client, at: now, metadata: { lockedUntil: end.toISOString() } });
          }
          return end;
        });
        throw lockEnd ? lockedError(lockEnd, now) : invalidCredentials();
      }

      return db.transaction(async (tx) => {
        await clearFailures(tx, email, user.id);
        await recordSecurityEvent(tx, { userId: user.id, kind: 'LOGIN_SUCCESS', client, at: now });
        return startSession(tx, user, client, now);
      });
    },

    async refresh(token: string, client: ClientInfo): Promise<TokenPair> {
      const now = clock.now();
      const stored = await findRefreshToken(db, token);
      if (!stored) throw sessionGone();
      if (stored.revokedAt) {
        // A token that was already used or revoked is being replayed: assume it was stolen.
        await db.transaction(async (tx) => {
          await revokeAllSessions(tx, stored.userId, 'REUSE_DETECTED', now);
          await recordSecurityEvent(tx, { userId: stored.userId, kind: 'SESSION_REVOKED', client, at: now, metadata: { reason: 'REFRESH_TOKEN_REUSE' } });
        });
        throw sessionGone();
      }
      if (stored.expiresAt <= now) throw sessionGone();
      const [session, user] = await Promise.all([findSession(db, stored.sessionId), findActiveUserById(db, stored.userId)]);
      if (!session || session.revokedAt || !user) throw sessionGone();

      const refreshToken = await db.transaction(async (tx) => {
        if (!(await consumeRefreshToken(tx, stored.id, 'ROTATED', now))) return null;
        await touchSession(tx, session.id, client, now);
        return issueRefreshToken(tx, session, now);
      });
      if (!refreshToken) {
        // Lost a race with another refresh of the same token: the same reuse rule applies.
        await revokeAllSessions(db, stored.userId, 'REUSE_DETECTED', now);
        throw sessionGone();
      }
      return { accessToken: await accessTokenFor(user, session.id), refreshToken, tokenType: 'Bearer', expiresIn: ACCESS_TOKEN_TTL_SECONDS };
    },

    /** Ends the session the refresh token belongs to; an unknown or already revoked token is a no-op. */
    async logout(token: string, client: ClientInfo): Promise<void> {
      const now = clock.now();
      const stored = await findRefreshToken(db, token);
      if (!stored || stored.revokedAt) return;
      await db.transaction(async (tx) => {
        await revokeSession(tx, stored.sessionId, 'LOGOUT', now);
        await recordSecurityEvent(tx, { userId: stored.userId, kind: 'LOGOUT', client, at: now });
      });
    },

    /** Makes sure the operator account from ADMIN_EMAIL exists with the SUPER_ADMIN role. */
    async ensureSuperAdmin(email: string, password: string): Promise<'created' | 'promoted' | 'unchanged'> {
      const existing = await findActiveUserByEmail(db, email);
      if (existing) {
        if (existing.role === 'SUPER_ADMIN') return 'unchanged';
        await db.update(users).set({ role: 'SUPER_ADMIN', updatedAt: clock.now() }).where(eq(users.id, existing.id));
        return 'promoted';
      }
      const now = clock.now();
      await db.transaction(async (tx) => {
        const user = await insertUser(tx, { email, passwordHash: await hashPassword(password), name: 'Administrator', role: 'SUPER_ADMIN', emailVerified: true, createdAt: now });
        for (const hook of deps.onUserCreated ?? []) await hook(tx, user);
      });
      return 'created';
    },

    async getActiveUser(userId: string): Promise<UserRow> {
      const user = await findActiveUserById(db, userId);
      if (!user) throw sessionGone();
      return user;
    },

    async updateName(userId: string, name: string) {
      const [row] = await db
        .update(users)
        .set({ name: name.trim(), updatedAt: clock.now() })
        .where(eq(users.id, userId))
        .returning();
      if (!row || row.status !== 'ACTIVE') throw sessionGone();
      return toMeUser(row);
    },
  };
}

export type AuthService = ReturnType<typeof createAuthService>;
