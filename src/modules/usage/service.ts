import { usageRecords, type UsageStatus } from '../../db/schema/usage.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';

export interface UsageRecordInput {
  userId: string;
  subscriptionId?: string | null;
  modelId?: string | null;
  providerId?: string | null;
  /** The upstream account that served the call. */
  providerAccountId?: string | null;
  jobId?: string | null;
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

/** The per-request usage feed (spec A "Usage record"); the listing endpoints come with a later issue. */
export function createUsageService(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps;

  /** The record's insert (run by `record`, or sent in a caller's combined statement). */
  function recordQuery(input: UsageRecordInput, tx: DbOrTx = db) {
    return tx.insert(usageRecords).values({
      userId: input.userId,
      subscriptionId: input.subscriptionId ?? null,
      modelId: input.modelId ?? null,
      providerId: input.providerId ?? null,
      providerAccountId: input.providerAccountId ?? null,
      jobId: input.jobId ?? null,
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
    recordQuery,

    async record(input: UsageRecordInput, tx: DbOrTx = db): Promise<UsageRecord> {
      const [row] = await recordQuery(input, tx).returning();
      return row!;
    },
  };
}

export type UsageService = ReturnType<typeof createUsageService>;
