import { and, eq, isNull } from 'drizzle-orm';
import { subscriptionChanges, subscriptions } from '../../db/schema/subscriptions.js';
import type { Tx } from '../../platform/db/database.js';
import { isUniqueViolation } from '../../platform/db/errors.js';
import { AppError, badRequest, conflict, notFound } from '../../platform/http/errors.js';
import type { PlanRow } from '../plans/service.js';
import type { ChangeApplier } from './apply.js';
import { isUuid, type BillingContext, type ChangeLog } from './context.js';
import type { CouponDiscount, CouponsService } from './coupons.js';
import { formatMoney } from './money.js';
import type { CheckoutSession } from './payments-port.js';
import { quoteSwitch, type CurrentCycle, type SwitchQuote } from './proration.js';
import type { SubscriptionRow } from './service.js';
import { currentSubscription, isFreeSubscription, openChangeForUpdate, ownSubscription, type ChangeRow } from './store.js';

export interface SwitchInput {
  planId: string;
  provider?: string;
  recurring?: boolean;
  extra?: Record<string, unknown>;
  couponCode?: string;
  successUrl?: string;
  cancelUrl?: string;
}

/** Which subscription the route names, and which kind it promised (`/:id/upgrade`, `/:id/downgrade`). */
export interface SwitchScope {
  subscriptionId?: string;
  expectKind?: 'upgrade' | 'downgrade';
}

export interface SwitchResult {
  kind: 'upgrade' | 'downgrade';
  planId: string;
  subscriptionId: string;
  changeId: string | null;
  paymentId: string | null;
  redirectUrl?: string;
  recurring: boolean;
  scheduled: boolean;
  switched: boolean;
  settled: boolean;
  effectiveAt: string | null;
  amountDueCents: number;
  discountCents: number;
  currency: string;
}

const paidChangeRefusal = (change: ChangeRow) =>
  badRequest(
    `A plan change you already paid for (to ${change.toPlanName}${change.effectiveAt ? ` on ${change.effectiveAt.toISOString()}` : ''}) is pending, so another one cannot be bought now. Contact support to reverse it.`,
    { changeId: change.id, planId: change.toPlanId, effectiveAt: change.effectiveAt?.toISOString() ?? null },
  );

