import { createHash } from 'node:crypto';
import { and, count, eq, isNull, lt, or } from 'drizzle-orm';
import { generateSecret, generateURI, verifySync } from 'otplib';
import { mfaChallenges, recoveryCodes, twoFactor } from '../../db/schema/auth.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import { AppError, badRequest, unauthorized } from '../../platform/http/errors.js';
import { verifyPassword } from './passwords.js';
import { sameDigest } from '../../platform/crypto/secrets.js';
import type { ClientInfo } from '../../platform/http/client-info.js';
import { canonicalRecoveryCode, randomRecoveryCode } from './recovery-codes.js';
import { recordSecurityEvent } from './security-events.js';
import { findActiveUserById } from './users.js';

export const TOTP_STEP_SECONDS = 30;
export const RECOVERY_CODE_COUNT = 10;
const TOTP_ISSUER = 'Storefront';

export type SecondFactor = 'totp' | 'recovery_code';

const alreadyOn = () => new AppError(409, 'CONFLICT', 'Two-factor authentication is already on. Turn it off first to set it up again.');
const notOn = () => new AppError(409, 'CONFLICT', 'Two-factor authentication is not on for this account.');
export const wrongCode = () =>
  unauthorized('That code is not right. Enter the current 6-digit code from your authenticator app, or one of your recovery codes.');

