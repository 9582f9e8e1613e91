import { and, count, eq } from 'drizzle-orm';
import { workspaceMembers, workspaces, type WorkspaceRole } from '../../db/schema/workspaces.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { forbidden, notFound } from '../../platform/http/errors.js';

export type WorkspaceRow = typeof workspaces.$inferSelect;
export type MemberRow = typeof workspaceMembers.$inferSelect;

const RANK: Record<WorkspaceRole, number> = { MEMBER: 1, ADMIN: 2, OWNER: 3 };

export const workspaceNotFound = () => notFound('No workspace with this id exists among your workspaces.');

/**
 * The workspace and the caller's membership, or 404 for a workspace the caller does not belong to (indistinguishable
 * from a missing one). `lock` takes the workspace row, which serialises every membership change of the workspace.
 */
export async function membershipOf(
  tx: DbOrTx,
  workspaceId: string,
  userId: string,
  options: { lock?: boolean } = {},
): Promise<{ workspace: WorkspaceRow; member: MemberRow }> {
  const query = tx.select().from(workspaces).where(eq(workspaces.id, workspaceId));
  const [workspace] = options.lock ? await query.for('update') : await query;
  if (!workspace) throw workspaceNotFound();
  const [member] = await tx
    .select()
    .from(workspaceMembers)
    .where(and(eq(workspaceMembers.workspaceId, workspaceId), eq(workspaceMembers.userId, userId)));
  if (!member) throw workspaceNotFound();
  return { workspace, member };
}

/** 403 unless the member's role is at least `least`, naming what they tried and who may do it. */
export function requireRole(member: MemberRow, least: WorkspaceRole, action: string): void {
  if (RANK[member.role] >= RANK[least]) return;
  const who = least === 'OWNER' ? 'the workspace owner' : 'a workspace admin or the owner';
  throw forbidden(`Only ${who} can ${action}; your role in this workspace is ${member.role}.`, { requiredRole: least, role: member.role });
}

export async function memberCount(tx: DbOrTx, workspaceId: string): Promise<number> {
  const [row] = await tx.select({ n: count() }).from(workspaceMembers).where(eq(workspaceMembers.workspaceId, workspaceId));
  return row?.n ?? 0;
}

export const toWorkspaceView = (workspace: WorkspaceRow, role: WorkspaceRole, members: number) => ({
  id: workspace.id,
  name: workspace.name,
  slug: workspace.slug,
  role,
  memberCount: members,
  createdAt: workspace.createdAt.toISOString(),
});