export function createSwitchService(ctx: BillingContext, coupons: CouponsService, applier: ChangeApplier) {
  const { db, clock, plans } = ctx;

  async function planOnSale(planId: string): Promise<PlanRow> {
    const plan = isUuid(planId) ? await plans.getById(planId) : undefined;
    if (!plan || plan.status !== 'ACTIVE' || plan.internal) throw notFound(`No plan on sale has the id "${planId}". See GET /v1/plans (use a plan's id, not its slug).`);
    return plan;
  }

  async function cycleOf(sub: SubscriptionRow | undefined): Promise<CurrentCycle | null> {
    if (!sub) return null;
    const plan = await plans.getById(sub.planId);
    return {
      status: sub.status,
      planId: sub.planId,
      planName: plan?.name ?? 'current',
      planPriceCents: plan?.priceCents ?? 0,
      currency: plan?.currency ?? 'BDT',
      startsAt: sub.startsAt,
      endsAt: sub.endsAt,
      cycleValueCents: sub.cycleValueCents,
    };
  }

  async function priced(userId: string, planId: string, scope: SwitchScope) {
    const target = await planOnSale(planId);
    const now = clock.now();
    const current = await currentSubscription(db, userId, now);
    if (scope.subscriptionId) {
      await ownSubscription(db, userId, scope.subscriptionId); // 404 for another user's id
      if (current?.id !== scope.subscriptionId) {
        throw badRequest(`This subscription is not the one in effect${current ? ` (that is ${current.id})` : ''}; change plans from the subscription in effect.`);
      }
    }
    const quote = quoteSwitch(await cycleOf(current), target, now);
    if (scope.expectKind && quote.kind !== scope.expectKind) {
      throw badRequest(
        quote.kind === 'upgrade'
          ? `The ${target.name} plan costs more than your plan: that is an upgrade (POST /v1/subscriptions/${current?.id ?? ':id'}/upgrade).`
          : `The ${target.name} plan costs the same as or less than your plan: that is a downgrade (POST /v1/subscriptions/${current?.id ?? ':id'}/downgrade).`,
        { kind: quote.kind },
      );
    }
    return { target, current, quote, now };
  }

  /** Channel checks of a paid change; returns whether the mandate will renew by itself. */
  async function resolveChannel(target: PlanRow, input: SwitchInput, amountCents: number): Promise<boolean> {
    const amount = formatMoney(amountCents, target.currency);
    if (!input.provider) {
      throw badRequest(`This change costs ${amount}. Choose a payment provider (provider) to pay it.`, { amountDueCents: amountCents, currency: target.currency });
    }
    if (target.allowedChannels.length > 0 && !target.allowedChannels.includes(input.provider)) {
      throw badRequest(`The ${target.name} plan can be paid with ${target.allowedChannels.join(', ')} only.`, { requested: input.provider, allowedChannels: target.allowedChannels });
    }
    const payments = ctx.payments();
    if (!payments) {
      throw badRequest(`This change costs ${amount}, and no payment provider is available right now, so it cannot be paid yet. Try again later.`, {
        amountDueCents: amountCents,
        currency: target.currency,
        provider: input.provider,
      });
    }
    const policy = await payments.channelPolicy(input.provider);
    if (!policy) throw badRequest(`${input.provider} is not available right now.`, { provider: input.provider });
    if (input.recurring && !policy.autoRenews && !policy.supportsRecurring) {
      throw badRequest(`${input.provider} cannot renew automatically; send recurring: false or choose another provider.`, { provider: input.provider });
    }
    return policy.autoRenews || (policy.supportsRecurring && input.recurring === true);
  }

  /** The subscription that will carry the new plan: a new PENDING one for a purchase from the free plan (or none). */
  async function carrierFor(tx: Tx, userId: string, current: SubscriptionRow | undefined, target: PlanRow): Promise<SubscriptionRow> {
    if (current && (!isFreeSubscription(current) || target.priceCents === 0)) return current;
    const now = clock.now();
    const [created] = await tx
      .insert(subscriptions)
      .values({ userId, workspaceId: current?.workspaceId ?? null, planId: target.id, status: 'PENDING', origin: 'PURCHASE', startsAt: now, endsAt: null, cycle: 0, createdAt: now, updatedAt: now })
      .returning();
    return created!;
  }

  async function record(
    tx: Tx,
    log: ChangeLog,
    args: { userId: string; current: SubscriptionRow | undefined; target: PlanRow; quote: SwitchQuote; discount: CouponDiscount | null; recurring: boolean; channel: string | null },
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

  async function voidCheckouts(paymentIds: string[]) {
    for (const paymentId of paymentIds) await ctx.payments()?.cancelCheckout(paymentId).catch(() => undefined);
  }

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
          if (isUniqueViolation(err, 'subscription_changes_open_key')) throw conflict('Another plan change of yours is being made right now. Check GET /v1/subscriptions and try again.');
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
          throw badRequest(`The change to ${open.toPlanName} is already paid, so it cannot be cancelled here. Contact support to reverse it.`, { changeId: open.id });
        }
        await applier.close(tx, log, open, 'CANCELED');
        return open.paymentId;
      });
      if (paymentId) await voidCheckouts([paymentId]);
      return { ok: true as const, subscriptionId };
    },
  };

  async function openCheckout(
    change: ChangeRow,
    args: { userId: string; input: SwitchInput; target: PlanRow; recurring: boolean; amountDueCents: number; kind: 'upgrade' | 'downgrade' },
  ): Promise<CheckoutSession> {
    const { input, target } = args;
    let session: CheckoutSession;
    try {
      session = await ctx.payments()!.createCheckout({
        userId: args.userId,
        purpose: { kind: 'subscription', changeId: change.id, subscriptionId: change.subscriptionId, planId: target.id },
        amountCents: args.amountDueCents,
        currency: target.currency,
        channel: input.provider!,
        recurring: args.recurring,
        ...(input.extra ? { extra: input.extra } : {}),
        ...(input.successUrl ? { successUrl: input.successUrl } : {}),
        ...(input.cancelUrl ? { cancelUrl: input.cancelUrl } : {}),
        description: `${target.name} plan (${args.kind})`,
      });
    } catch (err) {
      await ctx.transaction(async (tx, log) => {
        const [still] = await tx.select().from(subscriptionChanges).where(eq(subscriptionChanges.id, change.id)).for('update');
        if (still?.status === 'AWAITING_PAYMENT' && !still.paidAt) await applier.close(tx, log, still, 'FAILED');
      });
      if (err instanceof AppError) throw err;
      throw new AppError(503, 'PROVIDER_UNAVAILABLE', `Provider ${input.provider} unavailable. Try again in a moment or choose another provider.`);
    }
    await db
      .update(subscriptionChanges)
      .set({ paymentId: session.paymentId, updatedAt: clock.now() })
      .where(and(eq(subscriptionChanges.id, change.id), isNull(subscriptionChanges.paymentId)));
    return session;
  }
}

export type SwitchService = ReturnType<typeof createSwitchService>;
