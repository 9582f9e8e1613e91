import { and, eq } from 'drizzle-orm';
import { paymentAgreements, paymentEvents, payments } from '../../db/schema/payments.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, Tx } from '../../platform/db/database.js';
import { isUniqueViolation } from '../../platform/db/errors.js';
import { createPort, type Port } from '../../platform/events/hooks.js';
import { emitDomainEvent } from '../../platform/events/outbox.js';
import { metricsOrPrivate, type Metrics } from '../../platform/metrics/metrics.js';
import type { NotificationsService } from '../notifications/service.js';
import type { WalletService } from '../wallet/service.js';
import { saveAgreement } from './agreements.js';
import { refundBooks as refundPaymentBooks } from './refund-books.js';
import type { FulfilmentHandler, PaymentRow, VerifiedCallback } from './types.js';
import { money, publicKind } from './wording.js';

export type PaymentEventRow = typeof paymentEvents.$inferSelect;

export interface ConfirmationDeps {
  db: Db;
  clock: Clock;
  wallet: Pick<WalletService, 'creditedForPayment' | 'reversePayment'>;
  notifications: Pick<NotificationsService, 'notify'>;
  /** After the commit of a carrier unsubscription: stop the subscription's future cycles (never a refund). */
  onUnsubscribed?: (payment: PaymentRow) => Promise<void>;
  /** Where applied gateway outcomes are counted (the service's registry). */
  metrics?: Metrics;
}

export type ApplyResult =
  | { status: 'replayed' }
  | { status: 'succeeded'; fulfilment: 'FULFILLED' | 'REVIEW' }
  | { status: 'review'; reason: string }
  | { status: 'unchanged' }
  | { status: 'failed' | 'cancelled' | 'refunded' | 'unsubscribed' };

/**
 * A verified gateway message is recorded first (its own statement, committed), then applied in one transaction:
 * the payment is locked, marked with the gateway's transaction id (unique per channel) and the charged amount, the
 * purchase is fulfilled by the handler its owning module registered, and the domain event and notification are
 * written beside it. A message applied once is a replay ever after; a handler that throws leaves the message
 * recorded and unapplied, for the reconciliation job to apply again.
 */
