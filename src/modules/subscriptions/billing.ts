import type { Tx } from '../../platform/db/database.js';
import type { Connectable } from '../../platform/events/hooks.js';
import { createChangeApplier } from './apply.js';
import { createBillingContext, type SubscriptionBillingDeps } from './context.js';
import { createCouponsService } from './coupons.js';
import { createFulfilment } from './fulfilment.js';
import { createLifecycle } from './lifecycle.js';
import type { ConfirmedPayment, PaymentsPort } from './payments-port.js';
import { createReminders } from './reminders.js';
import { createSwitchService } from './switch.js';
import { createTrialAndCancel } from './trial-and-cancel.js';
import { createSubscriptionViews } from './view.js';

export type { SubscriptionBillingDeps } from './context.js';

/**
 * Subscription billing: trials, plan switches with proration, coupons, cancellation, and the scheduled lifecycle
 * (renewal, grace, expiry, reminders). The read side (`activeFor` and friends) stays in `service.ts`.
 */
export function createSubscriptionBillingService(deps: SubscriptionBillingDeps) {
  const ctx = createBillingContext(deps);
  const coupons = createCouponsService({ db: deps.db, clock: deps.clock });
  const applier = createChangeApplier(ctx, coupons);
  const switches = createSwitchService(ctx, coupons, applier);
  const trialAndCancel = createTrialAndCancel(ctx, applier);
  const views = createSubscriptionViews(ctx);
  const lifecycle = createLifecycle(ctx, applier);
  const sendReminders = createReminders(ctx);
  const fulfil = createFulfilment(ctx, coupons, applier);

  return {
    coupons,
    /** Where checkouts open (the payments module's port); until it is connected paid switches are refused with the amount. */
    payments: ctx.paymentsPort as Connectable<PaymentsPort>,
    list: views.list.bind(views),
    quote: switches.quote.bind(switches),
    switchPlan: switches.switchPlan.bind(switches),
    cancelScheduledSwitch: switches.cancelScheduledSwitch.bind(switches),

    async startTrial(userId: string, planId: string) {
      return views.one(await trialAndCancel.startTrial(userId, planId));
    },

    async cancel(userId: string, subscriptionId: string) {
      const { subscription, voidPaymentId } = await trialAndCancel.cancel(userId, subscriptionId);
      if (voidPaymentId)
        await ctx
          .payments()
          ?.cancelCheckout(voidPaymentId)
          .catch(() => undefined);
      return views.one(subscription);
    },

    /** `POST /v1/subscriptions/coupons/preview`: the discount the code gives on what the plan costs the caller now. */
    async previewCoupon(userId: string, input: { code: string; planId: string }) {
      const { target, quote } = await switches.amountFor(userId, input.planId);
      const { coupon, discountCents } = await coupons.evaluate(deps.db, input.code, {
        userId,
        planId: target.id,
        planName: target.name,
        amountCents: quote.amountDueCents,
        currency: target.currency,
        recurring: false,
      });
      return {
        couponId: coupon.id,
        code: coupon.code,
        originalCents: quote.amountDueCents,
        discountCents,
        finalCents: quote.amountDueCents - discountCents,
        currency: target.currency,
      };
    },

    /** For the payments module: fulfils a confirmed payment for a subscription change, once per payment id. */
    fulfilSubscriptionPayment: (tx: Tx, payment: ConfirmedPayment) => fulfil(tx, payment),

    /** One lifecycle pass then the reminders (the cron job's work). */
    async runDue(limit = 200) {
      const counts = await lifecycle.runDue(limit);
      const reminders = await sendReminders(limit);
      return { ...counts, reminders };
    },
  };
}

export type SubscriptionBillingService = ReturnType<typeof createSubscriptionBillingService>;
