import { eq } from 'drizzle-orm';
import { subscriptionChanges, subscriptions } from '../../db/schema/subscriptions.js';
import type { Tx } from '../../platform/db/database.js';
import type { ChangeApplier } from './apply.js';
import type { BillingContext } from './context.js';
import type { CouponsService } from './coupons.js';
import type { ConfirmedPayment, FulfilmentResult } from './payments-port.js';
import { lockChange, lockSubscription, openChangeForUpdate, type ChangeRow } from './store.js';

/**
 * What the payments module calls when a gateway confirms a payment whose purpose is a subscription change, inside
 * the transaction that records the confirmation. Exactly once per payment: the change row is locked, a repeat of
 * the same payment answers `already_fulfilled`, and the change's payment id is unique.
 */
export function createFulfilment(ctx: BillingContext, coupons: CouponsService, applier: ChangeApplier) {
  const { clock } = ctx;

  return async function fulfilSubscriptionPayment(tx: Tx, payment: ConfirmedPayment): Promise<FulfilmentResult> {
    const now = clock.now();
    const change = await lockChange(tx, payment.purpose.changeId);
    if (!change || change.userId !== payment.userId) return { status: 'unfulfillable', reason: 'No such plan change for this customer.' };
    if (change.paidAt) {
      return change.paymentId === payment.id
        ? { status: 'already_fulfilled', changeId: change.id, subscriptionId: change.subscriptionId }
        : { status: 'unfulfillable', reason: 'This plan change was already paid by another payment.' };
    }
    if (change.paymentId && change.paymentId !== payment.id) return { status: 'unfulfillable', reason: 'This plan change belongs to another checkout.' };
    if (payment.amountCents !== change.amountDueCents || payment.currency !== change.currency) {
      return {
        status: 'unfulfillable',
        reason: `Paid ${payment.amountCents} ${payment.currency}, but the change costs ${change.amountDueCents} ${change.currency}.`,
      };
    }
    if (change.status !== 'AWAITING_PAYMENT') {
      const late = change.status === 'EXPIRED' && (await lateMoneyStillApplies(tx, change));
      if (!late) return { status: 'unfulfillable', reason: `The plan change was ${change.status.toLowerCase()} before the payment arrived.` };
    }

    const log = ctx.foreignLog(tx);
    const [paid] = await tx
      .update(subscriptionChanges)
      .set({ status: change.effectiveAt && change.effectiveAt > now ? 'SCHEDULED' : change.status, paymentId: payment.id, paidAt: now, updatedAt: now })
      .where(eq(subscriptionChanges.id, change.id))
      .returning();
    await coupons.redeem(tx, change.id);
    const sub = (await lockSubscription(tx, change.subscriptionId))!;
    if (paid!.status === 'SCHEDULED') {
      await tx.update(subscriptions).set({ nextPlanId: change.toPlanId, updatedAt: now }).where(eq(subscriptions.id, sub.id));
      await log.changed(sub.userId);
      return { status: 'fulfilled', changeId: change.id, subscriptionId: sub.id, applied: false, committed: () => log.committed() };
    }
    await applier.apply(tx, log, paid!, sub);
    return { status: 'fulfilled', changeId: change.id, subscriptionId: sub.id, applied: true, committed: () => log.committed() };
  };

  /**
   * Money for a checkout abandoned after a day still counts when nothing moved since: no other change is open, no
   * code was used (its hold was released), and the subscription is where it was when the change was priced.
   */
  async function lateMoneyStillApplies(tx: Tx, change: ChangeRow): Promise<boolean> {
    if (change.couponId) return false;
    if (await openChangeForUpdate(tx, change.userId)) return false;
    const sub = await lockSubscription(tx, change.subscriptionId);
    if (!sub || sub.cycle !== change.fromCycle) return false;
    if (sub.cycle === 0) return sub.status === 'EXPIRED'; // an unpaid purchase, expired with its checkout
    return sub.planId === change.fromPlanId && sub.status !== 'CANCELED';
  }
}

export type FulfilSubscriptionPayment = ReturnType<typeof createFulfilment>;
