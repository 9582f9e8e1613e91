import { and, asc, desc, eq, gt, inArray, isNull, sql } from 'drizzle-orm';
import { mfaChallenges, securityEvents, sessions, userIdentities, users } from '../../db/schema/auth.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import { isUniqueViolation } from '../../platform/db/errors.js';
import { newestFirstPage } from '../../platform/http/pagination.js';
import { unlock } from './lockout.js';
import type { ActiveUsers } from './active-users.js';
import type { OpenSessions } from './open-sessions.js';
import { recordSecurityEvent, type SecurityEventInput, type SecurityEventRow } from './security-events.js';
import { REFRESH_TOKEN_TTL_MS, revokeAllSessions, revokeOtherSessions, revokeSession, type RevokeReason, type SessionRow } from './sessions.js';
import {
  findActiveUserByEmail,
  findActiveUserById,
  findInternalUser,
  isHandleTaken,
  readPublicProfiles,
  type InternalAccountKind,
  type PublicUser,
  type UserRow,
} from './users.js';

export type { PublicUser, RevokeReason, SessionRow };

/** What other modules may change on a user's profile. */
export type ProfileChanges = Partial<Pick<UserRow, 'handle' | 'avatarUrl' | 'bio'>>;

/**
 * The auth module's data API: what other modules read and write of users, sessions and the security history,
 * instead of touching the auth tables. Every method takes an optional transaction, so a caller composes them
 * atomically with its own writes.
 */
