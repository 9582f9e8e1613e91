import { eq, sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import { providerAccounts } from '../../../db/schema/gateway.js';
import type { Clock } from '../../../platform/clock/clock.js';
import type { Db } from '../../../platform/db/database.js';
import { writeBehind } from '../../../platform/db/write-behind.js';

type AccountRow = typeof providerAccounts.$inferSelect;

/**
 * Spend is added up in memory and written once a second as one increment per account, instead of every request
 * writing (and locking) the same row. Increments are atomic, so several instances add up correctly.
 */
const SPEND_FLUSH_MS = 1_000;

/** The month an account's spend counts for. */
export const periodOf = (date: Date) => date.toISOString().slice(0, 7);

export const overBudget = (row: AccountRow, now: Date) =>
  row.monthlyBudgetCents !== null && row.spendPeriod === periodOf(now) && row.spendMicros >= row.monthlyBudgetCents * 1_000_000;

/** Provider cost spent this month, in minor units (rounded up). */
export const spendCentsOf = (row: AccountRow, now: Date) => (row.spendPeriod === periodOf(now) ? Math.ceil(row.spendMicros / 1_000_000) : 0);

/** The upstream accounts' spend: added at once to the rows this instance reads, written behind in batches. */
export function createSpendBook(deps: { db: Db; clock: Clock; logger: FastifyBaseLogger }) {
  const { db, clock, logger } = deps;
  /** The rows last handed out per provider (the cache's own arrays): this instance's spend is added to them at once. */
  const handedOut = new Map<string, AccountRow[]>();
  const spend = writeBehind<number>({
    delayMs: SPEND_FLUSH_MS,
    merge: (pending, micros) => pending + micros,
    async write(batch) {
      const now = clock.now();
      const period = periodOf(now);
      for (const [accountId, micros] of batch) {
        try {
          await db
            .update(providerAccounts)
            .set({
              spendMicros: sql`case when ${providerAccounts.spendPeriod} = ${period} then ${providerAccounts.spendMicros} + ${micros} else ${micros} end`,
              spendPeriod: period,
              updatedAt: now,
            })
            .where(eq(providerAccounts.id, accountId));
        } catch (err) {
          logger.warn({ err, accountId }, 'recording upstream spend failed; retrying with the next batch');
          spend.add(accountId, micros);
        }
      }
    },
  });

  return {
    /** The provider's rows as just read: this instance's later spend is added to them. */
    handedOut(providerSlug: string, rows: AccountRow[]): void {
      handedOut.set(providerSlug, rows);
    },

    /** Adds provider cost to the account's spend of the current month (a new month starts from zero). */
    record(accountId: string, micros: number): void {
      if (micros <= 0) return;
      const period = periodOf(clock.now());
      for (const rows of handedOut.values()) {
        const row = rows.find((r) => r.id === accountId);
        if (row) Object.assign(row, { spendMicros: row.spendPeriod === period ? row.spendMicros + micros : micros, spendPeriod: period });
      }
      spend.add(accountId, micros);
    },

    flush: () => spend.flush(),
  };
}
