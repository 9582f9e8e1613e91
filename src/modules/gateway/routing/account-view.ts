import type { providerAccounts } from '../../../db/schema/gateway.js';
import { overBudget, spendCentsOf } from './pool-spend.js';

type AccountRow = typeof providerAccounts.$inferSelect;

/**
 * The last 4 characters of a key, shown to operators. A key of parts (Kling's `<access key>:<secret key>`) is hinted
 * by its public first part: the end of the whole string would be the end of the secret.
 */
export const keyHintOf = (apiKey: string): string => apiKey.split(':')[0]!.slice(-4);

/** An upstream account as operators see it: never its key, only the last 4 characters of its public part. */
export function accountView(row: AccountRow, now: Date, usable: boolean) {
  return {
    id: row.id,
    providerSlug: row.providerSlug,
    label: row.label,
    source: row.source,
    enabled: row.enabled,
    status: row.status,
    keyHint: row.keyHint,
    baseUrl: row.baseUrl,
    monthlyBudgetCents: row.monthlyBudgetCents,
    spendCents: spendCentsOf(row, now),
    overBudget: overBudget(row, now),
    consecutiveFailures: row.consecutiveFailures,
    lastError: row.lastFailureAt ? { code: row.lastErrorCode, message: row.lastErrorMessage, at: row.lastFailureAt.toISOString() } : null,
    lastSuccessAt: row.lastSuccessAt?.toISOString() ?? null,
    usable,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export type AccountView = ReturnType<typeof accountView>;