export function createAuthData(deps: { db: Db; openSessions: Pick<OpenSessions, 'ended'>; activeUsers: Pick<ActiveUsers, 'changed' | 'profilesOf'> }) {
  const { db, openSessions, activeUsers } = deps;
  const forgetEnded = (ids: string[]) => {
    openSessions.ended(ids);
    return ids;
  };

  /** A session is live while it is not revoked and its refresh token can still be used (30 days from the last sign-in or refresh). */
  const liveSession = (userId: string, now: Date) =>
    and(eq(sessions.userId, userId), isNull(sessions.revokedAt), gt(sessions.lastSeenAt, new Date(now.getTime() - REFRESH_TOKEN_TTL_MS)));

  /** Inside a caller's transaction, runs one update in a savepoint, so a unique violation leaves that transaction usable. */
  const inSavepoint = <T>(tx: DbOrTx, fn: (sp: DbOrTx) => Promise<T>): Promise<T> => (tx === db ? fn(db) : tx.transaction(fn));

  const userData = {
    findActiveById: (userId: string, tx: DbOrTx = db): Promise<UserRow | undefined> => findActiveUserById(tx, userId),
    findActiveByEmail: (email: string, tx: DbOrTx = db): Promise<UserRow | undefined> => findActiveUserByEmail(tx, email),
    /** The service's own account of this kind (e.g. the playground's identity), by its marker: never look it up by email. */
    findInternal: (kind: InternalAccountKind, tx: DbOrTx = db): Promise<UserRow | undefined> => findInternalUser(tx, kind),

    async findActiveByHandle(handle: string, tx: DbOrTx = db): Promise<UserRow | undefined> {
      const [row] = await tx
        .select()
        .from(users)
        .where(and(sql`lower(${users.handle}) = lower(${handle})`, eq(users.status, 'ACTIVE')));
      return row;
    },

    /** The handles of these users, by id (deleted users included: a handle stays reserved). */
    async handlesOf(userIds: string[], tx: DbOrTx = db): Promise<Map<string, string>> {
      if (userIds.length === 0) return new Map();
      const rows = await tx
        .select({ id: users.id, handle: users.handle })
        .from(users)
        .where(inArray(users.id, [...new Set(userIds)]));
      return new Map(rows.map((r) => [r.id, r.handle]));
    },

    /** Email, name and handle of these users, by id (e.g. a workspace's member list). */
    async contactsOf(userIds: string[], tx: DbOrTx = db): Promise<Map<string, { email: string; name: string | null; handle: string }>> {
      if (userIds.length === 0) return new Map();
      const rows = await tx
        .select({ id: users.id, email: users.email, name: users.name, handle: users.handle })
        .from(users)
        .where(inArray(users.id, [...new Set(userIds)]));
      return new Map(rows.map((r) => [r.id, { email: r.email, name: r.name, handle: r.handle }]));
    },

    /** Public facts of these users, by id (deleted users included, with their status), for showing authors. */
    /** Inside a transaction (`tx`) read from it; otherwise through each instance's cache of profiles. */
    async publicProfilesOf(userIds: string[], tx?: DbOrTx): Promise<Map<string, PublicUser>> {
      if (userIds.length === 0) return new Map();
      return tx ? readPublicProfiles(tx, userIds) : activeUsers.profilesOf(userIds);
    },

    /** Active accounts (people: the service's own accounts left out) in id order, after `afterId`: a broadcast walks them in batches. */
    async activeUserIdsAfter(afterId: string | null, limit: number, tx: DbOrTx = db): Promise<string[]> {
      const rows = await tx
        .select({ id: users.id })
        .from(users)
        .where(and(eq(users.status, 'ACTIVE'), isNull(users.internalKind), afterId ? gt(users.id, afterId) : undefined))
        .orderBy(asc(users.id))
        .limit(limit);
      return rows.map((row) => row.id);
    },

    isHandleTaken: (handle: string, exceptUserId?: string, tx: DbOrTx = db): Promise<boolean> => isHandleTaken(tx, handle, exceptUserId),

    /** Locks the user's row until `tx` ends: serialises concurrent requests about one account. */
    async lockForUpdate(userId: string, tx: DbOrTx): Promise<void> {
      await tx.select({ id: users.id }).from(users).where(eq(users.id, userId)).for('update');
    },

    async setPasswordHash(userId: string, passwordHash: string, at: Date, tx: DbOrTx = db): Promise<void> {
      await tx.update(users).set({ passwordHash, updatedAt: at }).where(eq(users.id, userId));
      activeUsers.changed(userId);
    },

    /** Marks the address verified, if it is still the active user's address; false otherwise. */
    async confirmEmail(userId: string, email: string, at: Date, tx: DbOrTx = db): Promise<boolean> {
      const updated = await tx
        .update(users)
        .set({ emailVerified: true, updatedAt: at })
        .where(and(eq(users.id, userId), eq(users.status, 'ACTIVE'), eq(users.email, email)))
        .returning({ id: users.id });
      activeUsers.changed(userId);
      return updated.length === 1;
    },

    /** Gives the user a new, verified address; false (and nothing changed) when another account uses it. */
    async changeEmail(userId: string, email: string, at: Date, tx: DbOrTx = db): Promise<boolean> {
      try {
        await inSavepoint(tx, (sp) => sp.update(users).set({ email, emailVerified: true, updatedAt: at }).where(eq(users.id, userId)));
        activeUsers.changed(userId);
        return true;
      } catch (err) {
        if (isUniqueViolation(err, 'users_email_active_key')) return false;
        throw err;
      }
    },

    /** Changes the public profile fields; 'handle-taken' (and nothing changed) when another user has the handle. */
    async updateProfile(userId: string, changes: ProfileChanges, at: Date, tx: DbOrTx = db): Promise<UserRow | 'handle-taken'> {
      try {
        const [row] = await inSavepoint(tx, (sp) =>
          sp
            .update(users)
            .set({ ...changes, updatedAt: at })
            .where(eq(users.id, userId))
            .returning(),
        );
        activeUsers.changed(userId);
        return row!;
      } catch (err) {
        if (isUniqueViolation(err, 'users_handle_lower_key')) return 'handle-taken';
        throw err;
      }
    },

    /**
     * Soft-deletes an active user (the email becomes free for a new account) and voids their pending two-factor
     * sign-in challenges; undefined when the user was not active. Sessions are the caller's to revoke.
     */
    async markDeleted(userId: string, at: Date, tx: DbOrTx = db): Promise<UserRow | undefined> {
      const [deleted] = await tx
        .update(users)
        .set({ status: 'DELETED', deletedAt: at, updatedAt: at })
        .where(and(eq(users.id, userId), eq(users.status, 'ACTIVE')))
        .returning();
      activeUsers.changed(userId);
      if (deleted)
        await tx
          .update(mfaChallenges)
          .set({ usedAt: at })
          .where(and(eq(mfaChallenges.userId, userId), isNull(mfaChallenges.usedAt)));
      return deleted;
    },

    /** A completed password reset proves who the user is: it lifts a sign-in lock and forgets the failures. */
    unlockSignIn: (email: string, userId: string, tx: DbOrTx = db): Promise<void> => unlock(tx, email, userId),

    /** The identity-provider accounts linked to the user (for the data export). */
    async linkedIdentities(userId: string, tx: DbOrTx = db) {
      return tx
        .select({ issuer: userIdentities.issuer, email: userIdentities.email, createdAt: userIdentities.createdAt, lastUsedAt: userIdentities.lastUsedAt })
        .from(userIdentities)
        .where(eq(userIdentities.userId, userId));
    },
  };

  const sessionData = {
    /** Live sessions, most recently used first. */
    async listLive(userId: string, now: Date, tx: DbOrTx = db): Promise<SessionRow[]> {
      return tx.select().from(sessions).where(liveSession(userId, now)).orderBy(desc(sessions.lastSeenAt), desc(sessions.id));
    },

    async findLive(userId: string, sessionId: string, now: Date, tx: DbOrTx = db): Promise<SessionRow | undefined> {
      const [row] = await tx
        .select()
        .from(sessions)
        .where(and(liveSession(userId, now), eq(sessions.id, sessionId)));
      return row;
    },

    /** Every session the user ever had, oldest first (for the data export). */
    async listAll(userId: string, tx: DbOrTx = db): Promise<SessionRow[]> {
      return tx.select().from(sessions).where(eq(sessions.userId, userId)).orderBy(asc(sessions.createdAt));
    },

    async revoke(sessionId: string, reason: RevokeReason, at: Date, tx: DbOrTx = db): Promise<void> {
      forgetEnded(await revokeSession(tx, sessionId, reason, at));
    },
    /** Signs the user out everywhere: every session and every refresh token. */
    async revokeAll(userId: string, reason: RevokeReason, at: Date, tx: DbOrTx = db): Promise<void> {
      forgetEnded(await revokeAllSessions(tx, userId, reason, at));
    },
    /** Signs the user out of every device but one (null: all); returns how many sessions ended. */
    async revokeOthers(userId: string, keepSessionId: string | null, reason: RevokeReason, at: Date, tx: DbOrTx = db): Promise<number> {
      return forgetEnded(await revokeOtherSessions(tx, userId, keepSessionId, reason, at)).length;
    },
  };

  const securityEventData = {
    record: (event: SecurityEventInput, tx: DbOrTx = db): Promise<void> => recordSecurityEvent(tx, event),

    /** One page of the user's security history, newest first. */
    async page(userId: string, query: { limit: number; cursor?: string }, tx: DbOrTx = db): Promise<{ items: SecurityEventRow[]; nextCursor: string | null }> {
      return newestFirstPage(tx, securityEvents, 'createdAt', eq(securityEvents.userId, userId), query);
    },

    /** The whole history, newest first (for the data export). */
    async listAll(userId: string, tx: DbOrTx = db): Promise<SecurityEventRow[]> {
      return tx.select().from(securityEvents).where(eq(securityEvents.userId, userId)).orderBy(desc(securityEvents.createdAt));
    },
  };

  return { users: userData, sessions: sessionData, securityEvents: securityEventData };
}

export type AuthData = ReturnType<typeof createAuthData>;
