import { describe, expect, it } from 'vitest';
import { quoteTopUp } from './index.js';
import { input, rule } from './test-fixtures.js';

/** Reproduces the worked example of docs/topup-pricing.md step by step. */
describe('docs/topup-pricing.md worked example', () => {
  it('1,010 credits on a Friday in Dhaka with four promotions', () => {
    const volume = rule({
      id: 'volume',
      name: 'Volume bonus',
      type: 'BONUS',
      priority: 20,
      group: 'volume',
      effect: { type: 'BONUS_UNITS', component: 'credits', units: 50 },
      conditions: { minUnits: { component: 'credits', units: 1_000 } },
    });
    const weekend = rule({
      id: 'weekend',
      name: 'Weekend extra credits',
      priority: 10,
      effect: { type: 'EXTRA_TOKENS_PERCENT', percent: 10 },
      conditions: { daysOfWeek: [5, 6] },
    });
    const tenOff = rule({ id: 'ten-off', name: '10% off', priority: 5, effect: { type: 'PERCENT_OFF', percent: 10, maxDiscountCents: 3_000 } });
    const flash = rule({ id: 'flash', name: 'Flash sale', priority: 1, effect: { type: 'FIXED_OFF', amountCents: 15_000 } });
    const q = quoteTopUp(input({ selection: { credits: 1_010 }, rules: [flash, tenOff, weekend, volume], now: new Date('2026-11-26T20:00:00Z') }));

    expect(q.lines[0]).toMatchObject({ units: 1_010, tokens: 10_100_000, unitPriceCents: 45, priceCents: 45_450 });
    expect(q.subtotalCents).toBe(45_450);
    expect(q.applied).toEqual([
      { id: 'volume', name: 'Volume bonus', type: 'BONUS', effect: volume.effect, discountCents: 0, bonusTokens: 500_000 },
      { id: 'weekend', name: 'Weekend extra credits', type: 'PROMOTION', effect: weekend.effect, discountCents: 0, bonusTokens: 1_010_000 },
      { id: 'ten-off', name: '10% off', type: 'PROMOTION', effect: tenOff.effect, discountCents: 3_000, bonusTokens: 0 },
    ]);
    expect(q).toMatchObject({
      valid: true,
      discountCents: 3_000,
      amountCents: 42_500,
      tokens: 10_100_000,
      bonusTokens: 1_510_000,
      totalTokens: 11_610_000,
      credits: 1_010,
      bonusCredits: 151,
      totalCredits: 1_161,
      payableWith: ['card_regional'],
    });
  });
});
