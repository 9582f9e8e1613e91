import { isUniqueViolation } from '../../platform/db/errors.js';
import { badRequest, conflict, notFound } from '../../platform/http/errors.js';
import type { PlanRow } from '../plans/service.js';
import type { ChangeApplier } from './apply.js';
import type { BillingContext } from './context.js';
import type { CouponsService } from './coupons.js';
import type { SwitchQuote } from './proration.js';
import { openChangeForUpdate, ownSubscription } from './store.js';
import { createSwitchCheckout } from './switch-checkout.js';
import { createSwitchPricing } from './switch-pricing.js';
import { createSwitchRecorder } from './switch-record.js';
import type { SwitchInput, SwitchResult, SwitchScope } from './switch-types.js';

/**
 * Plan switches: quotes, the switch itself (priced in switch-pricing.ts, recorded in switch-record.ts, paid through
 * switch-checkout.ts) and the cancellation of a pending one.
 */
export function createSwitchService(ctx: BillingContext, coupons: CouponsService, applier: ChangeApplier) {
  const { db, clock } = ctx;
  const { priced, resolveChannel } = createSwitchPricing(ctx);
  const { record } = createSwitchRecorder(ctx, coupons, applier);
  const { openCheckout, voidCheckouts } = createSwitchCheckout(ctx, applier);

  return {
    /** `GET /v1/subscriptions/switch/quote`: what a switch to the plan costs now and when it takes effect. */
    async quote(userId: string, planId: string) {
      const { quote } = await priced(userId, planId, {});
      return {
        kind: quote.kind,
        planPriceCents: quote.planPriceCents,
        unusedCreditCents: quote.unusedCreditCents,
        amountDueCents: quote.amountDueCents,
        requiresPayment: quote.amountDueCents > 0,
        effectiveAt: quote.effectiveAt.toISOString(),
        currency: quote.currency,
        planId,
      };
    },

    /** What the customer would pay for the plan now, before any code (the coupon preview prices against it). */
    async amountFor(userId: string, planId: string): Promise<{ target: PlanRow; quote: SwitchQuote }> {
      const { target, quote } = await priced(userId, planId, {});
      return { target, quote };
    },

    /**
     * `POST /v1/subscriptions/switch` (and `/:id/upgrade`, `/:id/downgrade`): prices the change, applies a coupon,
     * then either applies or schedules it when nothing is left to pay, or opens a checkout through the payments port.
     */
    async switchPlan(userId: string, input: SwitchInput, scope: SwitchScope = {}): Promise<SwitchResult> {
      const { target, current, quote } = await priced(userId, input.planId, scope);
      let recurring = input.recurring === true;
      const discount = input.couponCode
        ? await coupons.evaluate(db, input.couponCode, {
            userId,
            planId: target.id,
            planName: target.name,
            amountCents: quote.amountDueCents,
            currency: target.currency,
            recurring,
          })
        : null;
      const amountDueCents = quote.amountDueCents - (discount?.discountCents ?? 0);
      if (amountDueCents > 0) {
        recurring = await resolveChannel(target, input, amountDueCents);
        if (discount && recurring) {
          throw badRequest(`Codes cannot be used with automatic renewal, and ${input.provider} renews by itself. Remove the code or choose another provider.`, {
            couponCode: discount.coupon.code,
            reason: 'RECURRING',
          });
        }
      }
      const channel = amountDueCents > 0 ? input.provider! : null;
      const { carrier, change, superseded } = await ctx
        .transaction((tx, log) => record(tx, log, { userId, current, target, quote, discount, recurring, channel }))
        .catch((err: unknown) => {
          // Two switches of one customer at once: the unique open-change index lets one through.
          if (isUniqueViolation(err, 'subscription_changes_open_key'))
            throw conflict('Another plan change of yours is being made right now. Check GET /v1/subscriptions and try again.');
          throw err;
        });
      await voidCheckouts(superseded);

      const base = {
        kind: quote.kind,
        planId: target.id,
        subscriptionId: carrier.id,
        changeId: change?.id ?? null,
        recurring,
        scheduled: quote.timing === 'scheduled',
        effectiveAt: quote.timing === 'scheduled' ? quote.effectiveAt.toISOString() : null,
        amountDueCents,
        discountCents: discount?.discountCents ?? 0,
        currency: target.currency,
      };
      if (amountDueCents === 0) {
        const settled = discount !== null;
        const successPage = input.successUrl ?? `${ctx.frontendUrl.replace(/\/$/, '')}/billing/success?subscriptionId=${carrier.id}`;
        return {
          ...base,
          paymentId: null,
          switched: quote.timing === 'immediate',
          settled,
          ...(settled ? { redirectUrl: successPage } : {}),
          ...(quote.timing === 'immediate' ? { effectiveAt: clock.now().toISOString() } : {}),
        };
      }
      const session = await openCheckout(change!, { userId, input, target, recurring, amountDueCents, kind: quote.kind });
      return { ...base, paymentId: session.paymentId, redirectUrl: session.redirectUrl, switched: false, settled: false };
    },

    /** `DELETE /v1/subscriptions/:id/scheduled-switch`: cancels the subscription's unpaid pending change. */
    async cancelScheduledSwitch(userId: string, subscriptionId: string) {
      const paymentId = await ctx.transaction(async (tx, log) => {
        const open = await openChangeForUpdate(tx, userId);
        await ownSubscription(tx, userId, subscriptionId, true);
        if (!open || open.subscriptionId !== subscriptionId) throw notFound('This subscription has no pending plan change.');
        if (open.paidAt) {
          throw badRequest(`The change to ${open.toPlanName} is already paid, so it cannot be cancelled here. Contact support to reverse it.`, {
            changeId: open.id,
          });
        }
        await applier.close(tx, log, open, 'CANCELED');
        return open.paymentId;
      });
      if (paymentId) await voidCheckouts([paymentId]);
      return { ok: true as const, subscriptionId };
    },
  };
}

export type SwitchService = ReturnType<typeof createSwitchService>;
