import { and, desc, eq, gt, isNull } from 'drizzle-orm';
import { emailTokens } from '../../db/schema/account.js';
import { HOUR_MS } from '../../platform/clock/clock.js';
import { hashToken, randomToken } from '../../platform/crypto/secrets.js';
import type { ClientInfo } from '../../platform/http/client-info.js';
import { badRequest, conflict, unauthorized } from '../../platform/http/errors.js';
import { composeMail } from '../../platform/mail/compose.js';
import { assertAssignableEmail, normalizeEmail } from '../auth/index.js';
import type { AccountDeps } from './deps.js';

export const EMAIL_LINK_TTL_MS = 24 * HOUR_MS;
/** A second verification mail within this time is not sent (the first is still on its way). */
export const VERIFY_RESEND_WINDOW_MS = 60_000;

type Purpose = (typeof emailTokens.$inferSelect)['purpose'];

const invalidLink = (what: string) =>
  badRequest(`This ${what} link is invalid, has expired or was already used. Ask for a new one from your account settings.`, { field: 'token' });
const addressInUse = () => conflict('This email address is already used by another account.');

export function createEmailFlows(deps: AccountDeps) {
  const { db, clock, mailer, frontendUrl, auth } = deps;

  async function activeUser(userId: string) {
    const user = await auth.users.findActiveById(userId);
    if (!user) throw unauthorized('Your session has ended. Sign in again.');
    return user;
  }

  /** Stores a new link token (earlier unused links of the same purpose stop working) and returns it in clear. */
  async function issueToken(userId: string, purpose: Purpose, email: string, now: Date): Promise<{ token: string; expiresAt: Date }> {
    const token = randomToken();
    const expiresAt = new Date(now.getTime() + EMAIL_LINK_TTL_MS);
    await db.transaction(async (tx) => {
      await tx
        .update(emailTokens)
        .set({ usedAt: now })
        .where(and(eq(emailTokens.userId, userId), eq(emailTokens.purpose, purpose), isNull(emailTokens.usedAt)));
      await tx.insert(emailTokens).values({ userId, purpose, email, tokenHash: hashToken(token), createdAt: now, expiresAt });
    });
    return { token, expiresAt };
  }

  /** Claims a valid link token once; null when it is unknown, expired, used or of another purpose. */
  async function claimToken(token: string, purpose: Purpose, now: Date) {
    const [row] = await db
      .update(emailTokens)
      .set({ usedAt: now })
      .where(and(eq(emailTokens.tokenHash, hashToken(token)), eq(emailTokens.purpose, purpose), isNull(emailTokens.usedAt), gt(emailTokens.expiresAt, now)))
      .returning();
    return row ?? null;
  }

  return {
    async sendVerification(userId: string): Promise<{ ok: true; alreadyVerified: boolean }> {
      const user = await activeUser(userId);
      if (user.emailVerified) return { ok: true, alreadyVerified: true };
      const now = clock.now();
      const [recent] = await db
        .select({ createdAt: emailTokens.createdAt, email: emailTokens.email })
        .from(emailTokens)
        .where(and(eq(emailTokens.userId, userId), eq(emailTokens.purpose, 'VERIFY_EMAIL'), isNull(emailTokens.usedAt)))
        .orderBy(desc(emailTokens.createdAt))
        .limit(1);
      if (recent && recent.email === user.email && now.getTime() - recent.createdAt.getTime() < VERIFY_RESEND_WINDOW_MS) {
        return { ok: true, alreadyVerified: false };
      }
      const { token } = await issueToken(userId, 'VERIFY_EMAIL', user.email, now);
      await mailer.send(
        composeMail(user.email, {
          subject: 'Confirm your email address',
          greeting: user.name,
          lines: ['Confirm that this is your email address for your Storefront account. The link is valid for 24 hours.'],
          action: { label: 'Confirm email address', url: `${frontendUrl}/verify-email?token=${encodeURIComponent(token)}` },
        }),
      );
      return { ok: true, alreadyVerified: false };
    },

    async confirmVerification(token: string): Promise<{ userId: string }> {
      const now = clock.now();
      const row = await claimToken(token, 'VERIFY_EMAIL', now);
      if (!row) throw invalidLink('verification');
      // The link confirms the address it was sent to: after an email change it no longer applies.
      if (!(await auth.users.confirmEmail(row.userId, row.email, now))) throw invalidLink('verification');
      return { userId: row.userId };
    },

    /** Mails a confirmation link to the new address; the email changes only when that link is opened. */
    async requestChange(userId: string, newEmail: string): Promise<{ ok: true; expiresAt: string }> {
      const user = await activeUser(userId);
      const email = normalizeEmail(newEmail);
      assertAssignableEmail(email, 'newEmail');
      if (email === user.email) throw badRequest('That is already the email address of your account.', { field: 'newEmail' });
      if (await auth.users.findActiveByEmail(email)) throw addressInUse();
      const now = clock.now();
      const { token, expiresAt } = await issueToken(userId, 'CHANGE_EMAIL', email, now);
      await mailer.send(
        composeMail(email, {
          subject: 'Confirm your new email address',
          greeting: user.name,
          lines: [`You asked to use this address for your Storefront account instead of ${user.email}.`, 'Open the link to confirm. It is valid for 24 hours.'],
          action: { label: 'Confirm new email address', url: `${frontendUrl}/confirm-email?token=${encodeURIComponent(token)}` },
          footer: 'If you did not ask for this, ignore this email: the account keeps its current address.',
        }),
      );
      await deps.securityMail(userId, {
        subject: 'A change of your email address was requested',
        lines: [`Someone signed in to your account asked to change its email address to ${email}. It changes only once the new address is confirmed.`],
        footer: 'If this was not you, change your password and sign out your other sessions.',
      });
      return { ok: true, expiresAt: expiresAt.toISOString() };
    },

    async confirmChange(token: string, client: ClientInfo): Promise<{ ok: true; userId: string; email: string }> {
      const now = clock.now();
      const result = await db.transaction(async (tx) => {
        const [row] = await tx
          .update(emailTokens)
          .set({ usedAt: now })
          .where(
            and(
              eq(emailTokens.tokenHash, hashToken(token)),
              eq(emailTokens.purpose, 'CHANGE_EMAIL'),
              isNull(emailTokens.usedAt),
              gt(emailTokens.expiresAt, now),
            ),
          )
          .returning();
        if (!row) return null;
        // A link issued before the domain was reserved: the change rolls back, the link stays unusable.
        assertAssignableEmail(row.email, 'token');
        const user = await auth.users.findActiveById(row.userId, tx);
        if (!user) return null;
        // Another account took the address after the link was sent: the whole change (and the link's use) rolls back.
        if (!(await auth.users.changeEmail(user.id, row.email, now, tx))) throw addressInUse();
        await auth.securityEvents.record({ userId: user.id, kind: 'EMAIL_CHANGED', client, at: now, metadata: { from: user.email, to: row.email } }, tx);
        return { userId: user.id, from: user.email, email: row.email };
      });
      if (!result) throw invalidLink('confirmation');
      await deps.securityMail(
        result.userId,
        {
          subject: 'Your email address was changed',
          lines: [`The email address of your Storefront account is now ${result.email}. This address no longer signs in.`],
          footer: 'If you did not do this, contact support right away.',
        },
        result.from,
      );
      return { ok: true, userId: result.userId, email: result.email };
    },
  };
}
