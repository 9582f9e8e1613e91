import { and, eq, type SQL } from 'drizzle-orm';
import { adminAuditLog } from '../../db/schema/audit.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import { newestFirstPage } from '../../platform/http/pagination.js';

/** Who made an admin change: the operator's principal, or the CLI (no account). */
export interface AuditActor {
  userId: string | null;
  role: string | null;
  requestId?: string | null;
}

export interface AuditEntry {
  /** Dotted verb: `<target>.<change>`, e.g. `model.update`, `user.role.change`. */
  action: string;
  targetType: string;
  targetId?: string | null;
  before?: unknown;
  after?: unknown;
  reason?: string | null;
}

export interface AuditQuery {
  limit: number;
  cursor?: string;
  action?: string;
  targetType?: string;
  targetId?: string;
  actorId?: string;
}

export type AuditRow = typeof adminAuditLog.$inferSelect;

/** The CLI's actor: changes made on the operator's machine with no account behind them. */
export const CLI_ACTOR: AuditActor = { userId: null, role: 'CLI' };

/** The admin audit trail: every operator change, appended in the change's own transaction. */
export function createAuditService({ db, clock }: { db: Db; clock: Clock }) {
  return {
    /** Appends one entry; pass the change's transaction so the trail and the change commit together. */
    async record(actor: AuditActor, entry: AuditEntry, tx: DbOrTx = db): Promise<void> {
      await tx.insert(adminAuditLog).values({
        actorId: actor.userId,
        actorRole: actor.role,
        action: entry.action,
        targetType: entry.targetType,
        targetId: entry.targetId ?? null,
        before: entry.before ?? null,
        after: entry.after ?? null,
        reason: entry.reason ?? null,
        requestId: actor.requestId ?? null,
        createdAt: clock.now(),
      });
    },

    /** Newest first, cursor-paged, filtered by any of action, target and actor. */
    async list(query: AuditQuery) {
      const filters: SQL[] = [];
      if (query.action) filters.push(eq(adminAuditLog.action, query.action));
      if (query.targetType) filters.push(eq(adminAuditLog.targetType, query.targetType));
      if (query.targetId) filters.push(eq(adminAuditLog.targetId, query.targetId));
      if (query.actorId) filters.push(eq(adminAuditLog.actorId, query.actorId));
      const page = await newestFirstPage(db, adminAuditLog, 'createdAt', filters.length ? and(...filters) : undefined, query);
      return { items: page.items.map(toAuditView), nextCursor: page.nextCursor };
    },
  };
}

export type AuditService = ReturnType<typeof createAuditService>;

const toAuditView = (r: AuditRow) => ({
  id: r.id,
  actor: { userId: r.actorId, role: r.actorRole },
  action: r.action,
  targetType: r.targetType,
  targetId: r.targetId,
  before: r.before ?? null,
  after: r.after ?? null,
  reason: r.reason,
  requestId: r.requestId,
  createdAt: r.createdAt.toISOString(),
});

/**
 * What a lower module's admin operation takes to audit its change inside its own transaction:
 * `(entry, tx) => audit.record(actor, entry, tx)`, built by the admin route for the calling operator.
 */
export type AuditWriter = (entry: AuditEntry, tx: DbOrTx) => Promise<void>;

export const auditWriterFor =
  (audit: Pick<AuditService, 'record'>, actor: AuditActor): AuditWriter =>
  (entry, tx) =>
    audit.record(actor, entry, tx);
