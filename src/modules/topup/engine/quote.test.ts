import { describe, expect, it } from 'vitest';
import { quoteTopUp, aiCostPrice, bangladeshDayOfWeek, DEFAULT_ENGINE_SETTINGS } from './index.js';
import { CHANNELS, WEDNESDAY, components, input, rule } from './test-fixtures.js';

const signedIn = (firstTopUp: boolean, createdDaysAgo = 100) => ({ firstTopUp, accountCreatedAt: new Date(WEDNESDAY.getTime() - createdDaysAgo * 86_400_000) });

describe('top-up engine: lines and pricing modes', () => {
  it('prices credits from AI cost: cost / (1 - 5% - 15% - 40%)', () => {
    // 1,000 credits × 10,000 tokens × 1,800 poisha / 1,000,000 tokens = 18,000 poisha of AI cost; / 0.40 = 45,000.
    const q = quoteTopUp(input());
    expect(q.valid).toBe(true);
    expect(q.lines).toEqual([
      {
        key: 'credits',
        name: 'Credits',
        kind: 'CREDITS',
        unit: 'credit',
        units: 1_000,
        tokensPerUnit: 10_000,
        tokens: 10_000_000,
        unitPriceCents: 45,
        priceCents: 45_000,
        tierMinUnits: null,
      },
    ]);
    expect(q).toMatchObject({
      subtotalCents: 45_000,
      discountCents: 0,
      amountCents: 45_000,
      tokens: 10_000_000,
      bonusTokens: 0,
      totalTokens: 10_000_000,
      credits: 1_000,
      totalCredits: 1_000,
      currency: 'BDT',
    });
    expect(aiCostPrice(1, 10_000, DEFAULT_ENGINE_SETTINGS)).toBe(45n);
  });

  it('prices a fixed price per unit', () => {
    const q = quoteTopUp(
      input({ components: components({ images: { enabled: true, pricing: { mode: 'FIXED', unitPriceCents: 700 } } }), selection: { images: 10 } }),
    );
    expect(q.lines[0]).toMatchObject({ units: 10, unitPriceCents: 700, priceCents: 7_000, tokens: 400_000 });
    expect(q.amountCents).toBe(7_000);
  });

  it('prices volume tiers: every unit at the price of the highest tier reached', () => {
    const tiers = {
      mode: 'TIERS' as const,
      tiers: [
        { minUnits: 1, unitPriceCents: 5_000 },
        { minUnits: 10, unitPriceCents: 4_000 },
        { minUnits: 50, unitPriceCents: 3_500 },
      ],
    };
    const comps = components({ videos: { enabled: true, pricing: tiers } });
    expect(quoteTopUp(input({ components: comps, selection: { videos: 9 } })).lines[0]).toMatchObject({
      unitPriceCents: 5_000,
      priceCents: 45_000,
      tierMinUnits: 1,
    });
    expect(quoteTopUp(input({ components: comps, selection: { videos: 10 } })).lines[0]).toMatchObject({
      unitPriceCents: 4_000,
      priceCents: 40_000,
      tierMinUnits: 10,
    });
    expect(quoteTopUp(input({ components: comps, selection: { videos: 60 } })).lines[0]).toMatchObject({
      unitPriceCents: 3_500,
      priceCents: 210_000,
      tierMinUnits: 50,
    });
  });

  it('reports selection issues by field and never throws', () => {
    const q = quoteTopUp(input({ selection: { credits: 55, images: 10, nope: 3 } }));
    expect(q.valid).toBe(false);
    expect(q.issues.map((i) => i.field).sort()).toEqual(['credits', 'images', 'nope']);
    expect(q.payableWith).toEqual([]);
    expect(quoteTopUp(input({ selection: { credits: 20_010 } })).issues[0]?.field).toBe('credits');
    expect(quoteTopUp(input({ selection: { credits: 1.5 } })).issues[0]?.field).toBe('credits');
    expect(quoteTopUp(input({ selection: { credits: 0 } })).issues[0]?.field).toBe('selection');
  });

  it('applies the order minimum and maximum after discounts and rounding', () => {
    const small = quoteTopUp(input({ selection: { credits: 50 } })); // 2,250
    expect(small.valid).toBe(true);
    const discounted = quoteTopUp(input({ selection: { credits: 50 }, rules: [rule({ effect: { type: 'FIXED_OFF', amountCents: 300 } })] }));
    expect(discounted.amountCents).toBe(2_000);
    const under = quoteTopUp(input({ selection: { credits: 50 }, rules: [rule({ effect: { type: 'FIXED_OFF', amountCents: 400 } })] }));
    expect(under).toMatchObject({ valid: false, amountCents: 1_900 });
    expect(under.issues).toEqual([{ field: 'amount', message: expect.stringContaining('৳20.00') }]);
    const over = quoteTopUp(input({ settings: { ...DEFAULT_ENGINE_SETTINGS, maxOrderCents: 40_000 } }));
    expect(over.issues[0]).toMatchObject({ field: 'amount' });
  });

  it('reports top-ups switched off', () => {
    const q = quoteTopUp(input({ settings: { ...DEFAULT_ENGINE_SETTINGS, enabled: false } }));
    expect(q.valid).toBe(false);
    expect(q.issues[0]?.field).toBe('enabled');
  });

  it('rounds up to 100 minor units', () => {
    expect(quoteTopUp(input({ selection: { credits: 1_010 } })).amountCents).toBe(45_500); // 45,450 rounded up
  });

  it('shows what model-usage components buy in usage', () => {
    const q = quoteTopUp(input({ components: components({ images: { enabled: true } }), selection: { credits: 100, images: 10 } }));
    expect(q.usage).toEqual({ items: [{ displayName: 'Images', unit: 'image', units: 10 }], tokensSpent: 400_000, tokensLeft: 1_000_000 });
  });
});

