import { and, eq, isNull } from 'drizzle-orm';
import { payments } from '../../db/schema/payments.js';
import { badRequest, conflict, notFound } from '../../platform/http/errors.js';
import type { AuditWriter } from '../audit/service.js';
import type { Confirmation } from './confirm.js';
import type { PaymentsContext } from './context.js';
import { view } from './payment-view.js';
import { isUuid } from './sandbox.js';

/**
 * Refunds a paid payment (operators): the gateway gives the money back where its API can, and the books follow at
 * once (tokens taken back as far as the balance allows; the rest recorded). The gateway's refund callback later
 * finds it already refunded and changes nothing.
 */
export async function refundPayment(
  ctx: Pick<PaymentsContext, 'db' | 'clock' | 'channels'>,
  confirmation: Pick<Confirmation, 'refundBooks'>,
  paymentId: string,
  reason: string,
  audit?: AuditWriter,
) {
  const { db, clock } = ctx;
  const [before] = isUuid(paymentId) ? await db.select().from(payments).where(eq(payments.id, paymentId)) : [];
  if (!before) throw notFound('No such payment.');
  if (before.status !== 'SUCCEEDED')
    throw badRequest(`Only a paid payment can be refunded; this one is ${before.status.toLowerCase()}.`, { status: before.status });
  // Claimed first, so two refunds of one payment never both ask the gateway. The gateway is asked outside any
  // transaction: its refund callback may arrive while we wait, and it must find the row unlocked.
  const [claimed] = await db
    .update(payments)
    .set({ refundRequestedAt: clock.now() })
    .where(and(eq(payments.id, paymentId), eq(payments.status, 'SUCCEEDED'), isNull(payments.refundRequestedAt)))
    .returning({ id: payments.id });
  if (!claimed) throw conflict('A refund of this payment is already under way or done. Reload the payment to see its status.');
  try {
    await ctx.channels.get(before.channel)?.adapter.refund?.(before);
  } catch (err) {
    await db.update(payments).set({ refundRequestedAt: null }).where(eq(payments.id, paymentId));
    throw err;
  }
  const refunded = await db.transaction(async (tx) => {
    const [locked] = await tx.select().from(payments).where(eq(payments.id, paymentId)).for('update');
    // The gateway's callback may already have applied the books; refundBooks then changes nothing.
    await confirmation.refundBooks(tx, locked!, reason);
    const [after] = await tx.select().from(payments).where(eq(payments.id, paymentId));
    await audit?.({ action: 'payment.refund', targetType: 'payment', targetId: paymentId, before: view(before), after: view(after!), reason }, tx);
    return after!;
  });
  return view(refunded);
}
