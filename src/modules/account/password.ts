import { and, desc, eq, gt, inArray, sql } from 'drizzle-orm';
import { passwordResets } from '../../db/schema/account.js';
import { MINUTE_MS } from '../../platform/clock/clock.js';
import { hashToken, keyedHash, randomDigits, randomToken, sameDigest } from '../../platform/crypto/secrets.js';
import type { ClientInfo } from '../../platform/http/client-info.js';
import { badRequest, unauthorized } from '../../platform/http/errors.js';
import { defineJob } from '../../platform/jobs/jobs.js';
import { composeMail } from '../../platform/mail/compose.js';
import { hashPassword, isInternalAccount, verifyPassword } from '../auth/index.js';
import type { AccountDeps } from './deps.js';

declare module '../../platform/jobs/jobs.js' {
  interface JobPayloads {
    'account.password-reset-code': { email: string; requestedAt: string };
  }
}

export const OTP_DIGITS = 4;
export const OTP_TTL_MS = 10 * MINUTE_MS;
export const OTP_MAX_ATTEMPTS = 5;
export const OTP_REPEAT_WINDOW_MS = 60_000;
export const RESET_TOKEN_TTL_MS = 15 * MINUTE_MS;

const wrongOtp = () => badRequest('The code is wrong or no longer valid. Check the latest email we sent you, or request a new code.', { field: 'otp' });
const badResetToken = () => badRequest('This reset token is invalid, expired or already used. Request a new code to reset your password.', { field: 'token' });