/** TOTP (RFC 6238, 30-second steps, plus or minus one step) and single-use recovery codes. */
export function createTwoFactor(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps;
  // Salted SHA-256, not the pepper: recovery codes live for months and must survive a JWT_SECRET rotation
  // (a copy of the database would expose the TOTP secrets anyway, which an authenticator needs in clear).
  const hashRecoveryCode = (userId: string, code: string) =>
    createHash('sha256')
      .update(`${userId}:${canonicalRecoveryCode(code)}`)
      .digest('hex');
  const sessionGone = () => unauthorized('Your session has ended. Sign in again.');

  /** The time step a 6-digit code belongs to at `now` (current step plus or minus one), or null. */
  function matchingStep(secret: string, code: string, now: Date): number | null {
    if (!/^\d{6}$/.test(code)) return null;
    const epoch = Math.floor(now.getTime() / 1000);
    // A tolerance of one step each way: the previous, current and next 30-second steps.
    const result = verifySync({ secret, token: code, epoch, period: TOTP_STEP_SECONDS, epochTolerance: TOTP_STEP_SECONDS });
    if (!result.valid) return null;
    return Math.floor(epoch / TOTP_STEP_SECONDS) + result.delta;
  }

  /** Accepts a TOTP code once: a code of an already used (or earlier) time step is refused, even by a racing request. */
  async function consumeTotp(tx: DbOrTx, userId: string, code: string, now: Date): Promise<boolean> {
    const [row] = await tx.select().from(twoFactor).where(eq(twoFactor.userId, userId));
    if (!row) return false;
    const step = matchingStep(row.secret, code, now);
    if (step === null) return false;
    const updated = await tx
      .update(twoFactor)
      .set({ lastUsedStep: step, updatedAt: now })
      .where(and(eq(twoFactor.userId, userId), or(isNull(twoFactor.lastUsedStep), lt(twoFactor.lastUsedStep, step))))
      .returning({ userId: twoFactor.userId });
    return updated.length === 1;
  }

  async function consumeRecoveryCode(tx: DbOrTx, userId: string, code: string, now: Date): Promise<boolean> {
    if (canonicalRecoveryCode(code).length !== 8) return false;
    const hash = hashRecoveryCode(userId, code);
    const unused = await tx
      .select({ id: recoveryCodes.id, codeHash: recoveryCodes.codeHash })
      .from(recoveryCodes)
      .where(and(eq(recoveryCodes.userId, userId), isNull(recoveryCodes.usedAt)));
    // Compare against every code, so the time taken does not tell which one (if any) matched.
    let match: string | null = null;
    for (const row of unused) if (sameDigest(row.codeHash, hash)) match = row.id;
    if (!match) return false;
    const used = await tx
      .update(recoveryCodes)
      .set({ usedAt: now })
      .where(and(eq(recoveryCodes.id, match), isNull(recoveryCodes.usedAt)))
      .returning({ id: recoveryCodes.id });
    return used.length === 1;
  }

  /** Replaces the user's recovery codes; returns the new ones in clear, the only time they are shown. */
  async function replaceRecoveryCodes(tx: DbOrTx, userId: string, now: Date): Promise<string[]> {
    const codes = new Set<string>();
    while (codes.size < RECOVERY_CODE_COUNT) codes.add(randomRecoveryCode());
    await tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId));
    await tx.insert(recoveryCodes).values([...codes].map((code) => ({ userId, codeHash: hashRecoveryCode(userId, code), createdAt: now })));
    return [...codes];
  }

  async function stateOf(tx: DbOrTx, userId: string) {
    const [row] = await tx.select().from(twoFactor).where(eq(twoFactor.userId, userId));
    return row;
  }

  async function activeUser(userId: string) {
    const user = await findActiveUserById(db, userId);
    if (!user) throw sessionGone();
    return user;
  }

  async function recordFailedCode(userId: string, client: ClientInfo, context: string) {
    await recordSecurityEvent(db, { userId, kind: 'TWO_FA_FAILED', client, at: clock.now(), metadata: { context } });
  }

  return {
    async isEnabled(tx: DbOrTx, userId: string): Promise<boolean> {
      return Boolean((await stateOf(tx, userId))?.enabledAt);
    },

    /** Checks a login's second factor: a 6-digit TOTP code, or anything else as a recovery code. Both are single-use. */
    async verifyLoginCode(tx: DbOrTx, userId: string, code: string, now: Date): Promise<SecondFactor | null> {
      const trimmed = code.trim();
      if (/^\d{6}$/.test(trimmed)) return (await consumeTotp(tx, userId, trimmed, now)) ? 'totp' : null;
      return (await consumeRecoveryCode(tx, userId, trimmed, now)) ? 'recovery_code' : null;
    },

    async status(userId: string) {
      await activeUser(userId);
      const row = await stateOf(db, userId);
      if (!row?.enabledAt) return { enabled: false, since: null, recoveryCodesRemaining: 0 };
      const [remaining] = await db
        .select({ n: count() })
        .from(recoveryCodes)
        .where(and(eq(recoveryCodes.userId, userId), isNull(recoveryCodes.usedAt)));
      return { enabled: true, since: row.enabledAt.toISOString(), recoveryCodesRemaining: remaining?.n ?? 0 };
    },

    /** Starts (or restarts) setup with a fresh secret; two-factor stays off until `enable` sees a valid code. */
    async setup(userId: string) {
      const user = await activeUser(userId);
      const now = clock.now();
      if ((await stateOf(db, userId))?.enabledAt) throw alreadyOn();
      const secret = generateSecret({ length: 20 });
      await db
        .insert(twoFactor)
        .values({ userId, secret, createdAt: now, updatedAt: now })
        .onConflictDoUpdate({ target: twoFactor.userId, set: { secret, enabledAt: null, lastUsedStep: null, updatedAt: now } });
      return { secret, otpauthUrl: generateURI({ issuer: TOTP_ISSUER, label: user.email, secret }) };
    },

    async enable(userId: string, code: string, client: ClientInfo) {
      await activeUser(userId);
      const state = await stateOf(db, userId);
      if (state?.enabledAt) throw alreadyOn();
      if (!state) throw badRequest('Start with POST /v1/account/2fa/setup, add the secret to your authenticator app, then send its code here.');
      const now = clock.now();
      const recovery = await db.transaction(async (tx) => {
        if (!(await consumeTotp(tx, userId, code, now))) return null;
        await tx.update(twoFactor).set({ enabledAt: now, updatedAt: now }).where(eq(twoFactor.userId, userId));
        await recordSecurityEvent(tx, { userId, kind: 'TWO_FA_ENABLED', client, at: now });
        return replaceRecoveryCodes(tx, userId, now);
      });
      if (!recovery) {
        await recordFailedCode(userId, client, 'enable');
        throw wrongCode();
      }
      return { ok: true as const, recoveryCodes: recovery };
    },

    async disable(userId: string, password: string, client: ClientInfo) {
      const user = await activeUser(userId);
      if (!(await verifyPassword(user.passwordHash, password))) throw unauthorized('Your password is not right.');
      if (!(await stateOf(db, userId))?.enabledAt) throw notOn();
      const now = clock.now();
      await db.transaction(async (tx) => {
        await tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId));
        await tx.delete(twoFactor).where(eq(twoFactor.userId, userId));
        await tx
          .update(mfaChallenges)
          .set({ usedAt: now })
          .where(and(eq(mfaChallenges.userId, userId), isNull(mfaChallenges.usedAt)));
        await recordSecurityEvent(tx, { userId, kind: 'TWO_FA_DISABLED', client, at: now });
      });
      return { ok: true as const };
    },

    async regenerateRecoveryCodes(userId: string, code: string, client: ClientInfo) {
      await activeUser(userId);
      if (!(await stateOf(db, userId))?.enabledAt) throw notOn();
      const now = clock.now();
      const recovery = await db.transaction(async (tx) => ((await consumeTotp(tx, userId, code, now)) ? replaceRecoveryCodes(tx, userId, now) : null));
      if (!recovery) {
        await recordFailedCode(userId, client, 'regenerate_recovery_codes');
        throw wrongCode();
      }
      return { ok: true as const, recoveryCodes: recovery };
    },

    /** Two-factor data of the user for the data export (never the secret or the code hashes). */
    async exportFor(userId: string) {
      const row = await stateOf(db, userId);
      return { enabled: Boolean(row?.enabledAt), since: row?.enabledAt?.toISOString() ?? null };
    },
  };
}

export type TwoFactor = ReturnType<typeof createTwoFactor>;
