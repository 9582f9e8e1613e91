import { and, asc, eq, gte, inArray, isNull, lte, notExists } from 'drizzle-orm';
import { paymentAgreements, paymentEvents, paymentRenewals, payments } from '../../db/schema/payments.js';
import { domainEvents } from '../../platform/events/outbox.js';
import type { Confirmation } from './confirm.js';
import type { PaymentsContext } from './context.js';
import type { NewPayment } from './checkout.js';
import type { CheckoutSession } from '../subscriptions/index.js';

/** Payments are re-queried for this long after they were opened (money can arrive after the day of expiry). */
const REQUERY_WINDOW_MS = 3 * 24 * 60 * 60_000;
/** A gateway gets this long to call back before we ask it ourselves. */
const REQUERY_AFTER_MS = 60_000;

interface RenewalDue {
  subscriptionId: string;
  changeId: string;
  planId: string;
  amountCents: number;
  currency: string;
  channel: string | null;
}

/**
 * The reconciliation pass (a pg-boss cron job; every step is idempotent under row locks and unique keys, so two
 * instances running it at once change nothing twice):
 * 1. verified messages recorded but not applied (a fulfilment that threw) are applied again;
 * 2. checkouts still open after a minute are re-queried with their gateway, so a lost callback still grants;
 * 3. checkouts open for a day become EXPIRED (money that arrives later still grants);
 * 4. `subscription.renewal_due` events become a charge on the saved agreement.
 */
export function createReconciler(
  ctx: PaymentsContext,
  confirmation: Confirmation,
  deps: { openPayment(input: NewPayment, agreementId?: string): Promise<CheckoutSession> },
) {
  const { db, clock, logger } = ctx;

  async function applyRecorded(limit: number): Promise<number> {
    const events = await db
      .select({ id: paymentEvents.id })
      .from(paymentEvents)
      .where(isNull(paymentEvents.processedAt))
      .orderBy(asc(paymentEvents.createdAt))
      .limit(limit);
    let applied = 0;
    for (const event of events) {
      try {
        await confirmation.apply(event.id);
        applied++;
      } catch (err) {
        logger.error({ err, eventId: event.id }, 'a recorded payment message could not be applied; the next pass tries again');
      }
    }
    return applied;
  }

  async function requeryOpen(limit: number): Promise<number> {
    const now = clock.now().getTime();
    const open = await db
      .select()
      .from(payments)
      .where(
        and(
          inArray(payments.status, ['PENDING', 'EXPIRED']),
          eq(payments.fulfilment, 'NONE'),
          lte(payments.createdAt, new Date(now - REQUERY_AFTER_MS)),
          gte(payments.createdAt, new Date(now - REQUERY_WINDOW_MS)),
        ),
      )
      .orderBy(asc(payments.createdAt))
      .limit(limit);
    let settled = 0;
    for (const payment of open) {
      const runtime = ctx.channels.get(payment.channel);
      if (!runtime || !payment.gatewayRef) continue;
      try {
        const verified = await runtime.adapter.requery(payment);
        if (!verified || verified.outcome === 'pending') continue;
        if (verified.outcome !== 'succeeded' && payment.status !== 'PENDING') continue;
        await confirmation.confirm(payment.channel, payment, verified, 'requery');
        settled++;
      } catch (err) {
        logger.warn({ err, paymentId: payment.id, channel: payment.channel }, 'payment re-query failed; the next pass tries again');
      }
    }
    return settled;
  }

  async function expire(): Promise<number> {
    const now = clock.now();
    const expired = await db
      .update(payments)
      .set({ status: 'EXPIRED', updatedAt: now })
      .where(and(eq(payments.status, 'PENDING'), lte(payments.expiresAt, now)))
      .returning({ id: payments.id });
    return expired.length;
  }

  async function chargeRenewals(limit: number): Promise<number> {
    const due = await db
      .select()
      .from(domainEvents)
      .where(
        and(
          eq(domainEvents.name, 'subscription.renewal_due'),
          notExists(db.select({ one: paymentRenewals.eventId }).from(paymentRenewals).where(eq(paymentRenewals.eventId, domainEvents.id))),
        ),
      )
      .orderBy(asc(domainEvents.createdAt))
      .limit(limit);
    let charged = 0;
    for (const event of due) {
      const [claimed] = await db
        .insert(paymentRenewals)
        .values({ eventId: event.id, outcome: 'CLAIMED', createdAt: clock.now() })
        .onConflictDoNothing()
        .returning();
      if (!claimed || !event.userId) continue;
      const data = event.data as unknown as RenewalDue;
      const [agreement] = data.channel
        ? await db
            .select()
            .from(paymentAgreements)
            .where(and(eq(paymentAgreements.userId, event.userId), eq(paymentAgreements.channel, data.channel), eq(paymentAgreements.status, 'ACTIVE')))
            .orderBy(asc(paymentAgreements.createdAt))
        : [];
      if (!agreement || !data.channel) {
        await db.update(paymentRenewals).set({ outcome: 'NO_AGREEMENT' }).where(eq(paymentRenewals.eventId, event.id));
        continue;
      }
      try {
        const [previous] = await db.select({ extra: payments.extra }).from(payments).where(eq(payments.gatewayRef, agreement.gatewayAgreementId));
        const renewal: NewPayment = {
          userId: event.userId,
          purpose: { kind: 'subscription', changeId: data.changeId, subscriptionId: data.subscriptionId, planId: data.planId, renewal: true },
          purposeRef: data.changeId,
          amountCents: data.amountCents,
          currency: data.currency,
          channel: data.channel,
          recurring: true,
          extra: previous?.extra ?? {},
          description: 'Plan renewal',
        };
        // The saved agreement pays without the customer: the channel charges it and calls back as for any payment.
        const session = await deps.openPayment(renewal, agreement.gatewayAgreementId);
        await db.update(paymentRenewals).set({ paymentId: session.paymentId, outcome: 'CHARGED' }).where(eq(paymentRenewals.eventId, event.id));
        charged++;
      } catch (err) {
        logger.warn({ err, eventId: event.id }, 'a renewal charge could not be opened; the subscription stays in grace');
        await db.update(paymentRenewals).set({ outcome: 'FAILED' }).where(eq(paymentRenewals.eventId, event.id));
      }
    }
    return charged;
  }

  return {
    async run(limit = 100) {
      const applied = await applyRecorded(limit);
      const requeried = await requeryOpen(limit);
      const expired = await expire();
      const renewals = await chargeRenewals(limit);
      return { applied, requeried, expired, renewals };
    },
  };
}
