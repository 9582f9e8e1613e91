import { and, eq, ilike, isNull, or, type SQL } from 'drizzle-orm';
import { mfaChallenges, sessions, users } from '../../db/schema/auth.js';
import type { AccessTokens } from '../../platform/auth/access-tokens.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, Tx } from '../../platform/db/database.js';
import type { ClientInfo } from '../../platform/http/client-info.js';
import { badRequest, conflict, forbidden, notFound } from '../../platform/http/errors.js';
import { newestFirstPage } from '../../platform/http/pagination.js';
import type { AuditWriter } from '../audit/service.js';
import type { ActiveUsers } from './active-users.js';
import type { OpenSessions } from './open-sessions.js';
import { hashPassword } from './passwords.js';
import { recordSecurityEvent } from './security-events.js';
import { revokeAllSessions } from './sessions.js';
import { assertAssignableEmail, findActiveUserByEmail, insertUser, type Role, type UserRow } from './users.js';

/** An impersonation token lives 10 minutes and is never refreshed (no refresh token is issued). */
export const IMPERSONATION_TTL_SECONDS = 10 * 60;

export type UserStatus = UserRow['status'];

export interface UserSearch {
  /** Substring of the email, name or handle (case-insensitive). */
  q?: string;
  role?: Role;
  status?: UserStatus;
  limit: number;
  cursor?: string;
}

/** The operator making a change: their account (null for the CLI) and role. */
export interface Operator {
  userId: string | null;
  role: string | null;
}

const noSuchUser = () => notFound('No account has this id.');
/** `%`, `_` and `\` match literally in a search term. */
const likeTerm = (q: string) => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** An ADMIN acts on USER accounts only; an operator account needs a SUPER_ADMIN (or the CLI). */
function requireAuthorityOver(operator: Operator, user: UserRow, action: 'suspend' | 'lift the suspension of'): void {
  if (user.role === 'USER' || operator.role === 'SUPER_ADMIN' || operator.role === 'CLI') return;
  throw forbidden(`Only a SUPER_ADMIN can ${action} an ${user.role} account.`);
}

/** An operator's rank over suspensions; the CLI is run by whoever runs the service, so it ranks as a SUPER_ADMIN. */
const suspensionRank = (role: string | null): number => (role === 'SUPER_ADMIN' || role === 'CLI' ? 2 : role === 'ADMIN' ? 1 : 0);

/** A suspension is lifted only by an operator of at least the rank of the one who imposed it. */
function requireRankOfSuspender(operator: Operator, user: UserRow): void {
  if (suspensionRank(operator.role) >= suspensionRank(user.suspendedByRole)) return;
  const by = user.suspendedByRole === 'CLI' ? 'from the command line' : 'by a SUPER_ADMIN';
  throw forbidden(`This suspension was imposed ${by}: only a SUPER_ADMIN can lift it.`);
}

/** The role recorded with a suspension (an operator without a known role is recorded as an ADMIN). */
const suspenderRole = (operator: Operator): NonNullable<UserRow['suspendedByRole']> =>
  operator.role === 'SUPER_ADMIN' || operator.role === 'CLI' ? operator.role : 'ADMIN';

/** What the audit trail keeps of a user: enough to know who it was, never a credential. */
const auditView = (u: UserRow) => ({ email: u.email, role: u.role, status: u.status });

/**
 * The operators' side of accounts (admin API and CLI): search, role changes, suspension, impersonation and creating
 * operators. Every change is audited through the caller's `AuditWriter` in the change's own transaction.
 */
