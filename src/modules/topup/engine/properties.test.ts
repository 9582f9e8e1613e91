import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BP } from './money.js';
import { meetsProfitFloor, quoteTopUp, DEFAULT_ENGINE_SETTINGS } from './index.js';
import { CHANNELS, components } from './test-fixtures.js';
import type { EngineComponent, EngineRule, QuoteInput, RuleEffect } from './types.js';

const KEYS = ['credits', 'images', 'videos', 'speech', 'chat'] as const;

const effectArb: fc.Arbitrary<RuleEffect> = fc.oneof(
  fc.record({ type: fc.constant('BONUS_UNITS' as const), component: fc.constantFrom(...KEYS), units: fc.integer({ min: 1, max: 5_000 }) }),
  fc.record({ type: fc.constant('EXTRA_TOKENS_PERCENT' as const), percent: fc.integer({ min: 1, max: 200 }) }),
  fc.record({
    type: fc.constant('PERCENT_OFF' as const),
    percent: fc.integer({ min: 1, max: 100 }),
    maxDiscountCents: fc.option(fc.integer({ min: 0, max: 500_000 }), { nil: null }),
  }),
  fc.record({ type: fc.constant('FIXED_OFF' as const), amountCents: fc.integer({ min: 0, max: 1_000_000 }) }),
);

const ruleArb: fc.Arbitrary<EngineRule> = fc.record({
  id: fc.uuid(),
  name: fc.constant('rule'),
  description: fc.constant(''),
  type: fc.constantFrom('BONUS' as const, 'PROMOTION' as const),
  active: fc.boolean(),
  priority: fc.integer({ min: 0, max: 5 }),
  group: fc.constantFrom(null, 'a', 'b'),
  effect: effectArb,
  conditions: fc.record(
    {
      minUnits: fc.record({ component: fc.constantFrom(...KEYS), units: fc.integer({ min: 1, max: 20_000 }) }),
      minSpendCents: fc.integer({ min: 0, max: 1_000_000 }),
      daysOfWeek: fc.uniqueArray(fc.integer({ min: 0, max: 6 }), { maxLength: 7 }),
      audience: fc.constantFrom('EVERYONE' as const, 'FIRST_TOPUP' as const, 'NEW_ACCOUNT' as const),
      newAccountDays: fc.integer({ min: 0, max: 60 }),
      channels: fc.subarray(['card_regional', 'dcb']),
      maxUses: fc.integer({ min: 0, max: 3 }),
      oncePerCustomer: fc.boolean(),
    },
    { requiredKeys: [] },
  ),
});

/** Prices that are not under the AI cost a top-up must cover: AI cost, or fixed/tier prices at least cost / 0.4. */
function pricingArb(tokensPerUnit: number): fc.Arbitrary<EngineComponent['pricing']> {
  const least = Math.ceil((tokensPerUnit * 1_800 * 10) / (1_000_000 * 4));
  return fc.oneof(
    fc.constant({ mode: 'AI_COST' as const }),
    fc.integer({ min: least, max: least * 3 }).map((unitPriceCents) => ({ mode: 'FIXED' as const, unitPriceCents })),
    fc
      .uniqueArray(fc.record({ minUnits: fc.integer({ min: 1, max: 500 }), unitPriceCents: fc.integer({ min: least, max: least * 3 }) }), {
        minLength: 1,
        maxLength: 4,
        selector: (t) => t.minUnits,
      })
      .map((tiers) => ({ mode: 'TIERS' as const, tiers })),
  );
}

