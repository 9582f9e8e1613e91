import { and, eq, or } from 'drizzle-orm';
import { apiKeys, apiKeySpend } from '../../db/schema/apikeys.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { periodEndOf, periodStartOf } from './budget.js';

type ApiKeyRow = typeof apiKeys.$inferSelect;

type Spend = { spent: number; reserved: number };

const budgetView = (row: ApiKeyRow, spend: Spend | undefined, now: Date) => {
  if (row.budgetTokens === null || row.budgetPeriod === null) return null;
  return {
    tokens: row.budgetTokens,
    period: row.budgetPeriod,
    spentTokens: spend?.spent ?? 0,
    reservedTokens: spend?.reserved ?? 0,
    periodStart: periodStartOf(row.budgetPeriod, now).toISOString(),
    resetsAt: periodEndOf(row.budgetPeriod, now)?.toISOString() ?? null,
  };
};

export const toListed = (row: ApiKeyRow, spend?: Spend, now = new Date()) => ({
  id: row.id,
  label: row.label,
  keyPrefix: row.keyPrefix,
  scopes: row.scopes.join(','),
  lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
  expiresAt: row.expiresAt?.toISOString() ?? null,
  createdAt: row.createdAt.toISOString(),
  budget: budgetView(row, spend, now),
  rateLimit: row.rateLimitPerMinute === null ? null : { requestsPerMinute: row.rateLimitPerMinute },
  allowedModels: row.allowedModels,
});

/** The current period's spend of the budgeted keys among `rows`, in one query (none when no key has a budget). */
export async function spendOf(db: DbOrTx, rows: ApiKeyRow[], now: Date): Promise<Map<string, Spend>> {
  const budgeted = rows.filter((row) => row.budgetPeriod !== null);
  const spends = new Map<string, Spend>();
  if (budgeted.length === 0) return spends;
  const found = await db
    .select()
    .from(apiKeySpend)
    .where(or(...budgeted.map((row) => and(eq(apiKeySpend.apiKeyId, row.id), eq(apiKeySpend.periodStart, periodStartOf(row.budgetPeriod!, now))))));
  for (const spend of found) spends.set(spend.apiKeyId, { spent: spend.spent, reserved: spend.reserved });
  return spends;
}
