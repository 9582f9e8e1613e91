import { eq } from 'drizzle-orm';
import { users } from '../../db/schema/auth.js';
import type { Db, Tx } from '../../platform/db/database.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import type { ClientInfo } from '../../platform/http/client-info.js';
import { unauthorized } from '../../platform/http/errors.js';
import { ACCESS_TOKEN_TTL_SECONDS, type AccessTokens } from '../../platform/auth/access-tokens.js';
import { hashPassword } from './passwords.js';
import { findOrCreateIdentityUser } from './identities.js';
import type { VerifiedIdentity } from './idp.js';
import { createOpenSessions } from './open-sessions.js';
import { createActiveUsers } from './active-users.js';
import { createTwoFactor } from './two-factor.js';
import { createAuthData } from './data.js';
import { createUserAdmin } from './admin.js';
import { createLogin } from './login.js';
import { recordSecurityEvent } from './security-events.js';
import { createSessionStart, type SignInHook, type TokenBundle, type TokenPair } from './session-start.js';
import { consumeRefreshToken, findRefreshToken, findSession, issueRefreshToken, revokeAllSessions, revokeSession, touchSession } from './sessions.js';
import {
  assertAssignableEmail,
  ensureInternalUser,
  findActiveUserByEmail,
  findActiveUserById,
  insertUser,
  isInternalAccount,
  toMeUser,
  type InternalAccountSpec,
  type UserRow,
} from './users.js';

/** Work other modules attach to account creation, run in the sign-up transaction (e.g. the free plan grant). */
export type UserCreatedHook = (tx: Tx, user: UserRow) => Promise<void>;

export interface AuthServiceDeps {
  db: Db;
  clock: Clock;
  tokens: AccessTokens;
  onUserCreated?: UserCreatedHook[];
  onSignIn?: SignInHook[];
  /** Cross-instance invalidation of the open-sessions cache. */
  events?: EventBus;
}

const sessionGone = () => unauthorized('Your session has ended. Sign in again.');
const SIGNED_OUT_BY_OWNER = new Set<string>(['SESSION_REVOKED', 'PASSWORD_RESET', 'ACCOUNT_DELETED', 'ACCOUNT_SUSPENDED']);

/**
 * Accounts and sessions: sign-up, sign-in (the password and two-factor steps in login.ts, the session handed out in
 * session-start.ts), refresh, sign-out, and the user data and operator tools other modules build on.
 */
