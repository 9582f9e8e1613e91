import { and, eq, inArray, type SQL } from 'drizzle-orm';
import { payments, type PaymentStatus } from '../../db/schema/payments.js';
import type { Db } from '../../platform/db/database.js';
import { notFound } from '../../platform/http/errors.js';
import { newestFirstPage } from '../../platform/http/pagination.js';
import { isUuid } from './sandbox.js';
import type { PaymentRow } from './types.js';
import { publicKind } from './wording.js';

/** A payment as the API answers it (customers and operators). */
export function view(p: PaymentRow) {
  return {
    id: p.id,
    status: p.status,
    kind: publicKind(p.purposeKind),
    topUpOrderId: p.purposeKind === 'topup' ? p.purposeRef : null,
    subscriptionId: typeof p.purpose.subscriptionId === 'string' ? p.purpose.subscriptionId : null,
    tokensGranted: p.tokensGranted,
    amountCents: p.amountCents,
    currency: p.currency,
    provider: p.channel,
    recurring: p.recurring,
    fulfilment: p.fulfilment,
    reviewReason: p.reviewReason,
    paidAt: p.paidAt?.toISOString() ?? null,
    refundedAt: p.refundedAt?.toISOString() ?? null,
    tokensTakenBack: p.tokensTakenBack,
    tokensUnrecovered: p.tokensUnrecovered,
    expiresAt: p.expiresAt.toISOString(),
    createdAt: p.createdAt.toISOString(),
  };
}

/** Operators' listing of payments, newest first, filtered by status, channel and customer. */
export async function adminList(
  db: Db,
  query: { limit: number; cursor?: string | undefined; status?: PaymentStatus | undefined; channel?: string | undefined; userId?: string | undefined },
) {
  const filters: SQL[] = [];
  if (query.status) filters.push(eq(payments.status, query.status));
  if (query.channel) filters.push(eq(payments.channel, query.channel));
  if (query.userId) filters.push(eq(payments.userId, query.userId));
  const page = await newestFirstPage(db, payments, 'createdAt', filters.length ? and(...filters) : undefined, query);
  return { items: page.items.map((p) => ({ ...view(p), userId: p.userId })), nextCursor: page.nextCursor };
}

/** One payment as operators see it (any customer's), or 404. */
export async function adminGet(db: Db, paymentId: string) {
  const [payment] = isUuid(paymentId) ? await db.select().from(payments).where(eq(payments.id, paymentId)) : [];
  if (!payment) throw notFound('No such payment.');
  return { ...view(payment), userId: payment.userId };
}

/** Status, provider and paid time of payments by id (the top-up admin's order list). */
export async function summaries(db: Db, paymentIds: string[]): Promise<Map<string, { id: string; status: string; provider: string; paidAt: string | null }>> {
  if (paymentIds.length === 0) return new Map();
  const rows = await db
    .select({ id: payments.id, status: payments.status, channel: payments.channel, paidAt: payments.paidAt })
    .from(payments)
    .where(inArray(payments.id, paymentIds));
  return new Map(rows.map((r) => [r.id, { id: r.id, status: r.status, provider: r.channel, paidAt: r.paidAt?.toISOString() ?? null }]));
}
