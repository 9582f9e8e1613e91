import type { PlanInterval } from '../../db/schema/plans.js';
import type { SubscriptionStatus } from '../../db/schema/subscriptions.js';
import { badRequest } from '../../platform/http/errors.js';
import { toSafeCents } from './money.js';

/** The facts of the caller's subscription in effect that pricing a switch needs (null: none at all). */
export interface CurrentCycle {
  status: SubscriptionStatus;
  planId: string;
  planName: string;
  planPriceCents: number;
  currency: string;
  startsAt: Date;
  endsAt: Date | null;
  /** What the running cycle was sold for; 0 for trials and free plans. */
  cycleValueCents: number;
}

export interface TargetPlan {
  id: string;
  name: string;
  priceCents: number;
  currency: string;
  interval: PlanInterval;
}

export interface SwitchQuote {
  kind: 'upgrade' | 'downgrade';
  /** Paid now and applied at once (`effectiveAt` = now), or scheduled for the end of the paid cycle. */
  timing: 'immediate' | 'scheduled';
  planPriceCents: number;
  unusedCreditCents: number;
  amountDueCents: number;
  currency: string;
  effectiveAt: Date;
}

/**
 * The unused part of a paid cycle, in minor units, rounded down:
 * `floor(cycleValueCents × (endsAt − now) / (endsAt − startsAt))`, computed in BigInt (milliseconds × cents can
 * pass 2^53). Nothing when the cycle is unpaid (trial, free plan), not running, or already over.
 */
export function unusedCredit(cycle: Pick<CurrentCycle, 'startsAt' | 'endsAt' | 'cycleValueCents'>, now: Date): number {
  if (!cycle.endsAt || cycle.cycleValueCents <= 0) return 0;
  const length = BigInt(cycle.endsAt.getTime() - cycle.startsAt.getTime());
  const remaining = BigInt(Math.min(cycle.endsAt.getTime() - now.getTime(), cycle.endsAt.getTime() - cycle.startsAt.getTime()));
  if (length <= 0n || remaining <= 0n) return 0;
  return toSafeCents((BigInt(cycle.cycleValueCents) * remaining) / length);
}

/** A cycle the customer paid for that is still running: only then is there something to prorate or wait for. */
const paidCycleRunning = (c: CurrentCycle, now: Date) =>
  (c.status === 'ACTIVE' || c.status === 'CANCELED') && c.endsAt !== null && c.endsAt > now && c.cycleValueCents > 0;

/**
 * Prices a switch from the subscription in effect to `target` (see docs/subscription-billing.md):
 * - to a free plan: nothing to pay; scheduled for the end of the running cycle (paid or trial), at once otherwise;
 * - to a dearer plan during a paid cycle (upgrade): at once, the unused remainder credited off the new price;
 * - to a cheaper or equal plan during a paid cycle (downgrade): the full price now, starting when the cycle ends;
 * - from a free plan, a trial or an unpaid (GRACE) cycle: a purchase at the full price, at once.
 * A switch to the plan already in effect is refused, except to buy the plan of a trial or of a cycle in GRACE.
 */
export function quoteSwitch(current: CurrentCycle | null, target: TargetPlan, now: Date): SwitchQuote {
  if (current && current.currency !== target.currency && target.priceCents > 0) {
    throw badRequest(
      `The ${target.name} plan is priced in ${target.currency} and your plan in ${current.currency}; a switch between currencies is not possible. Contact support.`,
    );
  }
  const samePlan = current?.planId === target.id;
  if (samePlan && current.status !== 'TRIALING' && current.status !== 'GRACE') {
    throw badRequest(`You are already on the ${target.name} plan. Choose another plan to switch to.`, { planId: target.id });
  }
  const paid = current !== null && paidCycleRunning(current, now);
  const base = { planPriceCents: target.priceCents, currency: target.currency };

  if (target.priceCents === 0) {
    const runningEnd = current?.endsAt && current.endsAt > now && (paid || current.status === 'TRIALING') ? current.endsAt : null;
    return runningEnd
      ? { ...base, kind: 'downgrade', timing: 'scheduled', unusedCreditCents: 0, amountDueCents: 0, effectiveAt: runningEnd }
      : { ...base, kind: 'downgrade', timing: 'immediate', unusedCreditCents: 0, amountDueCents: 0, effectiveAt: now };
  }
  if (!paid) {
    return { ...base, kind: 'upgrade', timing: 'immediate', unusedCreditCents: 0, amountDueCents: target.priceCents, effectiveAt: now };
  }
  if (target.priceCents > current.planPriceCents) {
    const credit = Math.min(unusedCredit(current, now), target.priceCents);
    return { ...base, kind: 'upgrade', timing: 'immediate', unusedCreditCents: credit, amountDueCents: target.priceCents - credit, effectiveAt: now };
  }
  return { ...base, kind: 'downgrade', timing: 'scheduled', unusedCreditCents: 0, amountDueCents: target.priceCents, effectiveAt: current.endsAt! };
}
