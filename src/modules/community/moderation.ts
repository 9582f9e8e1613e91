import { and, eq, inArray, isNull, sql, type SQL } from 'drizzle-orm';
import { REPORT_STATUSES, communityComments, communityPosts, communityReports, type ReportTarget } from '../../db/schema/community.js';
import type { Tx } from '../../platform/db/database.js';
import { badRequest, conflict, notFound } from '../../platform/http/errors.js';
import { newestFirstPage } from '../../platform/http/pagination.js';
import type { AuditWriter } from '../audit/service.js';
import type { CommunityDeps } from './deps.js';
import type { Works } from './works.js';

export type ReportStatus = (typeof REPORT_STATUSES)[number];
type ReportRow = typeof communityReports.$inferSelect;

export interface ReportQuery {
  status?: ReportStatus;
  targetType?: ReportTarget;
  limit: number;
  cursor?: string;
}

/** Reports still waiting for a moderator. */
const UNRESOLVED: ReportStatus[] = ['OPEN', 'REVIEWING'];

const noSuchReport = () => notFound('No such report.');

export const toReportView = (r: ReportRow) => ({
  id: r.id,
  reporterId: r.reporterId,
  targetType: r.targetType,
  targetId: r.targetId,
  reason: r.reason,
  details: r.details,
  status: r.status,
  createdAt: r.createdAt.toISOString(),
  resolvedAt: r.resolvedAt?.toISOString() ?? null,
  resolvedBy: r.resolvedBy,
  resolutionNote: r.resolutionNote,
});

/**
 * The moderators' side of reports (spec A: reports are "routed to admin moderation"): the queue, resolving a report
 * (dismissed, or action taken) with a note, and hiding the reported post or comment. A reported USER is dealt with
 * by suspending the account (the users admin). Every change is audited in its own transaction.
 */
