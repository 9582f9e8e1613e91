import { and, eq, sql } from 'drizzle-orm';
import { usageRecords, type UsageStatus } from '../../db/schema/usage.js';
import type { Clock } from '../../platform/clock/clock.js';
import { newId } from '../../platform/ids.js';
import { bound, type BoundSql } from '../../platform/db/bound.js';
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

const TOKEN_CLASS_KEYS = ['input', 'cachedInput', 'cacheWrite', 'output', 'reasoning'] as const;
type TokenBreakdown = Record<(typeof TOKEN_CLASS_KEYS)[number], number> & { cacheWrite1h?: number };

/**
 * The token breakdown a text call's metadata keeps (`metadata.tokens`), as `{ tokens }`; nothing for other rows. The
 * 1-hour part of the cache writes is listed only when there was one (only Anthropic's `ttl: "1h"` writes have it).
 */
function tokensOf(metadata: Record<string, unknown>): { tokens?: TokenBreakdown } {
  const kept = metadata.tokens as Record<string, unknown> | undefined;
  if (typeof kept !== 'object' || kept === null) return {};
  const count = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0);
  const tokens = Object.fromEntries(TOKEN_CLASS_KEYS.map((key) => [key, count(kept[key])])) as TokenBreakdown;
  const hour = Math.min(count(kept.cacheWrite1h), tokens.cacheWrite);
  if (hour > 0) tokens.cacheWrite1h = hour;
  return { tokens };
}

const INSERT_RECORD = `
  insert into usage_records (id, user_id, subscription_id, model_id, provider_id, reseller_account_id, job_id, api_key_id, request_id,
    operation, status, input_units, output_units, credits_consumed, provider_cost_cents, latency_ms, metadata, created_at)
  values ($1::uuid, $2::uuid, $3::uuid, $4::uuid, $5::uuid, $6::uuid, $7::uuid, $8::uuid, $9, $10, $11, $12, $13, $14, $15, $16,
    $17::text::jsonb, $18::timestamptz)`;

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
        ...tokensOf(row.metadata),
        createdAt: row.createdAt.toISOString(),
        model: model ? { slug: model.slug, displayName: model.displayName, type: model.type } : null,
      };
    });
  }

  const whole = (n: number | undefined) => Math.max(0, Math.round(n ?? 0));

  /** The record's insert, run by `record`. */
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
      inputUnits: whole(input.inputUnits),
      outputUnits: whole(input.outputUnits),
      tokensConsumed: whole(input.tokensConsumed),
      providerCostCents: whole(input.providerCostCents),
      latencyMs: whole(input.latencyMs),
      metadata: input.metadata ?? {},
      createdAt: clock.now(),
    });
  }

  /** The same insert as bound SQL, for a caller's combined statement on the hot path (nothing built per call). */
  const recordPart = (input: UsageRecordInput): BoundSql =>
    bound(INSERT_RECORD, [
      newId(),
      input.userId,
      input.subscriptionId ?? null,
      input.modelId ?? null,
      input.providerId ?? null,
      input.providerAccountId ?? null,
      input.jobId ?? null,
      input.apiKeyId ?? null,
      input.requestId,
      input.operation,
      input.status,
      whole(input.inputUnits),
      whole(input.outputUnits),
      whole(input.tokensConsumed),
      whole(input.providerCostCents),
      whole(input.latencyMs),
      JSON.stringify(input.metadata ?? {}),
      clock.now().toISOString(),
    ]);

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

    recordPart,

    /** Admin analytics: calls, tokens and provider cost per day, provider and model, with the catalog's slugs. */
    async dailyTotals(range: UsageRange) {
      const [rows, { byId, providersBySlug }] = await Promise.all([usageByDay(db, range), catalog.snapshot()]);
      const providerSlugs = new Map([...providersBySlug.values()].map((p) => [p.id, p.slug]));
      return rows.map(({ providerId, modelId, ...sums }) =>
        Object.assign(sums, {
          provider: providerId ? (providerSlugs.get(providerId) ?? null) : null,
          model: modelId ? (byId.get(modelId)?.row.slug ?? null) : null,
        }),
      );
    },

    /**
     * Drops the record the wallet's sweeper wrote for `requestId` (the call outlived its reservation and is being
     * charged after all), so the record its settlement writes is the request's only one.
     */
    async dropSwept(requestId: string, tx: DbOrTx = db): Promise<void> {
      await tx.delete(usageRecords).where(and(eq(usageRecords.requestId, requestId), sql`${usageRecords.metadata}->>'settledBy' = 'sweeper'`));
    },

    async record(input: UsageRecordInput, tx: DbOrTx = db): Promise<UsageRecord> {
      const [row] = await recordQuery(input, tx).returning();
      return row!;
    },
  };
}

export type UsageService = ReturnType<typeof createUsageService>;
