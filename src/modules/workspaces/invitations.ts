import { and, desc, eq, isNull } from 'drizzle-orm';
import { workspaceInvitations, workspaceMembers, type WorkspaceRole } from '../../db/schema/workspaces.js';
import type { Clock } from '../../platform/clock/clock.js';
import { hashToken, randomToken } from '../../platform/crypto/secrets.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import { AppError, badRequest, conflict, forbidden, notFound } from '../../platform/http/errors.js';
import { normalizeEmail, type AuthData } from '../auth/index.js';
import { memberCount, membershipOf, requireRole, toWorkspaceView } from './access.js';

export const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;
export const INVITATION_PREFIX = 'wsi_';

type InvitationRow = typeof workspaceInvitations.$inferSelect;

export interface InvitationDeps {
  db: Db;
  clock: Clock;
  users: Pick<AuthData['users'], 'findActiveById' | 'findActiveByEmail'>;
  /** A membership was created or removed: the member's active subscription may have changed. */
  membershipChanged: (userId: string, tx: DbOrTx) => Promise<void>;
}

type InvitationStatus = 'ACCEPTED' | 'DECLINED' | 'REVOKED' | 'EXPIRED' | 'PENDING';

const statusOf = (row: InvitationRow, now: Date): InvitationStatus =>
  row.acceptedAt ? 'ACCEPTED' : row.declinedAt ? 'DECLINED' : row.revokedAt ? 'REVOKED' : row.expiresAt <= now ? 'EXPIRED' : 'PENDING';

const toInvitationView = (row: InvitationRow, now: Date) => ({
  id: row.id,
  workspaceId: row.workspaceId,
  email: row.email,
  role: row.role,
  status: statusOf(row, now),
  expiresAt: row.expiresAt.toISOString(),
  createdAt: row.createdAt.toISOString(),
});