describe('top-up engine: rule kinds', () => {
  it('BONUS_UNITS gives units of a component as bonus tokens', () => {
    const q = quoteTopUp(input({ rules: [rule({ effect: { type: 'BONUS_UNITS', component: 'credits', units: 50 } })] }));
    expect(q).toMatchObject({ bonusTokens: 500_000, totalTokens: 10_500_000, bonusCredits: 50, amountCents: 45_000 });
    expect(q.applied[0]).toMatchObject({ bonusTokens: 500_000, discountCents: 0 });
  });

  it('EXTRA_TOKENS_PERCENT adds a share of the bought tokens', () => {
    const q = quoteTopUp(input({ rules: [rule({ effect: { type: 'EXTRA_TOKENS_PERCENT', percent: 10 } })] }));
    expect(q).toMatchObject({ bonusTokens: 1_000_000, totalTokens: 11_000_000 });
  });

  it('PERCENT_OFF takes a share off, up to its cap', () => {
    expect(quoteTopUp(input({ rules: [rule({ effect: { type: 'PERCENT_OFF', percent: 10 } })] }))).toMatchObject({ discountCents: 4_500, amountCents: 40_500 });
    expect(quoteTopUp(input({ rules: [rule({ effect: { type: 'PERCENT_OFF', percent: 10, maxDiscountCents: 3_000 } })] }))).toMatchObject({
      discountCents: 3_000,
      amountCents: 42_000,
    });
  });

  it('FIXED_OFF takes an amount off', () => {
    expect(quoteTopUp(input({ rules: [rule({ effect: { type: 'FIXED_OFF', amountCents: 2_000 } })] }))).toMatchObject({
      discountCents: 2_000,
      amountCents: 43_000,
    });
  });
});