export function createConfirmation(deps: ConfirmationDeps) {
  const { db, clock } = deps;
  const fulfilments = new Map<string, Port<FulfilmentHandler>>();
  /** Where purchases of `kind` are fulfilled: the port its owning module connects its handler to. */
  function fulfilment(kind: string): Port<FulfilmentHandler> {
    let port = fulfilments.get(kind);
    if (!port) {
      port = createPort<FulfilmentHandler>(`payments.fulfilment(${kind})`, `payments.registerFulfilment('${kind}', handler) from the module that sells it`);
      fulfilments.set(kind, port);
    }
    return port;
  }
  const outcomes = metricsOrPrivate(deps.metrics).counter({
    name: 'storefront_payments_outcomes_total',
    help: 'Gateway messages applied to payments, by channel and outcome (succeeded, failed, cancelled, refunded, review, unsubscribed)',
    labelNames: ['channel', 'outcome'],
  });
  const refundBooks = (tx: Tx, payment: PaymentRow, why: string): Promise<boolean> => refundPaymentBooks(deps, tx, payment, why);

  async function record(channel: string, payment: PaymentRow, verified: VerifiedCallback, source: 'callback' | 'requery' | 'pin'): Promise<PaymentEventRow> {
    const [inserted] = await db
      .insert(paymentEvents)
      .values({
        paymentId: payment.id,
        channel,
        eventKey: verified.eventKey,
        outcome: verified.outcome === 'pending' ? 'pending' : verified.outcome,
        gatewayTxnId: verified.gatewayTxnId ?? null,
        amountCents: verified.amountCents ?? null,
        currency: verified.currency ?? null,
        source,
        agreementId: verified.agreementId ?? null,
        payload: verified.payload ?? {},
        createdAt: clock.now(),
      })
      .onConflictDoNothing({ target: [paymentEvents.channel, paymentEvents.eventKey] })
      .returning();
    if (inserted) return inserted;
    const [existing] = await db
      .select()
      .from(paymentEvents)
      .where(and(eq(paymentEvents.channel, channel), eq(paymentEvents.eventKey, verified.eventKey)));
    return existing!;
  }

  async function apply(eventId: string): Promise<ApplyResult> {
    let after: (() => Promise<void>) | null = null;
    const committed: Array<() => void> = [];
    let channel = '';
    try {
      const result = await db.transaction(async (tx) => {
        const [event] = await tx.select().from(paymentEvents).where(eq(paymentEvents.id, eventId)).for('update');
        if (!event || event.processedAt) return { status: 'replayed' } as const;
        channel = event.channel;
        const [payment] = await tx.select().from(payments).where(eq(payments.id, event.paymentId!)).for('update');
        const outcome = await applyTo(tx, payment!, event, committed);
        if (outcome.status === 'unsubscribed') after = () => deps.onUnsubscribed?.(payment!) ?? Promise.resolve();
        await tx.update(paymentEvents).set({ processedAt: clock.now(), lastError: null }).where(eq(paymentEvents.id, eventId));
        return outcome;
      });
      for (const done of committed) done();
      if (result.status !== 'replayed' && result.status !== 'unchanged') outcomes.inc({ channel, outcome: result.status });
      if (after) await (after as () => Promise<void>)();
      return result;
    } catch (err) {
      await db
        .update(paymentEvents)
        .set({ lastError: String((err as Error).message ?? err).slice(0, 500) })
        .where(eq(paymentEvents.id, eventId));
      throw err;
    }
  }

  async function applyTo(tx: Tx, payment: PaymentRow, event: PaymentEventRow, committed: Array<() => void>): Promise<ApplyResult> {
    const now = clock.now();
    switch (event.outcome) {
      case 'succeeded':
        return succeed(tx, payment, event, committed);
      case 'failed':
      case 'cancelled': {
        if (payment.status !== 'PENDING') return { status: 'unchanged' };
        const status = event.outcome === 'failed' ? 'FAILED' : 'CANCELLED';
        await tx.update(payments).set({ status, updatedAt: now }).where(eq(payments.id, payment.id));
        if (status === 'FAILED') {
          await deps.notifications.notify(tx, {
            userId: payment.userId,
            type: 'PAYMENT_FAILED',
            title: 'Payment failed',
            body: `Your payment of ${money(payment.amountCents, payment.currency)} for ${payment.description} did not go through. Nothing was charged; you can try again.`,
            payload: { paymentId: payment.id, kind: publicKind(payment.purposeKind) },
          });
        }
        return { status: event.outcome };
      }
      case 'refunded': {
        const paid = payment.paidAmountCents ?? payment.amountCents;
        if (payment.status === 'SUCCEEDED' && event.amountCents !== null && event.amountCents < paid) {
          // A partial refund: which tokens it stands for is a judgement, so it waits for an operator.
          const reason = `The gateway refunded ${money(event.amountCents, payment.currency)} of ${money(paid, payment.currency)}; no tokens were taken back.`;
          await tx.update(payments).set({ fulfilment: 'REVIEW', reviewReason: reason, updatedAt: now }).where(eq(payments.id, payment.id));
          return { status: 'review', reason };
        }
        return (await refundBooks(tx, payment, 'the gateway reported a refund')) ? { status: 'refunded' } : { status: 'unchanged' };
      }
      case 'unsubscribed':
        await tx
          .update(paymentAgreements)
          .set({ status: 'CANCELLED', cancelledAt: now })
          .where(and(eq(paymentAgreements.userId, payment.userId), eq(paymentAgreements.channel, payment.channel), eq(paymentAgreements.status, 'ACTIVE')));
        return { status: 'unsubscribed' };
      default:
        return { status: 'unchanged' };
    }
  }

  async function succeed(tx: Tx, payment: PaymentRow, event: PaymentEventRow, committed: Array<() => void>): Promise<ApplyResult> {
    const now = clock.now();
    if (payment.status === 'SUCCEEDED' || payment.status === 'REFUNDED' || payment.fulfilment !== 'NONE') return { status: 'unchanged' };
    const paid = event.amountCents;
    if (paid === null || paid !== payment.amountCents || (event.currency !== null && event.currency.toUpperCase() !== payment.currency)) {
      // Another amount than charged: nothing is granted; the payment waits, visibly, for an operator.
      const reason = `The gateway confirmed ${paid === null ? 'no amount' : money(paid, event.currency ?? payment.currency)}, but ${money(payment.amountCents, payment.currency)} was charged.`;
      await tx
        .update(payments)
        .set({ fulfilment: 'REVIEW', reviewReason: reason, paidAmountCents: paid, gatewayTxnId: event.gatewayTxnId, updatedAt: now })
        .where(eq(payments.id, payment.id));
      return { status: 'review', reason };
    }
    const handler = fulfilments.get(payment.purposeKind)?.current();
    const result = handler
      ? await handler(tx, { id: payment.id, userId: payment.userId, amountCents: paid, currency: payment.currency, purpose: payment.purpose })
      : ({ status: 'unfulfillable', reason: `Nothing fulfils purchases of kind "${payment.purposeKind}".` } as const);
    if ('committed' in result && result.committed) committed.push(result.committed);
    const fulfilment = result.status === 'unfulfillable' ? 'REVIEW' : 'FULFILLED';
    const tokensGranted = await deps.wallet.creditedForPayment(payment.id, tx);
    await tx
      .update(payments)
      .set({
        status: 'SUCCEEDED',
        fulfilment,
        reviewReason: result.status === 'unfulfillable' ? result.reason : null,
        paidAmountCents: paid,
        paidAt: now,
        gatewayTxnId: event.gatewayTxnId,
        tokensGranted,
        updatedAt: now,
      })
      .where(eq(payments.id, payment.id));
    const data = {
      paymentId: payment.id,
      kind: publicKind(payment.purposeKind),
      status: 'SUCCEEDED',
      amountCents: paid,
      currency: payment.currency,
      channel: payment.channel,
      tokensGranted,
      ...(payment.purposeKind === 'topup' ? { topUpOrderId: payment.purposeRef } : { subscriptionId: payment.purpose.subscriptionId ?? null }),
    };
    await emitDomainEvent(tx, 'payment.succeeded', data, { userId: payment.userId, at: now });
    await deps.notifications.notify(tx, {
      userId: payment.userId,
      type: 'PAYMENT_SUCCEEDED',
      title: 'Payment received',
      body: `We received ${money(paid, payment.currency)} for ${payment.description}.`,
      payload: { paymentId: payment.id, kind: data.kind, tokensGranted },
    });
    if (payment.recurring && event.gatewayTxnId && payment.purpose.renewal !== true) await saveAgreement(clock, tx, payment, event.agreementId);
    return { status: 'succeeded', fulfilment };
  }

  return {
    /** Registers the module that fulfils purchases of `kind`; returns a function that restores the previous handler. */
    registerFulfilment: (kind: string, handler: FulfilmentHandler): (() => void) => fulfilment(kind).connect(handler),
    fulfilmentHandler: (kind: string) => fulfilments.get(kind)?.current() ?? undefined,
    fulfilment,
    record,
    apply,
    /** Records then applies; a repeat of the same message is a replay that changes nothing. */
    async confirm(channel: string, payment: PaymentRow, verified: VerifiedCallback, source: 'callback' | 'requery' | 'pin') {
      const event = await record(channel, payment, verified, source);
      if (event.paymentId !== payment.id) return { status: 'replayed' } as ApplyResult;
      return apply(event.id);
    },
    refundBooks,
    isTxnConflict: (err: unknown) => isUniqueViolation(err, 'payments_gateway_txn_key'),
  };
}

export type Confirmation = ReturnType<typeof createConfirmation>;