export function createPasswordFlows(deps: AccountDeps) {
  const { db, clock, mailer, pepper, auth } = deps;
  const otpHash = (userId: string, otp: string) => keyedHash(pepper, 'password-reset-otp', `${userId}:${otp}`);

  return {
    /**
     * Queues the reset-code request and answers at once, the same way whether the email belongs to an account or not:
     * the lookup, the code and the mail happen in the `account.password-reset-code` job, off the request, so neither
     * the answer nor its timing tells which emails have accounts.
     */
    async forgot(email: string): Promise<void> {
      await deps.jobs.send('account.password-reset-code', { email, requestedAt: clock.now().toISOString() });
    },

    /**
     * Mails a 4-digit code when the email belongs to an account, as of the moment it was requested.
     * A new code replaces the previous one; a request within 60 s of the last code is ignored.
     */
    async issueResetCode(email: string, requestedAt: Date): Promise<void> {
      const now = requestedAt;
      if (clock.now().getTime() - now.getTime() >= OTP_TTL_MS) return; // the code would be dead on arrival
      const user = await auth.users.findActiveByEmail(email);
      // The service's own accounts (found by kind, never by email) never get a password, so they can never sign in.
      if (!user || isInternalAccount(user)) return;
      const otp = randomDigits(OTP_DIGITS);
      const issued = await db.transaction(async (tx) => {
        // Serialises concurrent requests for the same account, so the 60-second rule holds under a race.
        await auth.users.lockForUpdate(user.id, tx);
        const [last] = await tx
          .select({ createdAt: passwordResets.createdAt })
          .from(passwordResets)
          .where(eq(passwordResets.userId, user.id))
          .orderBy(desc(passwordResets.createdAt))
          .limit(1);
        if (last && now.getTime() - last.createdAt.getTime() < OTP_REPEAT_WINDOW_MS) return null;
        await tx
          .update(passwordResets)
          .set({ status: 'SUPERSEDED' })
          .where(and(eq(passwordResets.userId, user.id), inArray(passwordResets.status, ['OTP_ISSUED', 'TOKEN_ISSUED'])));
        const [row] = await tx
          .insert(passwordResets)
          .values({ userId: user.id, status: 'OTP_ISSUED', otpHash: otpHash(user.id, otp), otpExpiresAt: new Date(now.getTime() + OTP_TTL_MS), createdAt: now })
          .returning({ id: passwordResets.id });
        return row!.id;
      });
      if (!issued) return;
      await mailer
        .send(
          composeMail(user.email, {
            subject: `Your password reset code: ${otp}`,
            greeting: user.name,
            lines: ['Use this code to reset your Storefront password. It is valid for 10 minutes and works once.'],
            code: otp,
            footer: 'If you did not ask to reset your password, ignore this email: your password stays as it is.',
          }),
        )
        .catch(async (err: unknown) => {
          // Nobody received this code: withdraw it, so the job's retry is not stopped by the 60-second rule.
          await db.delete(passwordResets).where(eq(passwordResets.id, issued));
          throw err;
        });
    },

    /** Trades a correct code for a 15-minute reset token; five wrong codes kill the code. */
    async verifyOtp(email: string, otp: string): Promise<{ resetToken: string }> {
      const now = clock.now();
      const user = await auth.users.findActiveByEmail(email);
      if (!user) throw wrongOtp();
      const [live] = await db
        .select()
        .from(passwordResets)
        .where(and(eq(passwordResets.userId, user.id), eq(passwordResets.status, 'OTP_ISSUED'), gt(passwordResets.otpExpiresAt, now)))
        .orderBy(desc(passwordResets.createdAt))
        .limit(1);
      if (!live) throw wrongOtp();
      // Take an attempt before comparing, so parallel guesses cannot exceed the limit.
      const [attempt] = await db
        .update(passwordResets)
        .set({ otpAttempts: sql`${passwordResets.otpAttempts} + 1` })
        .where(and(eq(passwordResets.id, live.id), eq(passwordResets.status, 'OTP_ISSUED'), sql`${passwordResets.otpAttempts} < ${OTP_MAX_ATTEMPTS}`))
        .returning({ attempts: passwordResets.otpAttempts });
      if (!attempt) throw wrongOtp();
      if (!sameDigest(live.otpHash, otpHash(user.id, otp))) {
        if (attempt.attempts >= OTP_MAX_ATTEMPTS) {
          await db
            .update(passwordResets)
            .set({ status: 'OTP_DEAD' })
            .where(and(eq(passwordResets.id, live.id), eq(passwordResets.status, 'OTP_ISSUED')));
        }
        throw wrongOtp();
      }
      const resetToken = randomToken();
      const [claimed] = await db
        .update(passwordResets)
        .set({ status: 'TOKEN_ISSUED', resetTokenHash: hashToken(resetToken), resetTokenExpiresAt: new Date(now.getTime() + RESET_TOKEN_TTL_MS) })
        .where(and(eq(passwordResets.id, live.id), eq(passwordResets.status, 'OTP_ISSUED')))
        .returning({ id: passwordResets.id });
      if (!claimed) throw wrongOtp();
      return { resetToken };
    },

    /** Sets the new password, signs the account out everywhere and lifts a login lock. */
    async reset(token: string, password: string, client: ClientInfo): Promise<void> {
      const now = clock.now();
      const passwordHash = await hashPassword(password);
      const userId = await db.transaction(async (tx) => {
        const [row] = await tx
          .update(passwordResets)
          .set({ status: 'COMPLETED', completedAt: now })
          .where(
            and(eq(passwordResets.resetTokenHash, hashToken(token)), eq(passwordResets.status, 'TOKEN_ISSUED'), gt(passwordResets.resetTokenExpiresAt, now)),
          )
          .returning({ userId: passwordResets.userId });
        if (!row) return null;
        const user = await auth.users.findActiveById(row.userId, tx);
        if (!user || isInternalAccount(user)) return null;
        await auth.users.setPasswordHash(user.id, passwordHash, now, tx);
        await auth.sessions.revokeAll(user.id, 'PASSWORD_RESET', now, tx);
        await auth.users.unlockSignIn(user.email, user.id, tx);
        await auth.securityEvents.record({ userId: user.id, kind: 'PASSWORD_RESET', client, at: now }, tx);
        return user.id;
      });
      if (!userId) throw badResetToken();
      await deps.securityMail(userId, {
        subject: 'Your password was reset',
        lines: ['The password of your Storefront account was just reset, and every device was signed out.'],
        footer: 'If you did not do this, reset your password again right away and contact support.',
      });
    },

    /** Changes the password of a signed-in user; the other devices are signed out. */
    async change(userId: string, sessionId: string | null, input: { currentPassword: string; newPassword: string }, client: ClientInfo): Promise<void> {
      const user = await auth.users.findActiveById(userId);
      if (!user) throw unauthorized('Your session has ended. Sign in again.');
      if (!(await verifyPassword(user.passwordHash, input.currentPassword))) throw unauthorized('Your current password is not right.');
      const now = clock.now();
      const passwordHash = await hashPassword(input.newPassword);
      await db.transaction(async (tx) => {
        await auth.users.setPasswordHash(userId, passwordHash, now, tx);
        await auth.sessions.revokeOthers(userId, sessionId, 'SESSION_REVOKED', now, tx);
        await auth.securityEvents.record({ userId, kind: 'PASSWORD_CHANGED', client, at: now }, tx);
      });
      await deps.securityMail(userId, {
        subject: 'Your password was changed',
        lines: ['The password of your Storefront account was just changed. Your other devices were signed out.'],
        footer: 'If you did not do this, reset your password right away and contact support.',
      });
    },
  };
}

/** The queue behind `forgot`; a retry never mails a second code (the 60-second rule counts from the request). */
export function passwordResetJobs(password: Pick<ReturnType<typeof createPasswordFlows>, 'issueResetCode'>) {
  return [
    defineJob({
      name: 'account.password-reset-code',
      options: { retryLimit: 3, retryDelaySeconds: 2, expireInSeconds: 60 },
      handler: async ({ email, requestedAt }) => password.issueResetCode(email, new Date(requestedAt)),
    }),
  ];
}
