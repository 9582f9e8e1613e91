import { and, eq, isNull, sql } from 'drizzle-orm';
import { mfaChallenges, users } from '../../db/schema/auth.js';
import type { Db, Tx } from '../../platform/db/database.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import type { ClientInfo } from '../../platform/http/client-info.js';
import { AppError, forbidden, unauthorized } from '../../platform/http/errors.js';
import { ACCESS_TOKEN_TTL_SECONDS, type AccessTokens } from '../../platform/auth/access-tokens.js';
import { hashPassword, verifyPassword } from './passwords.js';
import { admitAttempt, clearFailures, releaseAttempt, settleFailure, type LoginAttempt } from './lockout.js';
import { findOrCreateIdentityUser } from './identities.js';
import type { VerifiedIdentity } from './idp.js';
import { createOpenSessions } from './open-sessions.js';
import { createActiveUsers } from './active-users.js';
import { createTwoFactor, wrongCode, type SecondFactor } from './two-factor.js';
import { createAuthData } from './data.js';
import { createUserAdmin } from './admin.js';
import { recordSecurityEvent } from './security-events.js';
import {
  consumeRefreshToken,
  findRefreshToken,
  findSession,
  isUnseenIp,
  issueRefreshToken,
  openSession,
  revokeAllSessions,
  revokeSession,
  touchSession,
} from './sessions.js';
import {
  assertAssignableEmail,
  ensureInternalUser,
  findActiveUserByEmail,
  findActiveUserById,
  insertUser,
  isInternalAccount,
  normalizeEmail,
  toAuthUser,
  toMeUser,
  type InternalAccountSpec,
  type UserRow,
} from './users.js';

/** Work other modules attach to account creation, run in the sign-up transaction (e.g. the free plan grant). */
export type UserCreatedHook = (tx: Tx, user: UserRow) => Promise<void>;

export type SignInMethod = 'password' | SecondFactor | 'idp';

/** Work other modules attach to a completed sign-in, run in its transaction (e.g. the unseen-IP notification). */
export type SignInHook = (
  tx: Tx,
  event: { user: UserRow; client: ClientInfo; at: Date; method: SignInMethod; sessionId: string; unseenIp: boolean },
) => Promise<void>;

export interface AuthServiceDeps {
  db: Db;
  clock: Clock;
  tokens: AccessTokens;
  onUserCreated?: UserCreatedHook[];
  onSignIn?: SignInHook[];
  /** Cross-instance invalidation of the open-sessions cache. */
  events?: EventBus;
}

/** The 402 answer of a login when the account has two-factor on. */
export interface MfaChallenge {
  mfaRequired: true;
  challengeToken: string;
  tokenType: 'Bearer';
}

export const MFA_CHALLENGE_TTL_SECONDS = 5 * 60;
/** Wrong codes one challenge accepts before the user must sign in again (they also count towards the lockout). */
export const MFA_CHALLENGE_MAX_FAILURES = 5;

export interface TokenPair {
  accessToken: string;
  refreshToken: string;
  tokenType: 'Bearer';
  expiresIn: number;
}

export type TokenBundle = TokenPair & { user: ReturnType<typeof toAuthUser> };

const invalidCredentials = () => unauthorized('Email or password is incorrect.');
const sessionGone = () => unauthorized('Your session has ended. Sign in again.');
const SIGNED_OUT_BY_OWNER = new Set<string>(['SESSION_REVOKED', 'PASSWORD_RESET', 'ACCOUNT_DELETED', 'ACCOUNT_SUSPENDED']);
const internalAccount = () => unauthorized("This is one of the service's own accounts; nobody can sign in to it.");
const challengeGone = () =>
  unauthorized('This sign-in attempt has expired or can no longer be used. Sign in again with your email and password.');