export function createInvitations(deps: InvitationDeps) {
  const { db, clock, users } = deps;

  /**
   * The invitation behind a token, locked, checked usable and addressed to the caller, whose email must be verified
   * (otherwise anyone who signs up with the invited address could use a leaked link); 400/403 with the reason otherwise.
   */
  async function usableInvitation(tx: DbOrTx, token: string, userId: string): Promise<InvitationRow> {
    const [row] = token.startsWith(INVITATION_PREFIX)
      ? await tx
          .select()
          .from(workspaceInvitations)
          .where(eq(workspaceInvitations.tokenHash, hashToken(token)))
          .for('update')
      : [];
    if (!row) throw badRequest('This invitation token is not valid. Check that you copied the whole link, or ask for a new invitation.');
    const status = statusOf(row, clock.now());
    if (status === 'ACCEPTED') throw badRequest('This invitation has already been used. Each invitation works once; ask for a new one if you need it.');
    if (status === 'DECLINED') throw badRequest('This invitation was declined. Ask the workspace for a new one.');
    if (status === 'REVOKED') throw badRequest('This invitation was withdrawn by the workspace. Ask for a new one.');
    if (status === 'EXPIRED') throw badRequest(`This invitation expired on ${row.expiresAt.toISOString()} (invitations are valid 7 days). Ask for a new one.`);
    const user = await users.findActiveById(userId, tx);
    if (!user || normalizeEmail(user.email) !== row.email) {
      throw forbidden('This invitation was sent to another email address. Sign in with the invited address to accept it.');
    }
    if (!user.emailVerified) {
      throw new AppError(
        403,
        'EMAIL_NOT_VERIFIED',
        `Verify your email address ${user.email} before answering this invitation: request a link with POST /v1/account/verify-email/send, open it, then try again.`,
      );
    }
    return row;
  }

  return {
    /** Admin+: invites an email (role MEMBER by default); a pending invitation to the same address is replaced. */
    async create(userId: string, workspaceId: string, input: { email: string; role?: Exclude<WorkspaceRole, 'OWNER'> }) {
      const email = normalizeEmail(input.email);
      return db.transaction(async (tx) => {
        const { member } = await membershipOf(tx, workspaceId, userId, { lock: true });
        requireRole(member, 'ADMIN', 'invite people');
        const invitee = await users.findActiveByEmail(email, tx);
        if (invitee) {
          const [existing] = await tx
            .select()
            .from(workspaceMembers)
            .where(and(eq(workspaceMembers.workspaceId, workspaceId), eq(workspaceMembers.userId, invitee.id)));
          if (existing) throw conflict(`${email} is already a member of this workspace.`, { email });
        }
        const now = clock.now();
        await tx
          .update(workspaceInvitations)
          .set({ revokedAt: now })
          .where(
            and(
              eq(workspaceInvitations.workspaceId, workspaceId),
              eq(workspaceInvitations.email, email),
              isNull(workspaceInvitations.acceptedAt),
              isNull(workspaceInvitations.declinedAt),
              isNull(workspaceInvitations.revokedAt),
            ),
          );
        const token = `${INVITATION_PREFIX}${randomToken()}`;
        const [row] = await tx
          .insert(workspaceInvitations)
          .values({
            workspaceId,
            email,
            role: input.role ?? 'MEMBER',
            tokenHash: hashToken(token),
            invitedBy: userId,
            expiresAt: new Date(now.getTime() + INVITATION_TTL_MS),
            createdAt: now,
          })
          .returning();
        return { token, invitation: toInvitationView(row!, now) };
      });
    },

    /** Admin+: the workspace's invitations, newest first (the last 100), with their status. */
    async list(userId: string, workspaceId: string) {
      const { member } = await membershipOf(db, workspaceId, userId);
      requireRole(member, 'ADMIN', 'see invitations');
      const rows = await db
        .select()
        .from(workspaceInvitations)
        .where(eq(workspaceInvitations.workspaceId, workspaceId))
        .orderBy(desc(workspaceInvitations.createdAt), desc(workspaceInvitations.id))
        .limit(100);
      const now = clock.now();
      return { items: rows.map((row) => toInvitationView(row, now)) };
    },

    /** Admin+: withdraws an invitation that was not used yet. */
    async revoke(userId: string, workspaceId: string, invitationId: string) {
      return db.transaction(async (tx) => {
        const { member } = await membershipOf(tx, workspaceId, userId);
        requireRole(member, 'ADMIN', 'withdraw invitations');
        const [row] = await tx
          .select()
          .from(workspaceInvitations)
          .where(and(eq(workspaceInvitations.id, invitationId), eq(workspaceInvitations.workspaceId, workspaceId)))
          .for('update');
        if (!row) throw notFound('No invitation with this id exists in this workspace.');
        if (row.acceptedAt) throw badRequest('This invitation was already accepted; remove the member instead.');
        if (!row.revokedAt) await tx.update(workspaceInvitations).set({ revokedAt: clock.now() }).where(eq(workspaceInvitations.id, row.id));
        return { ok: true as const };
      });
    },

    /** The invitee accepts: the membership is created and the token used up, in one transaction. */
    async accept(userId: string, token: string) {
      return db.transaction(async (tx) => {
        const invitation = await usableInvitation(tx, token, userId);
        const now = clock.now();
        const [joined] = await tx
          .insert(workspaceMembers)
          .values({ workspaceId: invitation.workspaceId, userId, role: invitation.role, createdAt: now })
          .onConflictDoNothing()
          .returning();
        if (!joined) throw conflict('You are already a member of this workspace.');
        await tx.update(workspaceInvitations).set({ acceptedAt: now, acceptedBy: userId }).where(eq(workspaceInvitations.id, invitation.id));
        await deps.membershipChanged(userId, tx);
        const { workspace } = await membershipOf(tx, invitation.workspaceId, userId);
        return toWorkspaceView(workspace, joined.role, await memberCount(tx, workspace.id));
      });
    },

    async decline(userId: string, token: string) {
      return db.transaction(async (tx) => {
        const invitation = await usableInvitation(tx, token, userId);
        await tx.update(workspaceInvitations).set({ declinedAt: clock.now() }).where(eq(workspaceInvitations.id, invitation.id));
        return { ok: true as const };
      });
    },
  };
}
