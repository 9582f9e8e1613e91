import { and, desc, eq } from 'drizzle-orm';
import { paymentAgreements } from '../../db/schema/payments.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Tx } from '../../platform/db/database.js';
import { notFound } from '../../platform/http/errors.js';
import type { SubscriptionBillingService } from '../subscriptions/index.js';
import type { PaymentsContext } from './context.js';
import { isUuid } from './sandbox.js';
import type { PaymentRow } from './types.js';

// Saved payment agreements (a carrier subscription, a vaulted wallet): saved with a recurring payment, listed and
// cancelled by their owner.

/** Saves the agreement a recurring payment created (once: a repeat changes nothing). */
export async function saveAgreement(clock: Clock, tx: Tx, payment: PaymentRow, agreementId: string | null) {
  const label = payment.extra.msisdn ? `${payment.extra.paymentProvider ?? ''} ••••${payment.extra.msisdn.slice(-4)}`.trim() : `${payment.channel} account`;
  await tx
    .insert(paymentAgreements)
    .values({
      userId: payment.userId,
      channel: payment.channel,
      label,
      gatewayAgreementId: agreementId ?? payment.gatewayRef ?? payment.id,
      subscriptionId: typeof payment.purpose.subscriptionId === 'string' ? payment.purpose.subscriptionId : null,
      createdAt: clock.now(),
    })
    .onConflictDoNothing();
}

/** Tells the gateway to forget a saved agreement; ours is cancelled already, so a failure is only logged. */
async function revoke(ctx: PaymentsContext, row: typeof paymentAgreements.$inferSelect) {
  await ctx.channels
    .get(row.channel)
    ?.adapter.revokeAgreement?.(row.gatewayAgreementId)
    .catch((err: unknown) => ctx.logger.warn({ err, agreementId: row.id }, 'the gateway did not revoke a saved agreement'));
}

export async function listAgreements(ctx: PaymentsContext, userId: string) {
  const rows = await ctx.db.select().from(paymentAgreements).where(eq(paymentAgreements.userId, userId)).orderBy(desc(paymentAgreements.createdAt));
  return {
    items: rows.map((a) => ({
      id: a.id,
      channel: a.channel,
      label: a.label,
      status: a.status,
      subscriptionId: a.subscriptionId,
      createdAt: a.createdAt.toISOString(),
      cancelledAt: a.cancelledAt?.toISOString() ?? null,
    })),
  };
}

/** Stops charging a saved account: renewals on it stop (the running cycle is untouched). */
export async function cancelAgreement(ctx: PaymentsContext, userId: string, agreementId: string) {
  const { db, clock } = ctx;
  const [row] = isUuid(agreementId)
    ? await db
        .select()
        .from(paymentAgreements)
        .where(and(eq(paymentAgreements.id, agreementId), eq(paymentAgreements.userId, userId)))
    : [];
  if (!row) throw notFound(`No saved payment agreement of yours has the id "${agreementId}".`);
  if (row.status === 'ACTIVE') {
    await db.update(paymentAgreements).set({ status: 'CANCELLED', cancelledAt: clock.now() }).where(eq(paymentAgreements.id, row.id));
    await revoke(ctx, row);
  }
  return { ok: true as const, id: row.id, status: 'CANCELLED' as const };
}

/** `DELETE /v1/payments/recurring/:id`: the subscription stops renewing; the paid cycle runs to its end. */
export async function cancelRecurring(ctx: PaymentsContext, billing: Pick<SubscriptionBillingService, 'cancel'>, userId: string, subscriptionId: string) {
  const subscription = await billing.cancel(userId, subscriptionId);
  const cancelled = await ctx.db
    .update(paymentAgreements)
    .set({ status: 'CANCELLED', cancelledAt: ctx.clock.now() })
    .where(and(eq(paymentAgreements.userId, userId), eq(paymentAgreements.subscriptionId, subscriptionId), eq(paymentAgreements.status, 'ACTIVE')))
    .returning();
  for (const row of cancelled) await revoke(ctx, row);
  return { ok: true as const, subscriptionId, status: subscription.status, endsAt: subscription.endsAt ?? null };
}
