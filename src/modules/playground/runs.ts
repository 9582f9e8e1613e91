import { and, eq, gte, sql } from 'drizzle-orm';
import { playgroundRuns, type PlaygroundRunKind, type PlaygroundRunStatus } from '../../db/schema/playground.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db } from '../../platform/db/database.js';
import { AppError } from '../../platform/http/errors.js';
import { newestFirstPage } from '../../platform/http/pagination.js';

export type PlaygroundRunRow = typeof playgroundRuns.$inferSelect;

const PROMPT_CHARS = 500;
const DAY_MS = 86_400_000;

export interface RunStart {
  adminId: string;
  kind: PlaygroundRunKind;
  modelSlug: string;
  prompt: string;
  conversationId?: string | null;
}

export interface RunOutcome {
  status: PlaygroundRunStatus;
  requestId?: string | null;
  jobId?: string | null;
  tokensCharged?: number | null;
}

export interface HistoryQuery {
  limit: number;
  cursor?: string;
  adminId?: string;
  kind?: PlaygroundRunKind;
}

export const toRunView = (row: PlaygroundRunRow) => ({
  id: row.id,
  adminId: row.adminId,
  kind: row.kind,
  model: row.modelSlug,
  status: row.status,
  prompt: row.prompt,
  requestId: row.requestId,
  jobId: row.jobId,
  conversationId: row.conversationId,
  tokensCharged: row.tokensCharged,
  error: row.errorCode ? { code: row.errorCode, message: row.errorMessage ?? '' } : null,
  createdAt: row.createdAt.toISOString(),
});

/** The record of playground runs: who ran what and how it ended; the history and per-day analytics read it. */
export function createPlaygroundRuns(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps;

  async function insert(start: RunStart, outcome: RunOutcome & { errorCode?: string; errorMessage?: string }): Promise<PlaygroundRunRow> {
    const [row] = await db
      .insert(playgroundRuns)
      .values({
        adminId: start.adminId,
        kind: start.kind,
        modelSlug: start.modelSlug,
        prompt: start.prompt.slice(0, PROMPT_CHARS),
        conversationId: start.conversationId ?? null,
        status: outcome.status,
        requestId: outcome.requestId ?? null,
        jobId: outcome.jobId ?? null,
        tokensCharged: outcome.tokensCharged ?? null,
        errorCode: outcome.errorCode ?? null,
        errorMessage: outcome.errorMessage ?? null,
        createdAt: clock.now(),
      })
      .returning();
    return row!;
  }

  return {
    /**
     * Runs `call` and records it: the outcome `describe` reads from its answer, or FAILED with the error's code (the
     * error is then thrown on). Returns the answer and the run's id.
     */
    async track<T>(start: RunStart, call: () => Promise<T>, describe: (answer: T) => RunOutcome): Promise<{ answer: T; runId: string }> {
      let answer: T;
      try {
        answer = await call();
      } catch (err) {
        const error = err instanceof AppError ? err : null;
        await insert(start, { status: 'FAILED', errorCode: error?.code ?? 'INTERNAL', errorMessage: error?.message ?? 'The run failed unexpectedly.' });
        throw err;
      }
      const row = await insert(start, describe(answer));
      return { answer, runId: row.id };
    },

    /** A started job (video, or an image with `async`) ended: its run takes the job's outcome. */
    async jobEnded(
      jobId: string,
      outcome: { status: 'SUCCEEDED' | 'FAILED'; tokensCharged: number | null; errorCode: string | null; errorMessage: string | null },
    ): Promise<void> {
      await db
        .update(playgroundRuns)
        .set({ status: outcome.status, tokensCharged: outcome.tokensCharged, errorCode: outcome.errorCode, errorMessage: outcome.errorMessage })
        .where(and(eq(playgroundRuns.jobId, jobId), eq(playgroundRuns.status, 'QUEUED')));
    },

    /** Every operator's runs, newest first, optionally one operator's or one kind's. */
    async history(query: HistoryQuery) {
      const filters = and(query.adminId ? eq(playgroundRuns.adminId, query.adminId) : undefined, query.kind ? eq(playgroundRuns.kind, query.kind) : undefined);
      const page = await newestFirstPage(db, playgroundRuns, 'createdAt', filters, query);
      return { items: page.items.map(toRunView), nextCursor: page.nextCursor };
    },

    /** Runs per UTC day over the last `days` days (today included), every day listed, oldest first. */
    async perDay(days: number) {
      const today = Date.UTC(clock.now().getUTCFullYear(), clock.now().getUTCMonth(), clock.now().getUTCDate());
      const from = new Date(today - (days - 1) * DAY_MS);
      const day = sql<string>`to_char(${playgroundRuns.createdAt} at time zone 'UTC', 'YYYY-MM-DD')`;
      const rows = await db
        .select({
          day,
          runs: sql<number>`count(*)::int`,
          failed: sql<number>`(count(*) filter (where ${playgroundRuns.status} = 'FAILED'))::int`,
          tokensCharged: sql<string>`coalesce(sum(${playgroundRuns.tokensCharged}), 0)`,
        })
        .from(playgroundRuns)
        .where(gte(playgroundRuns.createdAt, from))
        .groupBy(day);
      const byDay = new Map(rows.map((row) => [row.day, row]));
      const items = Array.from({ length: days }, (_, i) => {
        const date = new Date(from.getTime() + i * DAY_MS).toISOString().slice(0, 10);
        const row = byDay.get(date);
        return { date, runs: Number(row?.runs ?? 0), failed: Number(row?.failed ?? 0), tokensCharged: Number(row?.tokensCharged ?? 0) };
      });
      return { from: items[0]!.date, to: items[items.length - 1]!.date, totalRuns: items.reduce((sum, d) => sum + d.runs, 0), days: items };
    },
  };
}

export type PlaygroundRuns = ReturnType<typeof createPlaygroundRuns>;
