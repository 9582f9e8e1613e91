import { eq } from 'drizzle-orm';
import { subscriptionChanges, subscriptions } from '../../db/schema/subscriptions.js';
import type { Tx } from '../../platform/db/database.js';
import { badRequest, conflict } from '../../platform/http/errors.js';
import type { PlanRow } from '../plans/service.js';
import type { ChangeApplier } from './apply.js';
import type { BillingContext, ChangeLog } from './context.js';
import type { CouponDiscount, CouponsService } from './coupons.js';
import type { SwitchQuote } from './proration.js';
import type { SubscriptionRow } from './service.js';
import { currentSubscription, isFreeSubscription, openChangeForUpdate, type ChangeRow } from './store.js';

const paidChangeRefusal = (change: ChangeRow) =>
  badRequest(
    `A plan change you already paid for (to ${change.toPlanName}${change.effectiveAt ? ` on ${change.effectiveAt.toISOString()}` : ''}) is pending, so another one cannot be bought now. Contact support to reverse it.`,
    { changeId: change.id, planId: change.toPlanId, effectiveAt: change.effectiveAt?.toISOString() ?? null },
  );

/**
 * Records a priced switch in the caller's transaction: the open change it supersedes closed, the subscription that
 * carries the new plan, the change row, its coupon, and the change applied at once when nothing is left to pay.
 */
export function createSwitchRecorder(ctx: BillingContext, coupons: CouponsService, applier: ChangeApplier) {
  const { clock } = ctx;

  /** The subscription that will carry the new plan: a new PENDING one for a purchase from the free plan (or none). */
  async function carrierFor(tx: Tx, userId: string, current: SubscriptionRow | undefined, target: PlanRow): Promise<SubscriptionRow> {
    if (current && (!isFreeSubscription(current) || target.priceCents === 0)) return current;
    const now = clock.now();
    const [created] = await tx
      .insert(subscriptions)
      .values({
        userId,
        workspaceId: current?.workspaceId ?? null,
        planId: target.id,
        status: 'PENDING',
        origin: 'PURCHASE',
        startsAt: now,
        endsAt: null,
        cycle: 0,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    return created!;
  }

  async function record(
    tx: Tx,
    log: ChangeLog,
    args: {
      userId: string;
      current: SubscriptionRow | undefined;
      target: PlanRow;
      quote: SwitchQuote;
      discount: CouponDiscount | null;
      recurring: boolean;
      channel: string | null;
    },
  ) {
    const { userId, target, quote, discount } = args;
    const now = clock.now();
    // Locks go change first, then subscription, everywhere in this module (no deadlocks between workers).
    const open = await openChangeForUpdate(tx, userId);
    // The state priced must still hold: the same subscription in effect, on the same plan and cycle.
    const current = await currentSubscription(tx, userId, now, true);
    if (current?.id !== args.current?.id || current?.planId !== args.current?.planId || current?.cycle !== args.current?.cycle) {
      throw conflict('Your plan changed while this request was being priced. Ask for a new quote and try again.');
    }
    const superseded: string[] = [];
    if (open?.paidAt) throw paidChangeRefusal(open);
    if (open) {
      await applier.close(tx, log, open, 'SUPERSEDED');
      if (open.paymentId) superseded.push(open.paymentId);
    }
    if (!current && target.priceCents === 0) {
      // No subscription at all and a free plan: nothing to price or record.
      const [created] = await tx
        .insert(subscriptions)
        .values({ userId, planId: target.id, status: 'ACTIVE', origin: 'SWITCH', startsAt: now, endsAt: null, cycle: 1, createdAt: now, updatedAt: now })
        .returning();
      await log.changed(userId);
      return { carrier: created!, change: null, superseded };
    }
    const carrier = await carrierFor(tx, userId, current, target);
    const discountCents = discount?.discountCents ?? 0;
    const amountDueCents = quote.amountDueCents - discountCents;
    const settledByCoupon = discount !== null && amountDueCents === 0;
    const scheduled = quote.timing === 'scheduled';
    const [change] = await tx
      .insert(subscriptionChanges)
      .values({
        userId,
        subscriptionId: carrier.id,
        kind: quote.kind === 'upgrade' ? 'UPGRADE' : 'DOWNGRADE',
        status: amountDueCents > 0 ? 'AWAITING_PAYMENT' : scheduled ? 'SCHEDULED' : 'APPLIED',
        fromPlanId: current?.planId ?? null,
        fromCycle: carrier.cycle,
        toPlanId: target.id,
        toPlanName: target.name,
        toPlanInterval: target.interval,
        toPlanAllowance: target.tokenAllowance,
        planPriceCents: quote.planPriceCents,
        unusedCreditCents: quote.unusedCreditCents,
        discountCents,
        amountDueCents,
        currency: target.currency,
        couponId: discount?.coupon.id ?? null,
        channel: args.channel,
        recurring: args.recurring,
        paidAt: settledByCoupon ? now : null,
        effectiveAt: scheduled ? quote.effectiveAt : null,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    if (discount) {
      await coupons.reserve(tx, { coupon: discount.coupon, userId, changeId: change!.id, discountCents });
      if (settledByCoupon) await coupons.redeem(tx, change!.id);
    }
    if (scheduled) await tx.update(subscriptions).set({ nextPlanId: target.id, updatedAt: now }).where(eq(subscriptions.id, carrier.id));
    if (amountDueCents === 0 && !scheduled) await applier.apply(tx, log, change!, carrier);
    await log.changed(userId);
    return { carrier, change: change!, superseded };
  }

  return { record };
}
