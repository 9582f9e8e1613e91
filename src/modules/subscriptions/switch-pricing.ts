import { badRequest, notFound } from '../../platform/http/errors.js';
import type { PlanRow } from '../plans/service.js';
import { isUuid, type BillingContext } from './context.js';
import { formatMoney } from './money.js';
import { quoteSwitch, type CurrentCycle } from './proration.js';
import type { SubscriptionRow } from './service.js';
import { currentSubscription, ownSubscription } from './store.js';
import type { SwitchInput, SwitchScope } from './switch-types.js';

/** Prices a plan switch against the subscription in effect, and checks the channel a paid change names. */
export function createSwitchPricing(ctx: BillingContext) {
  const { db, clock, plans } = ctx;

  async function planOnSale(planId: string): Promise<PlanRow> {
    const plan = isUuid(planId) ? await plans.getById(planId) : undefined;
    if (!plan || plan.status !== 'ACTIVE' || plan.internal)
      throw notFound(`No plan on sale has the id "${planId}". See GET /v1/plans (use a plan's id, not its slug).`);
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
        throw badRequest(
          `This subscription is not the one in effect${current ? ` (that is ${current.id})` : ''}; change plans from the subscription in effect.`,
        );
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
      throw badRequest(`This change costs ${amount}. Choose a payment provider (provider) to pay it.`, {
        amountDueCents: amountCents,
        currency: target.currency,
      });
    }
    if (target.allowedChannels.length > 0 && !target.allowedChannels.includes(input.provider)) {
      throw badRequest(`The ${target.name} plan can be paid with ${target.allowedChannels.join(', ')} only.`, {
        requested: input.provider,
        allowedChannels: target.allowedChannels,
      });
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

  return { priced, resolveChannel };
}
