import { and, eq, inArray } from 'drizzle-orm';
import { dataExports } from '../../db/schema/account.js';
import type { Tx } from '../../platform/db/database.js';
import { unauthorized } from '../../platform/http/errors.js';
import type { ClientInfo } from '../../platform/http/client-info.js';
import { verifyPassword, type UserRow } from '../auth/index.js';
import type { AccountDeps } from './deps.js';

/**
 * Work other modules attach to an account deletion, run in its transaction
 * (the API-key module revokes the user's keys here; billing may cancel renewals).
 */
export type AccountDeletedHook = (tx: Tx, user: UserRow, at: Date) => Promise<void>;

/** `accountDeleted`: raises the event to the other modules' handlers (`account.accountDeleted`). */
export function createDeletion(deps: AccountDeps, accountDeleted: AccountDeletedHook) {
  const { db, clock, auth } = deps;

  return {
    /**
     * Soft-deletes the account after checking its password: it can no longer sign in, every session and refresh token
     * is revoked, and the email becomes free for a new account.
     */
    async deleteAccount(userId: string, password: string, client: ClientInfo): Promise<void> {
      const user = await auth.users.findActiveById(userId);
      if (!user) throw unauthorized('Your session has ended. Sign in again.');
      if (!(await verifyPassword(user.passwordHash, password))) throw unauthorized('Your password is not right.');
      const now = clock.now();
      await db.transaction(async (tx) => {
        const deleted = await auth.users.markDeleted(userId, now, tx);
        if (!deleted) throw unauthorized('Your session has ended. Sign in again.');
        await auth.sessions.revokeAll(userId, 'ACCOUNT_DELETED', now, tx);
        await auth.securityEvents.record({ userId, kind: 'SESSION_REVOKED', client, at: now, metadata: { reason: 'ACCOUNT_DELETED' } }, tx);
        await tx
          .update(dataExports)
          .set({ status: 'FAILED', error: 'The account was deleted.', completedAt: now })
          .where(and(eq(dataExports.userId, userId), inArray(dataExports.status, ['QUEUED', 'RUNNING'])));
        await accountDeleted(tx, deleted, now);
      });
    },
  };
}