describe('top-up engine: conditions', () => {
  const bonus = { type: 'BONUS_UNITS' as const, component: 'credits', units: 10 };
  const applies = (conditions: Parameters<typeof rule>[0]['conditions'], extra: Parameters<typeof input>[0] = {}) =>
    quoteTopUp(input({ rules: [rule({ effect: bonus, conditions })], ...extra })).applied.length === 1;

  it('minimum units of a component', () => {
    expect(applies({ minUnits: { component: 'credits', units: 1_000 } })).toBe(true);
    expect(applies({ minUnits: { component: 'credits', units: 1_010 } })).toBe(false);
  });

  it('minimum spend before discounts', () => {
    expect(applies({ minSpendCents: 45_000 })).toBe(true);
    expect(applies({ minSpendCents: 45_001 })).toBe(false);
  });

  it('days of week in Bangladesh time (UTC+6)', () => {
    const thursdayEveningUtc = new Date('2026-11-26T19:00:00Z'); // Friday 01:00 in Dhaka
    expect(bangladeshDayOfWeek(thursdayEveningUtc)).toBe(5);
    expect(applies({ daysOfWeek: [5, 6] }, { now: thursdayEveningUtc })).toBe(true);
    expect(applies({ daysOfWeek: [5, 6] }, { now: new Date('2026-11-26T17:59:59Z') })).toBe(false); // Thursday 23:59:59
  });

  it('audience: everyone, first top-up, accounts newer than N days', () => {
    expect(applies({ audience: 'EVERYONE' })).toBe(true);
    expect(applies({ audience: 'FIRST_TOPUP' })).toBe(false); // anonymous
    expect(applies({ audience: 'FIRST_TOPUP' }, { customer: signedIn(true) })).toBe(true);
    expect(applies({ audience: 'FIRST_TOPUP' }, { customer: signedIn(false) })).toBe(false);
    expect(applies({ audience: 'NEW_ACCOUNT', newAccountDays: 7 }, { customer: signedIn(false, 6) })).toBe(true);
    expect(applies({ audience: 'NEW_ACCOUNT', newAccountDays: 7 }, { customer: signedIn(false, 7) })).toBe(false);
  });

  it('paying channel', () => {
    expect(applies({ channels: ['card_regional'] })).toBe(false);
    expect(applies({ channels: ['card_regional'] }, { channel: 'card_regional' })).toBe(true);
    expect(applies({ channels: ['card_regional'] }, { channel: 'dcb' })).toBe(false);
  });

  it('date range: from startsAt (inclusive) to endsAt (exclusive)', () => {
    expect(applies({ startsAt: WEDNESDAY, endsAt: new Date(WEDNESDAY.getTime() + 1) })).toBe(true);
    expect(applies({ startsAt: new Date(WEDNESDAY.getTime() + 1) })).toBe(false);
    expect(applies({ endsAt: WEDNESDAY })).toBe(false);
  });

  it('usage limits: total uses and once per customer (counts are inputs)', () => {
    const r = rule({ effect: bonus, conditions: { maxUses: 100, oncePerCustomer: true } });
    const run = (total: number, byCustomer: number) =>
      quoteTopUp(input({ rules: [r], usage: { [r.id]: { total, byCustomer } }, customer: signedIn(false) })).applied.length;
    expect(run(99, 0)).toBe(1);
    expect(run(100, 0)).toBe(0);
    expect(run(5, 1)).toBe(0);
  });

  it('switched-off rules never apply', () => {
    expect(quoteTopUp(input({ rules: [rule({ effect: bonus, active: false })] })).applied).toEqual([]);
  });
});

describe('top-up engine: combination', () => {
  it('rules of one group do not stack: the highest priority wins', () => {
    const low = rule({ group: 'volume', priority: 10, effect: { type: 'BONUS_UNITS', component: 'credits', units: 50 } });
    const high = rule({ group: 'volume', priority: 20, effect: { type: 'BONUS_UNITS', component: 'credits', units: 100 } });
    const other = rule({ priority: 1, effect: { type: 'FIXED_OFF', amountCents: 100 } });
    const q = quoteTopUp(input({ rules: [low, high, other] }));
    expect(q.applied.map((a) => a.id)).toEqual([high.id, other.id]);
    expect(q.bonusTokens).toBe(1_000_000);
  });

  it('drops the lowest-priority rules until the profit floor holds', () => {
    const keep = rule({ priority: 20, effect: { type: 'PERCENT_OFF', percent: 10 } });
    const drop = rule({ priority: 1, effect: { type: 'EXTRA_TOKENS_PERCENT', percent: 100 } });
    const q = quoteTopUp(input({ rules: [keep, drop] }));
    expect(q.applied.map((a) => a.id)).toEqual([keep.id]);
    expect(q).toMatchObject({ amountCents: 40_500, bonusTokens: 0 });
  });

  it('caps the total discount at 50% of the price before discounts, taking it from the lowest priority first', () => {
    const settings = { ...DEFAULT_ENGINE_SETTINGS, profitFloorBp: -10_000 }; // floor out of the way for this example
    const first = rule({ priority: 2, effect: { type: 'PERCENT_OFF', percent: 40 } });
    const second = rule({ priority: 1, effect: { type: 'FIXED_OFF', amountCents: 10_000 } });
    const q = quoteTopUp(input({ settings, rules: [first, second] }));
    expect(q.discountCents).toBe(22_500);
    expect(q.applied.map((a) => a.discountCents)).toEqual([18_000, 4_500]);
    expect(q.amountCents).toBe(22_500);
  });
});

