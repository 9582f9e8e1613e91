import { randomBytes } from 'node:crypto';
import { and, asc, count, eq, inArray } from 'drizzle-orm';
import { workspaceMembers, workspaces, type WorkspaceRole } from '../../db/schema/workspaces.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import { isUniqueViolation } from '../../platform/db/errors.js';
import { badRequest, conflict, notFound } from '../../platform/http/errors.js';
import type { AuthData } from '../auth/index.js';
import type { SubscriptionsService } from '../subscriptions/service.js';
import { memberCount, membershipOf, requireRole, toWorkspaceView } from './access.js';
import { createInvitations } from './invitations.js';

export { WORKSPACE_ROLES, type WorkspaceRole } from '../../db/schema/workspaces.js';

export interface WorkspacesServiceDeps {
  db: Db;
  clock: Clock;
  users: Pick<AuthData['users'], 'findActiveById' | 'findActiveByEmail' | 'contactsOf'>;
  subscriptions: Pick<SubscriptionsService, 'activeForWorkspace' | 'membershipChanged'>;
}

const slugFrom = (name: string) =>
  name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');

/** Workspaces (spec A "Workspaces"): several users sharing one subscription, with OWNER, ADMIN and MEMBER roles. */
export function createWorkspacesService(deps: WorkspacesServiceDeps) {
  const { db, clock, users, subscriptions } = deps;
  const membershipChanged = (userId: string, tx: DbOrTx) => subscriptions.membershipChanged(userId, tx);
  const invitations = createInvitations({ db, clock, users, membershipChanged });

  return {
    invitations,

    /** The caller's workspaces with their role and member count, oldest membership first. */
    async list(userId: string) {
      const rows = await db
        .select({ workspace: workspaces, role: workspaceMembers.role })
        .from(workspaceMembers)
        .innerJoin(workspaces, eq(workspaces.id, workspaceMembers.workspaceId))
        .where(eq(workspaceMembers.userId, userId))
        .orderBy(asc(workspaceMembers.createdAt), asc(workspaces.id));
      const counts = rows.length
        ? await db
            .select({ workspaceId: workspaceMembers.workspaceId, n: count() })
            .from(workspaceMembers)
            .where(
              inArray(
                workspaceMembers.workspaceId,
                rows.map((r) => r.workspace.id),
              ),
            )
            .groupBy(workspaceMembers.workspaceId)
        : [];
      const countOf = new Map(counts.map((c) => [c.workspaceId, c.n]));
      return { items: rows.map((r) => toWorkspaceView(r.workspace, r.role, countOf.get(r.workspace.id) ?? 0)) };
    },

    /** The workspace ids a user belongs to, oldest membership first (the subscriptions module asks, to meter members). */
    async workspaceIdsOf(userId: string, tx: DbOrTx = db): Promise<string[]> {
      const rows = await tx
        .select({ id: workspaceMembers.workspaceId })
        .from(workspaceMembers)
        .where(eq(workspaceMembers.userId, userId))
        .orderBy(asc(workspaceMembers.createdAt), asc(workspaceMembers.workspaceId));
      return rows.map((r) => r.id);
    },

    /** Creates a workspace; the caller becomes its OWNER. A slug derived from the name gets a suffix when taken. */
    async create(userId: string, input: { name: string; slug?: string }) {
      const name = input.name.trim();
      const base = input.slug ?? (slugFrom(name).length >= 3 ? slugFrom(name) : `workspace-${slugFrom(name) || 'new'}`.replace(/-$/, ''));
      for (let attempt = 0; ; attempt++) {
        const slug = attempt === 0 ? base : `${base}-${randomBytes(3).toString('hex')}`;
        try {
          return await db.transaction(async (tx) => {
            const now = clock.now();
            const [workspace] = await tx.insert(workspaces).values({ name, slug, createdAt: now, updatedAt: now }).returning();
            await tx.insert(workspaceMembers).values({ workspaceId: workspace!.id, userId, role: 'OWNER', createdAt: now });
            await membershipChanged(userId, tx);
            return toWorkspaceView(workspace!, 'OWNER', 1);
          });
        } catch (err) {
          if (!isUniqueViolation(err)) throw err;
          if (input.slug) throw conflict(`The slug "${input.slug}" is taken. Choose another one.`, { field: 'slug' });
          if (attempt >= 4) throw err;
        }
      }
    },

    async get(userId: string, workspaceId: string) {
      const { workspace, member } = await membershipOf(db, workspaceId, userId);
      return toWorkspaceView(workspace, member.role, await memberCount(db, workspaceId));
    },

    /** Admin+: renames the workspace or changes its slug. */
    async update(userId: string, workspaceId: string, changes: { name?: string; slug?: string }) {
      try {
        return await db.transaction(async (tx) => {
          const { member } = await membershipOf(tx, workspaceId, userId, { lock: true });
          requireRole(member, 'ADMIN', 'change the workspace');
          const [workspace] = await tx
            .update(workspaces)
            .set({
              ...(changes.name !== undefined ? { name: changes.name.trim() } : {}),
              ...(changes.slug !== undefined ? { slug: changes.slug } : {}),
              updatedAt: clock.now(),
            })
            .where(eq(workspaces.id, workspaceId))
            .returning();
          return toWorkspaceView(workspace!, member.role, await memberCount(tx, workspaceId));
        });
      } catch (err) {
        if (isUniqueViolation(err)) throw conflict(`The slug "${changes.slug}" is taken. Choose another one.`, { field: 'slug' });
        throw err;
      }
    },

    /** Owner: deletes the workspace with its memberships and invitations; refused while a subscription runs on it. */
    async remove(userId: string, workspaceId: string) {
      return db.transaction(async (tx) => {
        const { member } = await membershipOf(tx, workspaceId, userId, { lock: true });
        requireRole(member, 'OWNER', 'delete the workspace');
        if (await subscriptions.activeForWorkspace(workspaceId, tx)) {
          throw badRequest('This workspace has an active subscription. It must end (or be moved by an operator) before the workspace can be deleted.');
        }
        const members = await tx.delete(workspaceMembers).where(eq(workspaceMembers.workspaceId, workspaceId)).returning({ userId: workspaceMembers.userId });
        await tx.delete(workspaces).where(eq(workspaces.id, workspaceId));
        for (const m of members) await membershipChanged(m.userId, tx);
        return { ok: true as const };
      });
    },

    /** Any member: the members with their role, the owner first. */
    async members(userId: string, workspaceId: string) {
      await membershipOf(db, workspaceId, userId);
      const rows = await db.select().from(workspaceMembers).where(eq(workspaceMembers.workspaceId, workspaceId)).orderBy(asc(workspaceMembers.createdAt));
      const contacts = await users.contactsOf(rows.map((r) => r.userId));
      const order: Record<WorkspaceRole, number> = { OWNER: 0, ADMIN: 1, MEMBER: 2 };
      return {
        items: rows
          .sort((a, b) => order[a.role] - order[b.role] || a.createdAt.getTime() - b.createdAt.getTime())
          .map((r) => ({
            id: r.userId,
            userId: r.userId,
            email: contacts.get(r.userId)?.email ?? null,
            name: contacts.get(r.userId)?.name ?? null,
            handle: contacts.get(r.userId)?.handle ?? null,
            role: r.role,
            joinedAt: r.createdAt.toISOString(),
          })),
      };
    },

    /**
     * Sets a member's role. OWNER (owner only) transfers ownership in one transaction: the target becomes OWNER and
     * the previous owner ADMIN. Otherwise admin+ sets ADMIN or MEMBER; the owner's role changes only by a transfer.
     */
    async setRole(userId: string, workspaceId: string, memberId: string, role: WorkspaceRole) {
      return db.transaction(async (tx) => {
        const { member: caller } = await membershipOf(tx, workspaceId, userId, { lock: true });
        const [target] = await tx
          .select()
          .from(workspaceMembers)
          .where(and(eq(workspaceMembers.workspaceId, workspaceId), eq(workspaceMembers.userId, memberId)));
        if (!target) throw notFound('No member with this id belongs to this workspace.');
        if (role === 'OWNER') {
          requireRole(caller, 'OWNER', 'transfer ownership');
          if (target.userId !== caller.userId) {
            await tx
              .update(workspaceMembers)
              .set({ role: 'ADMIN' })
              .where(and(eq(workspaceMembers.workspaceId, workspaceId), eq(workspaceMembers.userId, caller.userId)));
            await tx
              .update(workspaceMembers)
              .set({ role: 'OWNER' })
              .where(and(eq(workspaceMembers.workspaceId, workspaceId), eq(workspaceMembers.userId, target.userId)));
          }
        } else {
          requireRole(caller, 'ADMIN', "change members' roles");
          if (target.role === 'OWNER') {
            throw badRequest("The owner's role changes only by a transfer: set another member's role to OWNER, and the owner becomes ADMIN.");
          }
          await tx
            .update(workspaceMembers)
            .set({ role })
            .where(and(eq(workspaceMembers.workspaceId, workspaceId), eq(workspaceMembers.userId, target.userId)));
        }
        const [updated] = await tx
          .select()
          .from(workspaceMembers)
          .where(and(eq(workspaceMembers.workspaceId, workspaceId), eq(workspaceMembers.userId, target.userId)));
        const contact = (await users.contactsOf([target.userId], tx)).get(target.userId);
        return {
          id: target.userId,
          userId: target.userId,
          email: contact?.email ?? null,
          name: contact?.name ?? null,
          handle: contact?.handle ?? null,
          role: updated!.role,
          joinedAt: updated!.createdAt.toISOString(),
        };
      });
    },

    /**
     * An account being deleted (in its transaction): it leaves every workspace. A workspace it owns alone is deleted
     * with it; owning one that has other members, or one with a subscription in effect, refuses the deletion (400).
     */
    async onAccountDeleted(tx: DbOrTx, userId: string): Promise<void> {
      const owned = await tx
        .select({ workspace: workspaces })
        .from(workspaceMembers)
        .innerJoin(workspaces, eq(workspaces.id, workspaceMembers.workspaceId))
        .where(and(eq(workspaceMembers.userId, userId), eq(workspaceMembers.role, 'OWNER')))
        .for('update', { of: workspaces });
      for (const { workspace } of owned) {
        if ((await memberCount(tx, workspace.id)) > 1) {
          throw badRequest(
            `You own the workspace "${workspace.name}", which has other members. Transfer its ownership (PATCH /v1/workspaces/${workspace.id}/members/:memberId with role OWNER) before deleting your account.`,
            { workspaceId: workspace.id },
          );
        }
        if (await subscriptions.activeForWorkspace(workspace.id, tx)) {
          throw badRequest(`Your workspace "${workspace.name}" has an active subscription; it must end before you can delete your account.`, {
            workspaceId: workspace.id,
          });
        }
        await tx.delete(workspaces).where(eq(workspaces.id, workspace.id));
      }
      await tx.delete(workspaceMembers).where(eq(workspaceMembers.userId, userId));
    },

    /** Admin+ removes a member, or a member leaves; the owner must transfer ownership before leaving. */
    async removeMember(userId: string, workspaceId: string, memberId: string) {
      return db.transaction(async (tx) => {
        const { member: caller } = await membershipOf(tx, workspaceId, userId, { lock: true });
        if (memberId !== caller.userId) requireRole(caller, 'ADMIN', 'remove members');
        const [target] = await tx
          .select()
          .from(workspaceMembers)
          .where(and(eq(workspaceMembers.workspaceId, workspaceId), eq(workspaceMembers.userId, memberId)));
        if (!target) throw notFound('No member with this id belongs to this workspace.');
        if (target.role === 'OWNER') {
          throw badRequest("The owner cannot leave or be removed: first transfer ownership by setting another member's role to OWNER.");
        }
        await tx.delete(workspaceMembers).where(and(eq(workspaceMembers.workspaceId, workspaceId), eq(workspaceMembers.userId, memberId)));
        await membershipChanged(memberId, tx);
        return { ok: true as const };
      });
    },
  };
}

export type WorkspacesService = ReturnType<typeof createWorkspacesService>;
