import { and, eq, gte, lt, notInArray, sql } from 'drizzle-orm';
import { payments } from '../../db/schema/payments.js';
import type { Db } from '../../platform/db/database.js';

export interface RevenueRange {
  from: Date;
  /** Exclusive end. */
  to: Date;
  /** Accounts whose payments are not revenue (the playground's internal identity). */
  excludeUserIds: string[];
}

/** What a payment bought: a plan (`subscription`), tokens (`topup`), or another purpose a module registered. */
const kindOf = (purposeKind: string) => (purposeKind === 'subscription' ? 'SUBSCRIPTION' : purposeKind === 'topup' ? 'TOPUP' : purposeKind.toUpperCase());

/**
 * Revenue per UTC day of payment, channel, currency and kind: payments that succeeded (status SUCCEEDED; a refunded
 * payment is no longer revenue), counted by the amount the gateway confirmed.
 */
export async function revenueByDay(db: Db, range: RevenueRange) {
  const day = sql<string>`to_char(${payments.paidAt} at time zone 'UTC', 'YYYY-MM-DD')`;
  const rows = await db
    .select({
      day,
      channel: payments.channel,
      currency: payments.currency,
      purposeKind: payments.purposeKind,
      payments: sql<number>`count(*)::int`,
      amountCents: sql<string>`sum(coalesce(${payments.paidAmountCents}, ${payments.amountCents}))`,
    })
    .from(payments)
    .where(
      and(
        eq(payments.status, 'SUCCEEDED'),
        gte(payments.paidAt, range.from),
        lt(payments.paidAt, range.to),
        range.excludeUserIds.length > 0 ? notInArray(payments.userId, range.excludeUserIds) : undefined,
      ),
    )
    .groupBy(day, payments.channel, payments.currency, payments.purposeKind)
    .orderBy(day, payments.channel, payments.currency, payments.purposeKind);
  return rows.map((r) => ({
    day: r.day,
    channel: r.channel,
    currency: r.currency,
    kind: kindOf(r.purposeKind),
    payments: r.payments,
    amountCents: Number(r.amountCents),
  }));
}