export function createModeration(deps: CommunityDeps, works: Works) {
  const { db, clock } = deps;

  async function lockedReport(tx: Tx, reportId: string): Promise<ReportRow> {
    const [report] = await tx.select().from(communityReports).where(eq(communityReports.id, reportId)).for('update');
    if (!report) throw noSuchReport();
    return report;
  }

  /** Closes every unresolved report on a target (the one acted on and duplicates from other reporters). */
  async function closeReportsOn(tx: Tx, report: ReportRow, status: 'ACTIONED' | 'DISMISSED', operatorId: string | null, note: string | null, at: Date) {
    return tx
      .update(communityReports)
      .set({ status, resolvedAt: at, resolvedBy: operatorId, resolutionNote: note })
      .where(
        and(eq(communityReports.targetType, report.targetType), eq(communityReports.targetId, report.targetId), inArray(communityReports.status, UNRESOLVED)),
      )
      .returning();
  }

  return {
    /** Oldest-first would starve new reports under a backlog of old ones; newest first like every other list. */
    async list(query: ReportQuery) {
      const filters: SQL[] = [];
      if (query.status) filters.push(eq(communityReports.status, query.status));
      if (query.targetType) filters.push(eq(communityReports.targetType, query.targetType));
      const page = await newestFirstPage(db, communityReports, 'createdAt', filters.length ? and(...filters) : undefined, query);
      return { items: page.items.map(toReportView), nextCursor: page.nextCursor };
    },

    async get(reportId: string) {
      const [report] = await db.select().from(communityReports).where(eq(communityReports.id, reportId));
      if (!report) throw noSuchReport();
      return toReportView(report);
    },

    /** Resolves one unresolved report: DISMISSED (nothing wrong) or ACTIONED (dealt with); 409 when already resolved. */
    async resolve(reportId: string, input: { outcome: 'ACTIONED' | 'DISMISSED'; note: string }, operatorId: string | null, audit: AuditWriter) {
      return db.transaction(async (tx) => {
        const report = await lockedReport(tx, reportId);
        if (!UNRESOLVED.includes(report.status)) throw conflict(`This report was already resolved (${report.status}).`);
        const [updated] = await tx
          .update(communityReports)
          .set({ status: input.outcome, resolvedAt: clock.now(), resolvedBy: operatorId, resolutionNote: input.note })
          .where(eq(communityReports.id, reportId))
          .returning();
        await audit(
          {
            action: 'report.resolve',
            targetType: 'report',
            targetId: reportId,
            before: { status: report.status },
            after: { status: input.outcome },
            reason: input.note,
          },
          tx,
        );
        return toReportView(updated!);
      });
    },

    /**
     * Hides the reported post (from every feed, list and the gallery) or comment (and its replies; the post's comment
     * count follows), then closes every unresolved report on it as ACTIONED. A reported USER is refused with a 400
     * that names the suspend route. Hiding hidden content again changes nothing but still closes open reports.
     */
    async hideReportedContent(reportId: string, note: string, operatorId: string | null, audit: AuditWriter) {
      return db.transaction(async (tx) => {
        const report = await lockedReport(tx, reportId);
        if (report.targetType === 'USER') {
          throw badRequest(`A reported user is not content to hide. Suspend the account instead: POST /v1/admin/users/${report.targetId}/suspend.`, {
            targetType: 'USER',
          });
        }
        const now = clock.now();
        const hidden = report.targetType === 'POST' ? await hidePost(tx, report.targetId, now) : await hideComment(tx, report.targetId, now);
        if (hidden > 0) {
          await audit(
            {
              action: `community.${report.targetType.toLowerCase()}.hide`,
              targetType: report.targetType.toLowerCase(),
              targetId: report.targetId,
              before: { hidden: false },
              after: { hidden: true, items: hidden, reportId },
              reason: note,
            },
            tx,
          );
        }
        const closed = await closeReportsOn(tx, report, 'ACTIONED', operatorId, note, now);
        for (const r of closed)
          await audit(
            { action: 'report.resolve', targetType: 'report', targetId: r.id, before: { status: 'OPEN' }, after: { status: 'ACTIONED' }, reason: note },
            tx,
          );
        const [current] = await tx.select().from(communityReports).where(eq(communityReports.id, reportId));
        return { report: toReportView(current!), hidden: hidden > 0, reportsClosed: closed.length };
      });
    },
  };

  /** Returns 1 when the post was hidden now, 0 when it already was (or is gone). */
  async function hidePost(tx: Tx, postId: string, at: Date): Promise<number> {
    const rows = await tx
      .update(communityPosts)
      .set({ hiddenAt: at, updatedAt: at })
      .where(and(eq(communityPosts.id, postId), isNull(communityPosts.hiddenAt)))
      .returning({ id: communityPosts.id });
    if (rows.length > 0) await works.hideForPost(tx, postId);
    return rows.length;
  }

  /** Hides the comment and its replies; returns how many were hidden now. */
  async function hideComment(tx: Tx, commentId: string, at: Date): Promise<number> {
    const [comment] = await tx.select().from(communityComments).where(eq(communityComments.id, commentId)).for('update');
    if (!comment) return 0;
    const gone = await tx
      .update(communityComments)
      .set({ hiddenAt: at })
      .where(and(isNull(communityComments.hiddenAt), sql`(${communityComments.id} = ${comment.id} or ${communityComments.parentId} = ${comment.id})`))
      .returning({ id: communityComments.id, deletedAt: communityComments.deletedAt });
    // The count holds listed comments: only those that were still listed (not deleted) leave it.
    const listed = gone.filter((c) => c.deletedAt === null).length;
    if (listed > 0)
      await tx
        .update(communityPosts)
        .set({ commentCount: sql`${communityPosts.commentCount} - ${listed}` })
        .where(eq(communityPosts.id, comment.postId));
    return gone.length;
  }
}

export type Moderation = ReturnType<typeof createModeration>;
