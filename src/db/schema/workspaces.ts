import { sql } from 'drizzle-orm';
import { index, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { users } from './auth.js';
import { createdAt, idColumn, tz } from './columns.js';

export const WORKSPACE_ROLES = ['OWNER', 'ADMIN', 'MEMBER'] as const;
export type WorkspaceRole = (typeof WORKSPACE_ROLES)[number];

/** Several users sharing one subscription (spec A "Workspace"). */
export const workspaces = pgTable('workspaces', {
  id: idColumn(),
  name: text('name').notNull(),
  slug: text('slug').notNull().unique(),
  createdAt: createdAt(),
  updatedAt: tz('updated_at').notNull().defaultNow(),
});

/** Who belongs to a workspace, with which role; exactly one OWNER per workspace (a unique partial index). */
export const workspaceMembers = pgTable(
  'workspace_members',
  {
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    role: text('role', { enum: WORKSPACE_ROLES }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.workspaceId, t.userId] }),
    uniqueIndex('workspace_members_one_owner_idx')
      .on(t.workspaceId)
      .where(sql`${t.role} = 'OWNER'`),
    index('workspace_members_user_idx').on(t.userId, t.createdAt),
  ],
);

/** An invitation by email: a single-use `wsi_` token (stored hashed), valid 7 days. */
export const workspaceInvitations = pgTable(
  'workspace_invitations',
  {
    id: idColumn(),
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    /** Lower-cased. */
    email: text('email').notNull(),
    role: text('role', { enum: ['ADMIN', 'MEMBER'] }).notNull(),
    tokenHash: text('token_hash').notNull().unique(),
    invitedBy: uuid('invited_by').notNull(),
    expiresAt: tz('expires_at').notNull(),
    acceptedAt: tz('accepted_at'),
    acceptedBy: uuid('accepted_by'),
    declinedAt: tz('declined_at'),
    revokedAt: tz('revoked_at'),
    createdAt: createdAt(),
  },
  (t) => [index('workspace_invitations_workspace_idx').on(t.workspaceId, t.createdAt)],
);