const inputArb: fc.Arbitrary<QuoteInput> = fc
  .record({
    tokensPerUnit: fc.record({
      credits: fc.constant(10_000),
      images: fc.integer({ min: 1, max: 200_000 }),
      videos: fc.integer({ min: 1, max: 2_000_000 }),
      speech: fc.integer({ min: 1, max: 100_000 }),
      chat: fc.integer({ min: 1, max: 20_000 }),
    }),
    units: fc.record({
      credits: fc.integer({ min: 0, max: 2_000 }),
      images: fc.integer({ min: 0, max: 200 }),
      videos: fc.integer({ min: 0, max: 200 }),
      speech: fc.integer({ min: 0, max: 500 }),
      chat: fc.integer({ min: 0, max: 10_000 }),
    }),
    rules: fc.array(ruleArb, { maxLength: 6 }),
    customer: fc.option(
      fc.record({
        firstTopUp: fc.boolean(),
        accountCreatedAt: fc.date({ min: new Date('2026-01-01T00:00:00Z'), max: new Date('2026-12-31T00:00:00Z'), noInvalidDate: true }),
      }),
      { nil: null },
    ),
    channel: fc.constantFrom(null, 'card_regional', 'dcb'),
    now: fc.date({ min: new Date('2026-01-01T00:00:00Z'), max: new Date('2027-01-01T00:00:00Z'), noInvalidDate: true }),
    usageTotal: fc.integer({ min: 0, max: 4 }),
    usedByCustomer: fc.integer({ min: 0, max: 1 }),
    seed: fc.integer({ min: 0, max: 2 }),
  })
  .chain((v) =>
    fc
      .record(
        Object.fromEntries(KEYS.map((k) => [k, pricingArb(v.tokensPerUnit[k])])) as Record<(typeof KEYS)[number], fc.Arbitrary<EngineComponent['pricing']>>,
      )
      .map((pricing) => {
        const comps = components(Object.fromEntries(KEYS.map((k) => [k, { enabled: true, step: 1, tokensPerUnit: v.tokensPerUnit[k], pricing: pricing[k] }])));
        // Credits keep the real bounds; units off the step or under the minimum are part of the search too.
        const selection: Record<string, number> = {
          credits: v.units.credits * (v.seed === 0 ? 1 : 10),
          images: v.units.images,
          videos: v.units.videos,
          speech: v.units.speech,
          chat: v.units.chat,
        };
        comps[0] = { ...comps[0]!, step: 10 };
        return {
          settings: DEFAULT_ENGINE_SETTINGS,
          components: comps,
          rules: v.rules,
          channels: CHANNELS.map((c) => (c.slug === 'dcb' ? { ...c, amountsCents: [2_000, 50_000] } : c)),
          selection,
          customer: v.customer,
          channel: v.channel,
          usage: Object.fromEntries(v.rules.map((r) => [r.id, { total: v.usageTotal, byCustomer: v.usedByCustomer }])),
          now: v.now,
        } satisfies QuoteInput;
      }),
  );

const RUNS = { numRuns: 400 };

describe('top-up engine: properties', () => {
  it('the amount never falls below the profit floor (10% if every token is used)', () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const q = quoteTopUp(input);
        expect(meetsProfitFloor(q.amountCents, q.totalTokens, input.settings)).toBe(true);
        // The same check written out: amount × 0.80 (after gateway and VAT) − AI cost ≥ 10% of the amount.
        const costScaled = BigInt(q.totalTokens) * 1_800n * BP;
        expect(BigInt(q.amountCents) * 7_000n * 1_000_000n >= costScaled).toBe(true);
      }),
      RUNS,
    );
  });

  it('the total discount never exceeds 50% of the price before discounts, and matches the applied rules', () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const q = quoteTopUp(input);
        expect(q.discountCents * 2).toBeLessThanOrEqual(q.subtotalCents);
        expect(q.applied.reduce((sum, a) => sum + a.discountCents, 0)).toBe(q.discountCents);
        expect(q.amountCents).toBeGreaterThanOrEqual(q.subtotalCents - q.discountCents);
        expect(q.amountCents - (q.subtotalCents - q.discountCents)).toBeLessThan(input.settings.roundToCents);
      }),
      RUNS,
    );
  });

  it('amounts are whole minor units on the rounding step', () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const q = quoteTopUp(input);
        for (const value of [q.amountCents, q.subtotalCents, q.discountCents, ...q.lines.map((l) => l.priceCents), ...q.applied.map((a) => a.discountCents)]) {
          expect(Number.isSafeInteger(value) && value >= 0).toBe(true);
        }
        expect(q.amountCents % input.settings.roundToCents).toBe(0);
        if (q.valid) expect(q.amountCents).toBeGreaterThanOrEqual(input.settings.minOrderCents);
        if (q.valid) expect(q.amountCents).toBeLessThanOrEqual(input.settings.maxOrderCents);
      }),
      RUNS,
    );
  });

  it('the same selection always prices the same (and rule order does not matter)', () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const first = quoteTopUp(input);
        expect(quoteTopUp(structuredClone(input))).toEqual(first);
        expect(quoteTopUp({ ...input, rules: [...input.rules].reverse() })).toEqual(first);
      }),
      { numRuns: 200 },
    );
  });

  it('totalTokens = tokens + bonusTokens, and tokens are the lines’ tokens', () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const q = quoteTopUp(input);
        expect(q.totalTokens).toBe(q.tokens + q.bonusTokens);
        expect(q.tokens).toBe(q.lines.reduce((sum, l) => sum + l.units * l.tokensPerUnit, 0));
        expect(q.bonusTokens).toBe(q.applied.reduce((sum, a) => sum + a.bonusTokens, 0));
      }),
      RUNS,
    );
  });
});