export function createAuthService(deps: AuthServiceDeps) {
  const { db, clock, tokens } = deps;
  const twoFactor = createTwoFactor({ db, clock });
  const openSessions = createOpenSessions({ db, events: deps.events });
  const activeUsers = createActiveUsers({ db, events: deps.events });

  const accessTokenFor = (user: Pick<UserRow, 'id' | 'role'>, sessionId: string) =>
    tokens.sign({ sub: user.id, kind: 'access', role: user.role, sid: sessionId }, ACCESS_TOKEN_TTL_SECONDS);

  async function bundleFor(user: UserRow, session: { id: string }, refreshToken: string): Promise<TokenBundle> {
    return {
      user: toAuthUser(user),
      accessToken: await accessTokenFor(user, session.id),
      refreshToken,
      tokenType: 'Bearer',
      expiresIn: ACCESS_TOKEN_TTL_SECONDS,
    };
  }

  /** Opens a session for a user who has proved who they are (password, 2FA or identity provider). */
  async function startSession(tx: Db | Tx, user: UserRow, client: ClientInfo, now: Date): Promise<TokenBundle> {
    const { session, refreshToken } = await openSession(tx, user.id, client, now);
    return bundleFor(user, session, refreshToken);
  }

  /** Finishes a sign-in whose credentials were checked: history, lockout reset, session and the sign-in hooks. */
  async function completeSignIn(tx: Tx, user: UserRow, client: ClientInfo, now: Date, method: SignInMethod): Promise<TokenBundle> {
    if (isInternalAccount(user)) throw internalAccount();
    const unseenIp = await isUnseenIp(tx, user.id, client.ip);
    await clearFailures(tx, user.email, user.id);
    await recordSecurityEvent(tx, { userId: user.id, kind: 'LOGIN_SUCCESS', client, at: now, metadata: { method } });
    const { session, refreshToken } = await openSession(tx, user.id, client, now);
    for (const hook of deps.onSignIn ?? []) await hook(tx, { user, client, at: now, method, sessionId: session.id, unseenIp });
    return bundleFor(user, session, refreshToken);
  }

  async function issueChallenge(user: UserRow, now: Date): Promise<MfaChallenge> {
    const [challenge] = await db
      .insert(mfaChallenges)
      .values({ userId: user.id, createdAt: now, expiresAt: new Date(now.getTime() + MFA_CHALLENGE_TTL_SECONDS * 1000) })
      .returning();
    const challengeToken = await tokens.sign({ sub: user.id, kind: 'mfa_challenge', sid: challenge!.id }, MFA_CHALLENGE_TTL_SECONDS);
    return { mfaRequired: true, challengeToken, tokenType: 'Bearer' };
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

    /** Password sign-in; with two-factor on, the answer is a challenge for `verifyTwoFactor` instead of a session. */
    async login(input: { email: string; password: string }, client: ClientInfo): Promise<TokenBundle | MfaChallenge> {
      const now = clock.now();
      const email = normalizeEmail(input.email);
      const user = await findActiveUserByEmail(db, email);
      // The attempt is counted before the password is checked, so a parallel burst cannot check more than the limit.
      const attempt: LoginAttempt = { email, userId: user?.id ?? null, at: now };
      const admission = await admitAttempt(db, attempt);
      if (!admission.admitted) throw lockedError(admission.retryAt, now);

      const valid = await verifyPassword(user?.passwordHash ?? null, input.password);
      if (valid && user?.status === 'SUSPENDED') {
        // Said only to whoever knows the password, so it reveals nothing to a guesser.
        await releaseAttempt(db, attempt);
        throw forbidden('This account is suspended. Contact support to have it reinstated.');
      }
      if (!valid || !user || user.status !== 'ACTIVE') {
        const lockEnd = await db.transaction(async (tx) => {
          const end = await settleFailure(tx, attempt, admission.position);
          if (user) {
            await recordSecurityEvent(tx, { userId: user.id, kind: 'LOGIN_FAILED', client, at: now });
            if (end) await recordSecurityEvent(tx, { userId: user.id, kind: 'LOGIN_LOCKED', client, at: now, metadata: { lockedUntil: end.toISOString() } });
          }
          return end;
        });
        throw lockEnd ? lockedError(lockEnd, now) : invalidCredentials();
      }

      // The earlier failures are kept until the second factor is passed too, so wrong codes add up towards the lockout;
      // this attempt itself was no failure.
      if (await twoFactor.isEnabled(db, user.id)) {
        await releaseAttempt(db, attempt);
        return issueChallenge(user, now);
      }
      return db.transaction((tx) => completeSignIn(tx, user, client, now, 'password'));
    },

    /** Second step of a login: the challenge token from the 402 answer and a TOTP or recovery code. */
    async verifyTwoFactor(input: { challengeToken: string; code: string }, client: ClientInfo): Promise<TokenBundle> {
      const now = clock.now();
      const claims = await tokens.verify(input.challengeToken, 'mfa_challenge');
      if (!claims?.sid) throw challengeGone();
      const [challenge] = await db
        .select()
        .from(mfaChallenges)
        .where(and(eq(mfaChallenges.id, claims.sid), eq(mfaChallenges.userId, claims.sub)));
      if (!challenge || challenge.usedAt || challenge.expiresAt <= now || challenge.failedAttempts >= MFA_CHALLENGE_MAX_FAILURES) throw challengeGone();
      const user = await findActiveUserById(db, claims.sub);
      if (!user) throw challengeGone();
      const attempt: LoginAttempt = { email: user.email, userId: user.id, at: now };
      const admission = await admitAttempt(db, attempt);
      if (!admission.admitted) throw lockedError(admission.retryAt, now);

      const bundle = await db
        .transaction(async (tx) => {
          if (!(await twoFactor.isEnabled(tx, user.id))) throw challengeGone();
          const method = await twoFactor.verifyLoginCode(tx, user.id, input.code, now);
          if (!method) return null;
          const claimed = await tx
            .update(mfaChallenges)
            .set({ usedAt: now })
            .where(and(eq(mfaChallenges.id, challenge.id), isNull(mfaChallenges.usedAt)))
            .returning({ id: mfaChallenges.id });
          if (claimed.length === 0) throw challengeGone(); // rolls back the code just consumed
          return completeSignIn(tx, user, client, now, method);
        })
        .catch(async (err: unknown) => {
          await releaseAttempt(db, attempt); // the challenge went away: no code was judged wrong
          throw err;
        });
      if (bundle) return bundle;

      const lockEnd = await db.transaction(async (tx) => {
        await tx
          .update(mfaChallenges)
          .set({ failedAttempts: sql`${mfaChallenges.failedAttempts} + 1` })
          .where(eq(mfaChallenges.id, challenge.id));
        await recordSecurityEvent(tx, { userId: user.id, kind: 'TWO_FA_FAILED', client, at: now, metadata: { context: 'login' } });
        const end = await settleFailure(tx, attempt, admission.position);
        if (end) await recordSecurityEvent(tx, { userId: user.id, kind: 'LOGIN_LOCKED', client, at: now, metadata: { lockedUntil: end.toISOString() } });
        return end;
      });
      throw lockEnd ? lockedError(lockEnd, now) : wrongCode();
    },

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
        const user = await insertUser(tx, { email, passwordHash: await hashPassword(password), name: 'Administrator', role: 'SUPER_ADMIN', emailVerified: true, createdAt: now });
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
      const [row] = await db
        .update(users)
        .set({ name: name.trim(), updatedAt: clock.now() })
        .where(eq(users.id, userId))
        .returning();
      activeUsers.changed(userId);
      if (!row || row.status !== 'ACTIVE') throw sessionGone();
      return toMeUser(row);
    },
  };
}

export type AuthService = ReturnType<typeof createAuthService>;
