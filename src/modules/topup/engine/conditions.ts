import type { EngineCustomer, EngineRule, OfferRequirement, QuoteLine, RuleUsage } from './types.js';

/** Bangladesh Standard Time is UTC+6 all year (no daylight saving). */
export const BANGLADESH_OFFSET_MS = 6 * 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

/** 0 = Sunday ... 6 = Saturday, in Bangladesh time. */
export function bangladeshDayOfWeek(now: Date): number {
  return new Date(now.getTime() + BANGLADESH_OFFSET_MS).getUTCDay();
}

export interface RuleContext {
  lines: QuoteLine[];
  subtotalCents: number;
  customer: EngineCustomer | null;
  channel: string | null;
  usage: RuleUsage;
  now: Date;
}

/**
 * A condition that does not hold. `requirement` is set when the customer can meet it in this top-up
 * (more units, a larger spend, another channel, signing in); such a rule failing on that alone is an offer.
 */
export interface Unmet {
  condition: string;
  requirement: OfferRequirement | null;
}

/** Every condition of the rule that does not hold now (empty: the rule applies). */
export function unmetConditions(rule: EngineRule, ctx: RuleContext): Unmet[] {
  const c = rule.conditions;
  const unmet: Unmet[] = [];
  if (c.minUnits) {
    const have = ctx.lines.find((line) => line.key === c.minUnits?.component)?.units ?? 0;
    if (have < c.minUnits.units) {
      unmet.push({
        condition: 'minUnits',
        requirement: { type: 'MIN_UNITS', component: c.minUnits.component, units: c.minUnits.units, missingUnits: c.minUnits.units - have },
      });
    }
  }
  if (c.minSpendCents != null && ctx.subtotalCents < c.minSpendCents) {
    unmet.push({ condition: 'minSpend', requirement: { type: 'MIN_SPEND', amountCents: c.minSpendCents, missingCents: c.minSpendCents - ctx.subtotalCents } });
  }
  if (c.daysOfWeek && c.daysOfWeek.length > 0 && !c.daysOfWeek.includes(bangladeshDayOfWeek(ctx.now))) {
    unmet.push({ condition: 'daysOfWeek', requirement: null });
  }
  const audience = c.audience ?? 'EVERYONE';
  if (audience !== 'EVERYONE') {
    if (!ctx.customer) {
      unmet.push({ condition: 'audience', requirement: { type: 'SIGN_IN' } });
    } else if (audience === 'FIRST_TOPUP' && !ctx.customer.firstTopUp) {
      unmet.push({ condition: 'audience', requirement: null });
    } else if (audience === 'NEW_ACCOUNT') {
      const days = c.newAccountDays ?? 0;
      if (ctx.now.getTime() - ctx.customer.accountCreatedAt.getTime() >= days * DAY_MS) unmet.push({ condition: 'audience', requirement: null });
    }
  }
  if (c.channels && c.channels.length > 0 && (ctx.channel === null || !c.channels.includes(ctx.channel))) {
    unmet.push({ condition: 'channel', requirement: { type: 'CHANNEL', channels: [...c.channels] } });
  }
  if (c.startsAt && ctx.now.getTime() < c.startsAt.getTime()) unmet.push({ condition: 'startsAt', requirement: null });
  if (c.endsAt && ctx.now.getTime() >= c.endsAt.getTime()) unmet.push({ condition: 'endsAt', requirement: null });
  if (c.maxUses != null && ctx.usage.total >= c.maxUses) unmet.push({ condition: 'maxUses', requirement: null });
  if (c.oncePerCustomer && ctx.usage.byCustomer > 0) unmet.push({ condition: 'oncePerCustomer', requirement: null });
  return unmet;
}
