import { and, eq, inArray, isNull } from 'drizzle-orm';
import { dataExports } from '../../db/schema/account.js';
import { mfaChallenges, users } from '../../db/schema/auth.js';
import type { Tx } from '../../platform/db/database.js';
import { unauthorized } from '../../platform/http/errors.js';
import { verifyPassword } from '../auth/passwords.js';
import { recordSecurityEvent } from '../auth/security-events.js';
import type { ClientInfo } from '../../platform/http/client-info.js';
import { revokeAllSessions } from '../auth/sessions.js';
import { findActiveUserById, type UserRow } from '../auth/users.js';
import type { AccountDeps } from './deps.js';

/**
 * Work other modules attach to an account deletion, run in its transaction
 * (the API-key module revokes the user's keys here; billing may cancel renewals).
 */
export type AccountDeletedHook = (tx: Tx, user: UserRow, at: Date) => Promise<void>;

export function createDeletion(deps: AccountDeps, hooks: AccountDeletedHook[]) {
  const { db, clock } = deps;

  return {
    /**
     * Soft-deletes the account after checking its password: it can no longer sign in, every session and refresh token
     * is revoked, and the email becomes free for a new account.
     */
    async deleteAccount(userId: string, password: string, client: ClientInfo): Promise<void> {
      const user = await findActiveUserById(db, userId);
      if (!user) throw unauthorized('Your session has ended. Sign in again.');
      if (!(await verifyPassword(user.passwordHash, password))) throw unauthorized('Your password is not right.');
      const now = clock.now();
      await db.transaction(async (tx) => {
        const [deleted] = await tx
          .update(users)
          .set({ status: 'DELETED', deletedAt: now, updatedAt: now })
          .where(and(eq(users.id, userId), eq(users.status, 'ACTIVE')))
          .returning();
        if (!deleted) throw unauthorized('Your session has ended. Sign in again.');
        await revokeAllSessions(tx, userId, 'ACCOUNT_DELETED', now);
        await recordSecurityEvent(tx, { userId, kind: 'SESSION_REVOKED', client, at: now, metadata: { reason: 'ACCOUNT_DELETED' } });
        await tx.update(mfaChallenges).set({ usedAt: now }).where(and(eq(mfaChallenges.userId, userId), isNull(mfaChallenges.usedAt)));
        await tx
          .update(dataExports)
          .set({ status: 'FAILED', error: 'The account was deleted.', completedAt: now })
          .where(and(eq(dataExports.userId, userId), inArray(dataExports.status, ['QUEUED', 'RUNNING'])));
        for (const hook of hooks) await hook(tx, deleted, now);
      });
    },
  };
}
