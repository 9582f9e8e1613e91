import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { topUpComponents, topUpRules } from '../../src/db/schema/topup.js';
import { paymentChannels } from '../../src/db/schema/payments.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../helpers/test-app.js';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

const db = () => t.platform.db;
const quote = (payload: unknown, token?: string) =>
  t.app.inject({ method: 'POST', url: '/v1/topup/quote', payload: payload as object, headers: token ? bearer(token) : {} });
const ruleByTemplate = async (template: string) => (await db().select().from(topUpRules).where(eq(topUpRules.template, template)))[0]!;

beforeEach(async () => {
  await db().update(topUpRules).set({ active: false });
  await t.services.catalog.updatePricingSettings({ topUpEnabled: true });
});

describe('GET /v1/topup/options', () => {
  it('shows the credits component on sale, the limits, no offers while the templates are off, and the channels', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/v1/topup/options' });
    expect(response.statusCode).toBe(200);
    const body = json(response);
    expect(body).toMatchObject({
      enabled: true,
      currency: 'BDT',
      tokensPerCredit: 10_000,
      minOrderCents: 2_000,
      maxOrderCents: 1_000_000,
      roundToCents: 100,
      charsPer300Tokens: 1_200,
      offers: [],
    });
    expect(body.components).toEqual([
      {
        key: 'credits',
        name: 'Credits',
        description: expect.any(String),
        kind: 'CREDITS',
        unit: 'credit',
        minUnits: 50,
        maxUnits: 20_000,
        step: 10,
        defaultUnits: 500,
        tokensPerUnit: 10_000,
        pricing: { mode: 'formula', unitPriceCents: 45 },
      },
    ]);
    // Carrier billing lists the amounts it is registered for.
    expect(body.channels).toContainEqual(expect.objectContaining({ slug: 'dcb', amountsCents: [49_900, 149_900] }));
  });

  it('seeds the four rule templates switched off; a switched-on one is listed as an offer', async () => {
    const rules = await db().select().from(topUpRules);
    expect(rules.map((r) => r.template).sort()).toEqual(['first-topup', 'volume-1000', 'volume-5000', 'weekend-extra']);
    expect(rules.every((r) => !r.active)).toBe(true);
    const volume = await ruleByTemplate('volume-1000');
    await db().update(topUpRules).set({ active: true }).where(eq(topUpRules.id, volume.id));
    const body = json(await t.app.inject({ method: 'GET', url: '/v1/topup/options' }));
    expect(body.offers).toEqual([
      {
        id: volume.id,
        name: volume.name,
        description: volume.description,
        type: 'BONUS',
        conditions: { minUnits: { component: 'credits', units: 1_000 } },
        effect: { type: 'BONUS_UNITS', component: 'credits', units: 50 },
        endsAt: null,
      },
    ]);
  });

  it('rejects unknown query keys', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/v1/topup/options?x=1' })).statusCode).toBe(400);
  });
});