export function createUserAdmin(deps: {
  db: Db;
  clock: Clock;
  tokens: AccessTokens;
  openSessions: Pick<OpenSessions, 'ended'>;
  activeUsers: Pick<ActiveUsers, 'changed'>;
  onUserCreated: Array<(tx: Tx, user: UserRow) => Promise<void>>;
}) {
  const { db, clock, tokens, openSessions, activeUsers } = deps;

  async function lockedUser(tx: Tx, userId: string): Promise<UserRow> {
    const [user] = await tx.select().from(users).where(eq(users.id, userId)).for('update');
    if (!user || user.status === 'DELETED') throw noSuchUser();
    return user;
  }

  /** A person's account, locked: the service's own internal accounts take no role, suspension or impersonation. */
  async function lockedPerson(tx: Tx, userId: string): Promise<UserRow> {
    const user = await lockedUser(tx, userId);
    if (user.internalKind)
      throw conflict("This is one of the service's own internal accounts (the admin playground's): it cannot be given a role, suspended or impersonated.");
    return user;
  }

  return {
    /** Newest accounts first, cursor-paged; every status unless one is asked for. */
    async search(query: UserSearch): Promise<{ items: UserRow[]; nextCursor: string | null }> {
      const filters: SQL[] = [];
      if (query.q) {
        const term = likeTerm(query.q.trim());
        filters.push(or(ilike(users.email, term), ilike(users.name, term), ilike(users.handle, term))!);
      }
      if (query.role) filters.push(eq(users.role, query.role));
      if (query.status) filters.push(eq(users.status, query.status));
      return newestFirstPage(db, users, 'createdAt', filters.length ? and(...filters) : undefined, query);
    },

    /** Any account by id, deleted ones included (operators look at history too); 404 when none has it. */
    async get(userId: string): Promise<UserRow> {
      const [user] = await db.select().from(users).where(eq(users.id, userId));
      if (!user) throw noSuchUser();
      return user;
    },

    /**
     * Sets an account's role. The last active SUPER_ADMIN cannot be demoted (409), so the service always keeps one
     * operator who can change settings and roles; the SUPER_ADMIN rows are locked so two demotions cannot race past it.
     */
    async setRole(userId: string, role: Role, reason: string | null, audit: AuditWriter): Promise<UserRow> {
      return db.transaction(async (tx) => {
        const superAdmins = await tx
          .select({ id: users.id })
          .from(users)
          .where(and(eq(users.role, 'SUPER_ADMIN'), eq(users.status, 'ACTIVE')))
          .for('update');
        const user = await lockedPerson(tx, userId);
        if (user.role === role) return user;
        if (user.role === 'SUPER_ADMIN' && !superAdmins.some((s) => s.id !== userId)) {
          throw conflict('This is the last SUPER_ADMIN account: promote another account to SUPER_ADMIN before changing this one.');
        }
        const [updated] = await tx.update(users).set({ role, updatedAt: clock.now() }).where(eq(users.id, userId)).returning();
        activeUsers.changed(userId);
        await audit({ action: 'user.role.change', targetType: 'user', targetId: userId, before: { role: user.role }, after: { role }, reason }, tx);
        return updated!;
      });
    },

    /**
     * Suspends an active account: it can no longer sign in or refresh, and every session ends at once (its access
     * tokens stop working). A SUPER_ADMIN cannot be suspended (demote first), only a SUPER_ADMIN suspends an ADMIN,
     * and nobody suspends themselves.
     */
    async suspend(operator: Operator, userId: string, reason: string, client: ClientInfo, audit: AuditWriter): Promise<UserRow> {
      return db.transaction(async (tx) => {
        const user = await lockedPerson(tx, userId);
        if (user.id === operator.userId) throw conflict('You cannot suspend your own account.');
        if (user.role === 'SUPER_ADMIN') throw conflict('A SUPER_ADMIN account cannot be suspended. Change its role first.');
        requireAuthorityOver(operator, user, 'suspend');
        if (user.status === 'SUSPENDED') throw conflict('This account is already suspended.');
        const now = clock.now();
        const suspendedByRole = suspenderRole(operator);
        const [updated] = await tx.update(users).set({ status: 'SUSPENDED', suspendedByRole, updatedAt: now }).where(eq(users.id, userId)).returning();
        activeUsers.changed(userId);
        const ended = await revokeAllSessions(tx, userId, 'ACCOUNT_SUSPENDED', now);
        await tx
          .update(mfaChallenges)
          .set({ usedAt: now })
          .where(and(eq(mfaChallenges.userId, userId), isNull(mfaChallenges.usedAt)));
        await recordSecurityEvent(tx, { userId, kind: 'SESSION_REVOKED', client, at: now, metadata: { reason: 'ACCOUNT_SUSPENDED', sessions: ended.length } });
        await audit(
          {
            action: 'user.suspend',
            targetType: 'user',
            targetId: userId,
            before: { status: user.status },
            after: { status: 'SUSPENDED', suspendedByRole, sessionsEnded: ended.length },
            reason,
          },
          tx,
        );
        openSessions.ended(ended);
        return updated!;
      });
    },

    /**
     * Lifts a suspension: the account can sign in again (its old sessions stay ended). The same operators who may
     * suspend an account may lift its suspension (only a SUPER_ADMIN for an ADMIN or SUPER_ADMIN account), and never
     * an operator of lower rank than the one who suspended it: an ADMIN cannot undo a SUPER_ADMIN's suspension.
     */
    async unsuspend(operator: Operator, userId: string, reason: string, audit: AuditWriter): Promise<UserRow> {
      return db.transaction(async (tx) => {
        const user = await lockedPerson(tx, userId);
        if (user.id === operator.userId) throw conflict('You cannot lift a suspension on your own account.');
        requireAuthorityOver(operator, user, 'lift the suspension of');
        if (user.status !== 'SUSPENDED') throw conflict('This account is not suspended.');
        requireRankOfSuspender(operator, user);
        const [updated] = await tx
          .update(users)
          .set({ status: 'ACTIVE', suspendedByRole: null, updatedAt: clock.now() })
          .where(eq(users.id, userId))
          .returning();
        activeUsers.changed(userId);
        const before = { status: 'SUSPENDED', suspendedByRole: user.suspendedByRole };
        await audit({ action: 'user.unsuspend', targetType: 'user', targetId: userId, before, after: { status: 'ACTIVE' }, reason }, tx);
        return updated!;
      });
    },

    /**
     * Issues a short-lived access token for an active USER account, marked with the operator (`act: { sub }`), in a
     * session of its own that shows in the user's session list and ends with suspension. The user's security history
     * gets `IMPERSONATED_BY_ADMIN`. Operator accounts cannot be impersonated.
     */
    async impersonate(operatorId: string, userId: string, reason: string, client: ClientInfo, audit: AuditWriter) {
      if (operatorId === userId) throw badRequest('You cannot impersonate yourself.', { field: 'id' });
      const now = clock.now();
      const expiresAt = new Date(now.getTime() + IMPERSONATION_TTL_SECONDS * 1000);
      const { user, sessionId } = await db.transaction(async (tx) => {
        const target = await lockedPerson(tx, userId);
        if (target.status !== 'ACTIVE') throw conflict('A suspended account cannot be impersonated. Lift the suspension first.');
        if (target.role !== 'USER') throw conflict('Operator accounts (ADMIN, SUPER_ADMIN) cannot be impersonated.');
        // A session row of its own, with a user agent no browser sends, so a sign-in of the user never reuses it.
        const [session] = await tx
          .insert(sessions)
          .values({
            userId,
            device: 'Support session (admin impersonation)',
            userAgent: `storefront-impersonation/${operatorId}`,
            ipAddress: client.ip,
            createdAt: now,
            lastSeenAt: now,
          })
          .returning({ id: sessions.id });
        const metadata = { adminId: operatorId, sessionId: session!.id, reason, expiresAt: expiresAt.toISOString() };
        await recordSecurityEvent(tx, { userId, kind: 'IMPERSONATED_BY_ADMIN', client, at: now, metadata });
        await audit(
          {
            action: 'user.impersonate',
            targetType: 'user',
            targetId: userId,
            before: null,
            after: { sessionId: session!.id, expiresAt: metadata.expiresAt },
            reason,
          },
          tx,
        );
        return { user: target, sessionId: session!.id };
      });
      const accessToken = await tokens.sign(
        { sub: userId, kind: 'access', role: user.role, sid: sessionId, act: { sub: operatorId } },
        IMPERSONATION_TTL_SECONDS,
      );
      return { accessToken, tokenType: 'Bearer' as const, expiresIn: IMPERSONATION_TTL_SECONDS, expiresAt, sessionId, user };
    },

    /**
     * Creates an operator account, or promotes the existing one (CLI `create-admin`); audited. A new account gets a
     * verified email and runs the sign-up hooks (free plan), like any other.
     */
    async ensureOperator(
      input: { email: string; password: string | null; role: 'ADMIN' | 'SUPER_ADMIN' },
      audit: AuditWriter,
    ): Promise<{ outcome: 'created' | 'promoted' | 'unchanged'; user: UserRow }> {
      assertAssignableEmail(input.email);
      const passwordHash = input.password === null ? null : await hashPassword(input.password);
      return db.transaction(async (tx) => {
        const existing = await findActiveUserByEmail(tx, input.email);
        if (existing) {
          if (existing.status !== 'ACTIVE') throw conflict('This account is suspended. Lift the suspension before making it an operator.');
          // Never lowers a role: `create-admin` for a SUPER_ADMIN without --super leaves it a SUPER_ADMIN.
          if (existing.role === input.role || existing.role === 'SUPER_ADMIN') return { outcome: 'unchanged' as const, user: existing };
          const [updated] = await tx.update(users).set({ role: input.role, updatedAt: clock.now() }).where(eq(users.id, existing.id)).returning();
          activeUsers.changed(existing.id);
          await audit(
            { action: 'user.role.change', targetType: 'user', targetId: existing.id, before: { role: existing.role }, after: { role: input.role } },
            tx,
          );
          return { outcome: 'promoted' as const, user: updated! };
        }
        if (passwordHash === null) throw badRequest('A new account needs a password.', { field: 'password' });
        const user = await insertUser(tx, {
          email: input.email,
          passwordHash,
          name: 'Administrator',
          role: input.role,
          emailVerified: true,
          createdAt: clock.now(),
        });
        for (const hook of deps.onUserCreated) await hook(tx, user);
        await audit({ action: 'user.create', targetType: 'user', targetId: user.id, before: null, after: auditView(user) }, tx);
        return { outcome: 'created' as const, user };
      });
    },
  };
}

export type UserAdmin = ReturnType<typeof createUserAdmin>;
