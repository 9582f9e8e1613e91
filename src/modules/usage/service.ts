import { usageRecords, type UsageStatus } from '../../db/schema/usage.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import type { CatalogService } from '../catalog/service.js';
import { SUMMARY_WINDOWS, usagePage, usageTotals, type SummaryWindow, type UsageFeedQuery, type UsageRow } from './feed.js';

import { usageByDay, type UsageRange } from './daily.js';

export type { UsageRange } from './daily.js';
export { SUMMARY_WINDOWS, type SummaryWindow, type UsageFeedQuery } from './feed.js';

export interface UsageRecordInput {
  userId: string;
  subscriptionId?: string | null;
  modelId?: string | null;
  providerId?: string | null;
  /** The upstream account that served the call. */
  providerAccountId?: string | null;
  jobId?: string | null;
  /** The API key that made the call. */
  apiKeyId?: string | null;
  requestId: string;
  /** e.g. `text.generate`, `prompt.enhance`. */
  operation: string;
  status: UsageStatus;
  inputUnits?: number;
  outputUnits?: number;
  /** Tokens charged to the wallet. */
  tokensConsumed?: number;
  providerCostCents?: number;
  latencyMs?: number;
  metadata?: Record<string, unknown>;
}

export type UsageRecord = typeof usageRecords.$inferSelect;

const DAY_MS = 24 * 60 * 60 * 1000;

/** The per-request usage feed (spec A "Usage record", "Usage" endpoints). */
export function createUsageService(deps: { db: Db; clock: Clock; catalog: Pick<CatalogService, 'snapshot'> }) {
  const { db, clock, catalog } = deps;

  /** The wire shape of a record; the model's names come from the in-process catalog snapshot (no join). */
  async function toViews(rows: UsageRow[]) {
    const { byId } = await catalog.snapshot();
    return rows.map((row) => {
      const model = row.modelId ? byId.get(row.modelId)?.row : undefined;
      return {
        id: row.id,
        userId: row.userId,
        subscriptionId: row.subscriptionId,
        modelId: row.modelId,
        providerId: row.providerId,
        resellerAccountId: row.providerAccountId,
        jobId: row.jobId,
        apiKeyId: row.apiKeyId,
        requestId: row.requestId,
        operation: row.operation,
        status: row.status,
        inputUnits: row.inputUnits,
        outputUnits: row.outputUnits,
        creditsConsumed: row.tokensConsumed,
        providerCostCents: row.providerCostCents,
        latencyMs: row.latencyMs,
        metadata: row.metadata,
        createdAt: row.createdAt.toISOString(),
        model: model ? { slug: model.slug, displayName: model.displayName, type: model.type } : null,
      };
    });
  }

  /** The record's insert (run by `record`, or sent in a caller's combined statement). */
  function recordQuery(input: UsageRecordInput, tx: DbOrTx = db) {
    return tx.insert(usageRecords).values({
      userId: input.userId,
      subscriptionId: input.subscriptionId ?? null,
      modelId: input.modelId ?? null,
      providerId: input.providerId ?? null,
      providerAccountId: input.providerAccountId ?? null,
      jobId: input.jobId ?? null,
      apiKeyId: input.apiKeyId ?? null,
      requestId: input.requestId,
      operation: input.operation,
      status: input.status,
      inputUnits: Math.max(0, Math.round(input.inputUnits ?? 0)),
      outputUnits: Math.max(0, Math.round(input.outputUnits ?? 0)),
      tokensConsumed: Math.max(0, Math.round(input.tokensConsumed ?? 0)),
      providerCostCents: Math.max(0, Math.round(input.providerCostCents ?? 0)),
      latencyMs: Math.max(0, Math.round(input.latencyMs ?? 0)),
      metadata: input.metadata ?? {},
      createdAt: clock.now(),
    });
  }

  return {
    /** `GET /v1/usage`: the caller's records, newest first; `nextCursor` is the id of the last row returned. */
    async list(userId: string, query: UsageFeedQuery) {
      const page = await usagePage(db, userId, query);
      return { items: await toViews(page.rows), nextCursor: page.nextCursor };
    },

    /** `GET /v1/usage/summary`: counts and sums of the last 1, 7 or 30 days, by operation and status and by model. */
    async summary(userId: string, window: SummaryWindow) {
      const since = new Date(clock.now().getTime() - SUMMARY_WINDOWS[window] * DAY_MS);
      return { window, since: since.toISOString(), ...(await usageTotals(db, userId, since)) };
    },

    recordQuery,

    /** Admin analytics: calls, tokens and provider cost per day, provider and model, with the catalog's slugs. */
    async dailyTotals(range: UsageRange) {
      const [rows, { byId, providersBySlug }] = await Promise.all([usageByDay(db, range), catalog.snapshot()]);
      const providerSlugs = new Map([...providersBySlug.values()].map((p) => [p.id, p.slug]));
      return rows.map(({ providerId, modelId, ...sums }) => ({
        ...sums,
        provider: providerId ? (providerSlugs.get(providerId) ?? null) : null,
        model: modelId ? (byId.get(modelId)?.row.slug ?? null) : null,
      }));
    },

    async record(input: UsageRecordInput, tx: DbOrTx = db): Promise<UsageRecord> {
      const [row] = await recordQuery(input, tx).returning();
      return row!;
    },
  };
}

export type UsageService = ReturnType<typeof createUsageService>;