describe('POST /v1/topup/quote', () => {
  it('prices credits anonymously', async () => {
    const response = await quote({ selection: { credits: 1_000 } });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toMatchObject({
      valid: true,
      issues: [],
      currency: 'BDT',
      subtotalCents: 45_000,
      amountCents: 45_000,
      tokens: 10_000_000,
      totalTokens: 10_000_000,
      credits: 1_000,
      applied: [],
    });
    expect(json(response).payableWith.length).toBeGreaterThan(0);
  });

  it('answers an invalid selection with 200, valid: false and issues by field', async () => {
    const response = await quote({ selection: { credits: 55, images: 10, nope: 1 } });
    expect(response.statusCode).toBe(200);
    const body = json(response);
    expect(body.valid).toBe(false);
    expect(body.issues.map((i: { field: string }) => i.field).sort()).toEqual(['credits', 'images', 'nope']);
    expect(json(await quote({ selection: { credits: -10 } })).issues[0].field).toBe('credits');
  });

  it('refuses a malformed body (not a selection) with 400', async () => {
    expect((await quote({ selection: { credits: 'ten' } })).statusCode).toBe(400);
    expect((await quote({ selection: {}, couponCode: 'X' })).statusCode).toBe(400);
  });

  it('reports top-ups switched off as a quote issue', async () => {
    await t.services.catalog.updatePricingSettings({ topUpEnabled: false });
    const body = json(await quote({ selection: { credits: 100 } }));
    expect(body).toMatchObject({ valid: false, issues: [{ field: 'enabled' }] });
  });

  it('a token enables the first top-up bonus; anonymous quotes see it as an offer to sign in', async () => {
    const first = await ruleByTemplate('first-topup');
    await db().update(topUpRules).set({ active: true }).where(eq(topUpRules.id, first.id));
    const anonymous = json(await quote({ selection: { credits: 500 } }));
    expect(anonymous.applied).toEqual([]);
    expect(anonymous.offers).toEqual([{ id: first.id, name: first.name, type: 'BONUS', requirement: { type: 'SIGN_IN' } }]);
    const user = await signUp(t.app);
    const signedIn = json(await quote({ selection: { credits: 500 } }, user.accessToken));
    expect(signedIn.applied.map((a: { id: string }) => a.id)).toEqual([first.id]);
    expect(signedIn).toMatchObject({ bonusTokens: 1_000_000, totalTokens: 6_000_000, bonusCredits: 100 });
  });

  it('a new-account rule applies to young accounts only', async () => {
    const [rule] = await db()
      .insert(topUpRules)
      .values({
        name: 'Welcome week',
        type: 'PROMOTION',
        active: true,
        effect: { type: 'FIXED_OFF', amountCents: 1_000 },
        conditions: { audience: 'NEW_ACCOUNT', newAccountDays: 7 },
      })
      .returning();
    try {
      const user = await signUp(t.app);
      expect(json(await quote({ selection: { credits: 500 } }, user.accessToken))).toMatchObject({ discountCents: 1_000, amountCents: 21_500 });
      t.clock.advance(8 * 86_400_000);
      const later = await t.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: user.email, password: user.password } });
      expect(json(await quote({ selection: { credits: 500 } }, json(later).accessToken)).discountCents).toBe(0);
    } finally {
      await db().delete(topUpRules).where(eq(topUpRules.id, rule!.id));
    }
  });

  it('channel enables channel-only promotions; carrier billing takes only registered amounts', async () => {
    const [rule] = await db()
      .insert(topUpRules)
      .values({ name: 'Card day', type: 'PROMOTION', active: true, effect: { type: 'PERCENT_OFF', percent: 10 }, conditions: { channels: ['card_regional'] } })
      .returning();
    try {
      const plain = json(await quote({ selection: { credits: 1_000 } }));
      expect(plain.applied).toEqual([]);
      expect(plain.offers).toEqual([{ id: rule!.id, name: 'Card day', type: 'PROMOTION', requirement: { type: 'CHANNEL', channels: ['card_regional'] } }]);
      expect(plain.unavailableChannels).toContainEqual({ slug: 'dcb', reason: expect.stringContaining('takes only these amounts: ৳499.00, ৳1,499.00') });
      const card = json(await quote({ selection: { credits: 1_000 }, channel: 'card_regional' }));
      expect(card).toMatchObject({ discountCents: 4_500, amountCents: 40_500 });

      // None registered: carrier billing is not offered for top-ups at all.
      await db().update(paymentChannels).set({ amountsCents: [] }).where(eq(paymentChannels.slug, 'dcb'));
      expect(json(await t.app.inject({ method: 'GET', url: '/v1/topup/options' })).channels.map((c: { slug: string }) => c.slug)).not.toContain('dcb');
      expect(json(await quote({ selection: { credits: 1_000 } })).unavailableChannels).toContainEqual({
        slug: 'dcb',
        reason: expect.stringContaining('not offered for top-ups'),
      });
      await db()
        .update(paymentChannels)
        .set({ amountsCents: [45_000] })
        .where(eq(paymentChannels.slug, 'dcb'));
      expect(json(await quote({ selection: { credits: 1_000 } })).payableWith).toContain('dcb');
      const other = json(await quote({ selection: { credits: 500 } }));
      expect(other.payableWith).not.toContain('dcb');
      expect(other.unavailableChannels).toContainEqual({ slug: 'dcb', reason: expect.stringContaining('৳450.00') });
    } finally {
      await db().delete(topUpRules).where(eq(topUpRules.id, rule!.id));
      await db()
        .update(paymentChannels)
        .set({ amountsCents: [49_900, 149_900] })
        .where(eq(paymentChannels.slug, 'dcb'));
    }
  });

  it('prices an operator-enabled model-usage component', async () => {
    await db()
      .update(topUpComponents)
      .set({ enabled: true, pricing: { mode: 'FIXED', unitPriceCents: 700 } })
      .where(eq(topUpComponents.key, 'images'));
    try {
      const body = json(await quote({ selection: { credits: 100, images: 10 } }));
      expect(body.lines.map((l: { key: string; priceCents: number }) => [l.key, l.priceCents])).toEqual([
        ['credits', 4_500],
        ['images', 7_000],
      ]);
      expect(body.usage).toEqual({ items: [{ displayName: 'Images', unit: 'image', units: 10 }], tokensSpent: 1_356_000, tokensLeft: 1_000_000 });
    } finally {
      await db()
        .update(topUpComponents)
        .set({ enabled: false, pricing: { mode: 'AI_COST' } })
        .where(eq(topUpComponents.key, 'images'));
    }
  });
});
