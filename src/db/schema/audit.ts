import { index, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn } from './columns.js';

/**
 * Every change an operator makes through the admin API or the admin CLI: who, when, what, before and after.
 * Rows are only ever inserted. `actorId` is not a foreign key so the trail outlives a deleted operator account.
 */
export const adminAuditLog = pgTable(
  'admin_audit_log',
  {
    id: idColumn(),
    /** The operator's user id; null for the CLI run without an account. */
    actorId: uuid('actor_id'),
    actorRole: text('actor_role'),
    /** Dotted verb, e.g. `model.update`, `user.role.change`, `topup.settings.update`. */
    action: text('action').notNull(),
    targetType: text('target_type').notNull(),
    targetId: text('target_id'),
    before: jsonb('before').$type<unknown>(),
    after: jsonb('after').$type<unknown>(),
    reason: text('reason'),
    requestId: text('request_id'),
    createdAt: createdAt(),
  },
  // The log is read newest first, whole or by target, action or operator: each walk is one of these indexes.
  (t) => [
    index('admin_audit_log_created_idx').on(t.createdAt, t.id),
    index('admin_audit_log_target_idx').on(t.targetType, t.targetId, t.createdAt, t.id),
    index('admin_audit_log_action_idx').on(t.action, t.createdAt, t.id),
    index('admin_audit_log_actor_idx').on(t.actorId, t.createdAt, t.id),
  ],
);