export function createAuthService(deps: AuthServiceDeps) {
  const { db, clock, tokens } = deps;
  const twoFactor = createTwoFactor({ db, clock });
  const openSessions = createOpenSessions({ db, events: deps.events });
  const activeUsers = createActiveUsers({ db, events: deps.events });
  const { accessTokenFor, startSession, completeSignIn } = createSessionStart({ tokens, onSignIn: deps.onSignIn });
  const { login, verifyTwoFactor } = createLogin({ db, clock, tokens, twoFactor, completeSignIn });

  return {
    startSession,
    twoFactor,
    /** Users, sessions and the security history, for the modules that build on accounts (see data.ts). */
    data: createAuthData({ db, openSessions, activeUsers }),
    /** The operators' side of accounts: search, roles, suspension, impersonation, creating operators (see admin.ts). */
    admin: createUserAdmin({ db, clock, tokens, openSessions, activeUsers, onUserCreated: deps.onUserCreated ?? [] }),
    /** Whether an access token's session is still open (the auth plugin asks on every request). */
    sessionOpen: openSessions.isOpen,

    async signup(input: { email: string; password: string; name?: string }, client: ClientInfo): Promise<TokenBundle> {
      assertAssignableEmail(input.email);
      const now = clock.now();
      const passwordHash = await hashPassword(input.password);
      return db.transaction(async (tx) => {
        const user = await insertUser(tx, { email: input.email, passwordHash, name: input.name?.trim() || null, createdAt: now });
        for (const hook of deps.onUserCreated ?? []) await hook(tx, user);
        return startSession(tx, user, client, now);
      });
    },

    login,
    verifyTwoFactor,

    /** Sign-in with an identity the provider vouched for: finds, links or creates the account, then opens a session. */
    async signInWithIdentity(identity: VerifiedIdentity, client: ClientInfo): Promise<TokenBundle> {
      const now = clock.now();
      return db.transaction(async (tx) => {
        const { user } = await findOrCreateIdentityUser(tx, identity, now, async (inner, created) => {
          for (const hook of deps.onUserCreated ?? []) await hook(inner, created);
        });
        return completeSignIn(tx, user, client, now, 'idp');
      });
    },

    async refresh(token: string, client: ClientInfo): Promise<TokenPair> {
      const now = clock.now();
      const stored = await findRefreshToken(db, token);
      if (!stored) throw sessionGone();
      // Signed out by the account itself (another device's "sign out", a password change or reset, deletion):
      // the device holding the token is just signed out; treating it as theft would end the owner's own session too.
      if (stored.revokedAt && stored.revokedReason && SIGNED_OUT_BY_OWNER.has(stored.revokedReason)) throw sessionGone();
      if (stored.revokedAt) {
        // A token that was already used or revoked is being replayed: assume it was stolen.
        await db.transaction(async (tx) => {
          openSessions.ended(await revokeAllSessions(tx, stored.userId, 'REUSE_DETECTED', now));
          await recordSecurityEvent(tx, { userId: stored.userId, kind: 'SESSION_REVOKED', client, at: now, metadata: { reason: 'REFRESH_TOKEN_REUSE' } });
        });
        throw sessionGone();
      }
      if (stored.expiresAt <= now) throw sessionGone();
      const [session, user] = await Promise.all([findSession(db, stored.sessionId), findActiveUserById(db, stored.userId)]);
      if (!session || session.revokedAt || !user || isInternalAccount(user)) throw sessionGone();

      const refreshToken = await db.transaction(async (tx) => {
        if (!(await consumeRefreshToken(tx, stored.id, 'ROTATED', now))) return null;
        await touchSession(tx, session.id, client, now);
        return issueRefreshToken(tx, session, now);
      });
      if (!refreshToken) {
        // Lost a race with another refresh of the same token: the same reuse rule applies.
        openSessions.ended(await revokeAllSessions(db, stored.userId, 'REUSE_DETECTED', now));
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
        openSessions.ended(await revokeSession(tx, stored.sessionId, 'LOGOUT', now));
        await recordSecurityEvent(tx, { userId: stored.userId, kind: 'LOGOUT', client, at: now });
      });
    },

    /** Makes sure the operator account from ADMIN_EMAIL exists with the SUPER_ADMIN role. */
    async ensureSuperAdmin(email: string, password: string): Promise<'created' | 'promoted' | 'unchanged'> {
      assertAssignableEmail(email, 'ADMIN_EMAIL');
      const existing = await findActiveUserByEmail(db, email);
      if (existing) {
        if (existing.role === 'SUPER_ADMIN') return 'unchanged';
        await db.update(users).set({ role: 'SUPER_ADMIN', updatedAt: clock.now() }).where(eq(users.id, existing.id));
        activeUsers.changed(existing.id);
        return 'promoted';
      }
      const now = clock.now();
      await db.transaction(async (tx) => {
        const user = await insertUser(tx, {
          email,
          passwordHash: await hashPassword(password),
          name: 'Administrator',
          role: 'SUPER_ADMIN',
          emailVerified: true,
          createdAt: now,
        });
        for (const hook of deps.onUserCreated ?? []) await hook(tx, user);
      });
      return 'created';
    },

    /**
     * The service's own account of a feature (the admin playground's identity), found by its kind and created when
     * missing: no password and no sign-up hooks (its owner subscribes it to what it needs). `squatter` is the ordinary
     * account holding the preferred address, if any (taken before the domain was reserved): it is never adopted.
     */
    ensureInternalAccount: (spec: InternalAccountSpec) => ensureInternalUser(db, spec, clock.now()),

    /** The active user, from the cache every write to the user drops (see active-users.ts). */
    async getActiveUser(userId: string): Promise<UserRow> {
      const user = await activeUsers.get(userId);
      if (!user) throw sessionGone();
      return user;
    },

    async updateName(userId: string, name: string) {
      const [row] = await db.update(users).set({ name: name.trim(), updatedAt: clock.now() }).where(eq(users.id, userId)).returning();
      activeUsers.changed(userId);
      if (!row || row.status !== 'ACTIVE') throw sessionGone();
      return toMeUser(row);
    },
  };
}

export type AuthService = ReturnType<typeof createAuthService>;
