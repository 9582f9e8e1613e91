import { and, eq, isNull, sql } from 'drizzle-orm';
import { mfaChallenges } from '../../db/schema/auth.js';
import type { Db, Tx } from '../../platform/db/database.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { ClientInfo } from '../../platform/http/client-info.js';
import { AppError, forbidden, unauthorized } from '../../platform/http/errors.js';
import type { AccessTokens } from '../../platform/auth/access-tokens.js';
import { verifyPassword } from './passwords.js';
import { admitAttempt, releaseAttempt, settleFailure, type LoginAttempt } from './lockout.js';
import { recordSecurityEvent } from './security-events.js';
import type { SignInMethod, TokenBundle } from './session-start.js';
import { wrongCode, type TwoFactor } from './two-factor.js';
import { findActiveUserByEmail, findActiveUserById, normalizeEmail, type UserRow } from './users.js';

/** The 402 answer of a login when the account has two-factor on. */
export interface MfaChallenge {
  mfaRequired: true;
  challengeToken: string;
  tokenType: 'Bearer';
}

export const MFA_CHALLENGE_TTL_SECONDS = 5 * 60;
/** Wrong codes one challenge accepts before the user must sign in again (they also count towards the lockout). */
export const MFA_CHALLENGE_MAX_FAILURES = 5;

const invalidCredentials = () => unauthorized('Email or password is incorrect.');
const challengeGone = () => unauthorized('This sign-in attempt has expired or can no longer be used. Sign in again with your email and password.');

export interface LoginDeps {
  db: Db;
  clock: Clock;
  tokens: AccessTokens;
  twoFactor: TwoFactor;
  /** Finishes a sign-in whose credentials were checked (session-start.ts). */
  completeSignIn: (tx: Tx, user: UserRow, client: ClientInfo, now: Date, method: SignInMethod) => Promise<TokenBundle>;
}

/** Password sign-in, counted against the lockout, and its second step when the account has two-factor on. */
export function createLogin(deps: LoginDeps) {
  const { db, clock, tokens, twoFactor, completeSignIn } = deps;

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

  /** Password sign-in; with two-factor on, the answer is a challenge for `verifyTwoFactor` instead of a session. */
  async function login(input: { email: string; password: string }, client: ClientInfo): Promise<TokenBundle | MfaChallenge> {
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
  }

  /** Second step of a login: the challenge token from the 402 answer and a TOTP or recovery code. */
  async function verifyTwoFactor(input: { challengeToken: string; code: string }, client: ClientInfo): Promise<TokenBundle> {
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
  }

  return { login, verifyTwoFactor };
}