describe('top-up engine: offers and channels', () => {
  it('offers rules one step away, with what is missing', () => {
    const volume = rule({
      name: 'Volume',
      effect: { type: 'BONUS_UNITS', component: 'credits', units: 50 },
      conditions: { minUnits: { component: 'credits', units: 1_500 } },
    });
    const spend = rule({ effect: { type: 'FIXED_OFF', amountCents: 500 }, conditions: { minSpendCents: 50_000 } });
    const card = rule({ effect: { type: 'FIXED_OFF', amountCents: 500 }, conditions: { channels: ['card_regional'] } });
    const first = rule({ effect: { type: 'FIXED_OFF', amountCents: 500 }, conditions: { audience: 'FIRST_TOPUP' } });
    const twoAway = rule({ effect: { type: 'FIXED_OFF', amountCents: 500 }, conditions: { minSpendCents: 50_000, channels: ['dcb'] } });
    const weekend = rule({ effect: { type: 'FIXED_OFF', amountCents: 500 }, conditions: { daysOfWeek: [5] } });
    const q = quoteTopUp(input({ rules: [volume, spend, card, first, twoAway, weekend] }));
    const byId = new Map(q.offers.map((o) => [o.id, o.requirement]));
    expect(byId.get(volume.id)).toEqual({ type: 'MIN_UNITS', component: 'credits', units: 1_500, missingUnits: 500 });
    expect(byId.get(spend.id)).toEqual({ type: 'MIN_SPEND', amountCents: 50_000, missingCents: 5_000 });
    expect(byId.get(card.id)).toEqual({ type: 'CHANNEL', channels: ['card_regional'] });
    expect(byId.get(first.id)).toEqual({ type: 'SIGN_IN' });
    expect(q.offers).toHaveLength(4);
  });

  it('does not offer a rule its group would overrule', () => {
    const big = rule({ group: 'volume', priority: 20, effect: { type: 'BONUS_UNITS', component: 'credits', units: 100 } });
    const small = rule({
      group: 'volume',
      priority: 10,
      effect: { type: 'BONUS_UNITS', component: 'credits', units: 50 },
      conditions: { minUnits: { component: 'credits', units: 2_000 } },
    });
    expect(quoteTopUp(input({ rules: [big, small] })).offers).toEqual([]);
  });

  it('payableWith: carrier billing takes only registered amounts and is not offered with none registered', () => {
    const none = quoteTopUp(input());
    expect(none.payableWith).toEqual(['card_regional']);
    expect(none.unavailableChannels).toEqual([{ slug: 'dcb', reason: 'Mobile balance is not offered for top-ups.' }]);
    const registered = CHANNELS.map((c) => (c.slug === 'dcb' ? { ...c, amountsCents: [45_000, 10_000] } : c));
    expect(quoteTopUp(input({ channels: registered })).payableWith).toEqual(['card_regional', 'dcb']);
    const other = quoteTopUp(input({ channels: registered, selection: { credits: 500 } }));
    expect(other.payableWith).toEqual(['card_regional']);
    expect(other.unavailableChannels[0]?.reason).toContain('৳100.00, ৳450.00');
    const disabled = CHANNELS.map((c) => ({ ...c, enabled: c.slug !== 'card_regional' }));
    expect(quoteTopUp(input({ channels: disabled })).payableWith).toEqual([]);
    const capped = CHANNELS.map((c) => (c.slug === 'card_regional' ? { ...c, maxAmountCents: 40_000 } : c));
    expect(quoteTopUp(input({ channels: capped })).unavailableChannels[0]?.reason).toContain('at most ৳400.00');
  });
});
