import { and, gte, lt, notInArray, sql } from 'drizzle-orm';
import { usageRecords } from '../../db/schema/usage.js';
import type { Db } from '../../platform/db/database.js';

export interface UsageRange {
  from: Date;
  /** Exclusive end. */
  to: Date;
  /** Accounts whose usage is internal (the playground's identity). */
  excludeUserIds: string[];
}

/** Calls, tokens charged and provider cost per UTC day, provider and model (admin analytics). */
export async function usageByDay(db: Db, range: UsageRange) {
  const day = sql<string>`to_char(${usageRecords.createdAt} at time zone 'UTC', 'YYYY-MM-DD')`;
  const rows = await db
    .select({
      day,
      providerId: usageRecords.providerId,
      modelId: usageRecords.modelId,
      calls: sql<number>`count(*)::int`,
      failedCalls: sql<number>`(count(*) filter (where ${usageRecords.status} <> 'SUCCESS'))::int`,
      tokens: sql<string>`coalesce(sum(${usageRecords.tokensConsumed}), 0)`,
      providerCostCents: sql<string>`coalesce(sum(${usageRecords.providerCostCents}), 0)`,
    })
    .from(usageRecords)
    .where(
      and(
        gte(usageRecords.createdAt, range.from),
        lt(usageRecords.createdAt, range.to),
        range.excludeUserIds.length > 0 ? notInArray(usageRecords.userId, range.excludeUserIds) : undefined,
      ),
    )
    .groupBy(day, usageRecords.providerId, usageRecords.modelId)
    .orderBy(day, usageRecords.providerId, usageRecords.modelId);
  return rows.map((r) => ({ ...r, tokens: Number(r.tokens), providerCostCents: Number(r.providerCostCents) }));
}
