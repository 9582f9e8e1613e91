import { describe, expect, it } from 'vitest';
import { addInterval } from './cycles.js';
import { formatMoney } from './money.js';
import { quoteSwitch, unusedCredit, type CurrentCycle, type TargetPlan } from './proration.js';

// The worked example of docs/subscription-billing.md.
const starter: TargetPlan = { id: 'starter', name: 'Starter', priceCents: 49_900, currency: 'BDT', interval: 'MONTHLY' };
const pro: TargetPlan = { id: 'pro', name: 'Pro', priceCents: 149_900, currency: 'BDT', interval: 'MONTHLY' };
const free: TargetPlan = { id: 'free', name: 'Free', priceCents: 0, currency: 'BDT', interval: 'MONTHLY' };
const march1 = new Date('2027-03-01T00:00:00Z');
const april1 = new Date('2027-04-01T00:00:00Z');
const march11 = new Date('2027-03-11T00:00:00Z');
const onStarter: CurrentCycle = {
  status: 'ACTIVE',
  planId: 'starter',
  planName: 'Starter',
  planPriceCents: 49_900,
  currency: 'BDT',
  startsAt: march1,
  endsAt: april1,
  cycleValueCents: 49_900,
};
const onPro: CurrentCycle = { ...onStarter, planId: 'pro', planName: 'Pro', planPriceCents: 149_900, cycleValueCents: 149_900 };

describe('the worked example', () => {
  it('upgrade Starter → Pro on 11 March: 21 of 31 days unused, 33,803 credited, 116,097 due, effective at once', () => {
    expect(unusedCredit(onStarter, march11)).toBe(33_803); // floor(49,900 × 21 / 31) = floor(33,803.23)
    expect(quoteSwitch(onStarter, pro, march11)).toEqual({
      kind: 'upgrade',
      timing: 'immediate',
      planPriceCents: 149_900,
      unusedCreditCents: 33_803,
      amountDueCents: 116_097,
      currency: 'BDT',
      effectiveAt: march11,
    });
  });

  it('downgrade Pro → Starter on 11 March: the full 49,900 now, starting 1 April', () => {
    expect(quoteSwitch(onPro, starter, march11)).toMatchObject({
      kind: 'downgrade',
      timing: 'scheduled',
      unusedCreditCents: 0,
      amountDueCents: 49_900,
      effectiveAt: april1,
    });
  });

  it('switch to Free on 11 March: nothing to pay, scheduled for 1 April', () => {
    expect(quoteSwitch(onStarter, free, march11)).toMatchObject({ kind: 'downgrade', timing: 'scheduled', amountDueCents: 0, effectiveAt: april1 });
  });

  it('the upgrade cycle runs 11 March → 11 April; calendar months clamp to the month end', () => {
    expect(addInterval(march11, 'MONTHLY')).toEqual(new Date('2027-04-11T00:00:00Z'));
    expect(addInterval(new Date('2026-01-31T10:00:00Z'), 'MONTHLY')).toEqual(new Date('2026-02-28T10:00:00Z'));
    expect(addInterval(new Date('2028-01-31T00:00:00Z'), 'MONTHLY')).toEqual(new Date('2028-02-29T00:00:00Z'));
    expect(addInterval(new Date('2028-02-29T00:00:00Z'), 'YEARLY')).toEqual(new Date('2029-02-28T00:00:00Z'));
    expect(addInterval(march1, 'WEEKLY')).toEqual(new Date('2027-03-08T00:00:00Z'));
    expect(addInterval(march1, 'DAILY')).toEqual(new Date('2027-03-02T00:00:00Z'));
  });

  it('formats minor units for messages', () => {
    expect(formatMoney(116_097, 'BDT')).toBe('1,160.97 BDT');
    expect(formatMoney(5, 'USD')).toBe('0.05 USD');
    expect(formatMoney(123_456_789_012_345_678n, 'BDT')).toBe('1,234,567,890,123,456.78 BDT');
  });
});

describe('quoteSwitch rules', () => {
  it('a purchase from the free plan, a trial or a cycle in grace pays the full price at once', () => {
    const onFree: CurrentCycle = { ...onStarter, planId: 'free', planName: 'Free', planPriceCents: 0, endsAt: null, cycleValueCents: 0 };
    const trial: CurrentCycle = { ...onPro, status: 'TRIALING', cycleValueCents: 0 };
    const grace: CurrentCycle = { ...onStarter, status: 'GRACE', endsAt: march11 };
    for (const current of [null, onFree, trial, grace]) {
      expect(quoteSwitch(current, pro, new Date('2027-03-12T00:00:00Z')), current?.status ?? 'none').toMatchObject({
        kind: 'upgrade',
        timing: 'immediate',
        unusedCreditCents: 0,
        amountDueCents: 149_900,
      });
    }
  });

  it('refuses the plan in effect, but lets a trial or a cycle in grace buy its own plan', () => {
    expect(() => quoteSwitch(onPro, pro, march11)).toThrow(/already on the Pro plan/);
    expect(quoteSwitch({ ...onPro, status: 'TRIALING', cycleValueCents: 0 }, pro, march11).amountDueCents).toBe(149_900);
  });

  it('an equal price is a downgrade; no credit beyond what the cycle was sold for; none after the end', () => {
    const same = { ...starter, id: 'starter-2', name: 'Starter 2' };
    expect(quoteSwitch(onStarter, same, march11)).toMatchObject({ kind: 'downgrade', timing: 'scheduled', amountDueCents: 49_900 });
    const discounted = { ...onStarter, cycleValueCents: 10_000 };
    expect(unusedCredit(discounted, march1)).toBe(10_000);
    expect(unusedCredit(onStarter, april1)).toBe(0);
    expect(unusedCredit({ ...onStarter, cycleValueCents: 0 }, march11)).toBe(0);
  });

  it('a switch from the free plan to another free plan is immediate', () => {
    const onFree: CurrentCycle = { ...onStarter, planId: 'free', planPriceCents: 0, endsAt: null, cycleValueCents: 0 };
    expect(quoteSwitch(onFree, { ...free, id: 'free-2' }, march11)).toMatchObject({ timing: 'immediate', amountDueCents: 0, effectiveAt: march11 });
  });
});
