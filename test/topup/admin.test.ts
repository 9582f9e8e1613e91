import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topUpRules } from '../../src/db/schema/topup.js';
import { bearer, createTestApp, json, signUpAs, type TestApp } from '../helpers/test-app.js';

let t: TestApp;
let root: Awaited<ReturnType<typeof signUpAs>>;
let reader: Awaited<ReturnType<typeof signUpAs>>;
let customer: Awaited<ReturnType<typeof signUpAs>>;

beforeAll(async () => {
  t = await createTestApp();
  [root, reader, customer] = await Promise.all([signUpAs(t, 'SUPER_ADMIN'), signUpAs(t, 'ADMIN'), signUpAs(t, 'USER')]);
});
afterAll(async () => t?.close());

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH';
const call = (token: string, method: Method, url: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(token), ...(payload ? { payload } : {}) });
const su = (method: Method, url: string, payload?: object) => call(root.accessToken, method, url, payload);
const quoteOf = async (selection: Record<string, number>) => json(await call(customer.accessToken, 'POST', '/v1/topup/quote', { selection }));
const auditOf = async (action: string) => json(await su('GET', `/v1/admin/audit?action=${encodeURIComponent(action)}`)).items as Array<Record<string, any>>;
const expect400 = async (response: Awaited<ReturnType<typeof su>>, text: string) => {
  expect(response.statusCode, response.body).toBe(400);
  expect(json(response).error.code).toBe('BAD_REQUEST');
  expect(json(response).error.message).toContain(text);
};

describe('top-up rules', () => {
  it('lists the four templates switched off; a rule switched on changes the next quote, audited', async () => {
    const list = await call(reader.accessToken, 'GET', '/v1/admin/topup/rules');
    expect(list.statusCode).toBe(200);
    const templates = json(list).items.filter((r: { template: string | null }) => r.template);
    expect(templates.map((r: { template: string }) => r.template).sort()).toEqual(['first-topup', 'volume-1000', 'volume-5000', 'weekend-extra']);
    expect(templates.every((r: { active: boolean }) => !r.active)).toBe(true);

    const volume = templates.find((r: { template: string }) => r.template === 'volume-1000');
    expect((await quoteOf({ credits: 1_000 })).bonusTokens).toBe(0);
    // Reads for ADMIN, changes for SUPER_ADMIN only.
    expect((await call(reader.accessToken, 'PATCH', `/v1/admin/topup/rules/${volume.id}`, { active: true })).statusCode).toBe(403);
    const on = await su('PATCH', `/v1/admin/topup/rules/${volume.id}`, { active: true });
    expect(on.statusCode, on.body).toBe(200);
    expect(json(on)).toMatchObject({ id: volume.id, active: true });
    const after = await quoteOf({ credits: 1_000 });
    expect(after.bonusTokens).toBe(500_000);
    expect(after.applied).toEqual([expect.objectContaining({ id: volume.id, bonusTokens: 500_000 })]);

    const [entry] = await auditOf('topup.rule.activate');
    expect(entry).toMatchObject({
      actor: { userId: root.user.id, role: 'SUPER_ADMIN' },
      targetType: 'topup_rule',
      targetId: volume.id,
      before: { active: false },
      after: { active: true },
    });

    expect((await su('PATCH', `/v1/admin/topup/rules/${volume.id}`, { active: false })).statusCode).toBe(200);
    expect((await quoteOf({ credits: 1_000 })).bonusTokens).toBe(0);
    expect((await su('PATCH', '/v1/admin/topup/rules/00000000-0000-4000-8000-000000000000', { active: true })).statusCode).toBe(404);
    await expect400(await su('PATCH', `/v1/admin/topup/rules/${volume.id}`, { active: 'yes' }), 'active');
  });

  it('creates rules switched off, replaces a definition, and refuses rules the engine cannot apply', async () => {
    const body = {
      name: 'Spend ৳1,000, get ৳50 off',
      type: 'PROMOTION',
      priority: 3,
      effect: { type: 'FIXED_OFF', amountCents: 5_000 },
      conditions: { minSpendCents: 100_000 },
    };
    const created = await su('POST', '/v1/admin/topup/rules', body);
    expect(created.statusCode, created.body).toBe(201);
    const rule = json(created);
    expect(rule).toMatchObject({ active: false, template: null, priority: 3, group: null, effect: body.effect, conditions: body.conditions });
    expect((await auditOf('topup.rule.create'))[0]).toMatchObject({
      targetId: rule.id,
      before: null,
      after: expect.objectContaining({ name: body.name, active: false }),
    });
    // New rules start off whatever the caller hopes: `active` is not part of a definition.
    await expect400(await su('POST', '/v1/admin/topup/rules', { ...body, active: true }), 'active');

    const replaced = await su('PUT', `/v1/admin/topup/rules/${rule.id}`, {
      ...body,
      name: 'Ten percent off',
      effect: { type: 'PERCENT_OFF', percent: 10, maxDiscountCents: 3_000 },
      conditions: {},
    });
    expect(replaced.statusCode, replaced.body).toBe(200);
    expect(json(replaced)).toMatchObject({ id: rule.id, name: 'Ten percent off', active: false, conditions: {} });
    const [update] = await auditOf('topup.rule.update');
    expect(update).toMatchObject({
      targetId: rule.id,
      before: expect.objectContaining({ name: body.name }),
      after: expect.objectContaining({ name: 'Ten percent off' }),
    });

    await expect400(
      await su('POST', '/v1/admin/topup/rules', { ...body, effect: { type: 'BONUS_UNITS', component: 'gems', units: 5 } }),
      '"gems" is not a top-up component',
    );
    await expect400(
      await su('POST', '/v1/admin/topup/rules', { ...body, conditions: { minUnits: { component: 'nope', units: 5 } } }),
      'conditions.minUnits.component',
    );
    await expect400(
      await su('POST', '/v1/admin/topup/rules', { ...body, conditions: { startsAt: '2026-12-02T00:00:00Z', endsAt: '2026-12-01T00:00:00Z' } }),
      'endsAt must be later',
    );
    await expect400(await su('POST', '/v1/admin/topup/rules', { ...body, conditions: { audience: 'NEW_ACCOUNT' } }), 'newAccountDays is required');
    await expect400(await su('POST', '/v1/admin/topup/rules', { ...body, effect: { type: 'PERCENT_OFF', percent: 101 } }), 'percent');
    await expect400(await su('POST', '/v1/admin/topup/rules', { ...body, conditions: { daysOfWeek: [5, 5] } }), 'daysOfWeek');
    await expect400(await su('PUT', `/v1/admin/topup/rules/${rule.id}`, { ...body, effect: { type: 'FIXED_OFF', amountCents: 0 } }), 'amountCents');
    await expect400(
      await su('POST', '/v1/admin/topup/rules', { ...body, effect: { type: 'BONUS_UNITS', units: 5 } }),
      'effect.component is required for a BONUS_UNITS effect',
    );
    await expect400(
      await su('POST', '/v1/admin/topup/rules', { ...body, effect: { type: 'FIXED_OFF', amountCents: 100, percent: 5 } }),
      'effect.percent does not apply to a FIXED_OFF effect',
    );
    // Nothing of the refused bodies was written.
    const [row] = await t.platform.db.select().from(topUpRules).where(eq(topUpRules.id, rule.id));
    expect(row!.name).toBe('Ten percent off');
  });
});

describe('top-up components', () => {
  it('lists components and changes one: on sale, limits and pricing; the builder shows it at once', async () => {
    const list = json(await call(reader.accessToken, 'GET', '/v1/admin/topup/components'));
    expect(list.items.map((c: { key: string }) => c.key)).toEqual(['credits', 'images', 'videos', 'speech', 'chat']);
    expect(list.items[0]).toMatchObject({
      key: 'credits',
      enabled: true,
      minUnits: 50,
      maxUnits: 20_000,
      step: 10,
      tokensPerUnit: null,
      pricing: { mode: 'AI_COST' },
    });

    const changed = await su('PATCH', '/v1/admin/topup/components/images', {
      enabled: true,
      pricing: {
        mode: 'TIERS',
        tiers: [
          { minUnits: 5, unitPriceCents: 1_000 },
          { minUnits: 100, unitPriceCents: 800 },
        ],
      },
    });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(json(changed)).toMatchObject({ key: 'images', enabled: true, pricing: { mode: 'TIERS' } });
    const options = json(await t.app.inject({ method: 'GET', url: '/v1/topup/options' }));
    expect(options.components.map((c: { key: string }) => c.key)).toContain('images');
    expect((await quoteOf({ images: 100 })).lines[0]).toMatchObject({ key: 'images', unitPriceCents: 800, priceCents: 80_000, tierMinUnits: 100 });
    const [entry] = await auditOf('topup.component.update');
    expect(entry).toMatchObject({
      targetId: 'images',
      before: { enabled: false, pricing: { mode: 'AI_COST' } },
      after: { enabled: true, pricing: expect.objectContaining({ mode: 'TIERS' }) },
    });

    await expect400(await su('PATCH', '/v1/admin/topup/components/credits', { minUnits: 30_000 }), 'must not exceed maxUnits');
    await expect400(await su('PATCH', '/v1/admin/topup/components/credits', { step: 7 }), 'multiple of step');
    await expect400(await su('PATCH', '/v1/admin/topup/components/credits', { step: 0 }), 'step');
    await expect400(await su('PATCH', '/v1/admin/topup/components/credits', { tokensPerUnit: 5_000 }), 'tokensPerCredit');
    await expect400(
      await su('PATCH', '/v1/admin/topup/components/images', {
        pricing: {
          mode: 'TIERS',
          tiers: [
            { minUnits: 100, unitPriceCents: 800 },
            { minUnits: 5, unitPriceCents: 1_000 },
          ],
        },
      }),
      'ascending',
    );
    await expect400(await su('PATCH', '/v1/admin/topup/components/images', { pricing: { mode: 'FIXED', unitPriceCents: 0 } }), 'unitPriceCents');
    await expect400(await su('PATCH', '/v1/admin/topup/components/credits', {}), 'fewer than 1');
    expect((await su('PATCH', '/v1/admin/topup/components/gems', { enabled: true })).statusCode).toBe(404);

    expect((await su('PATCH', '/v1/admin/topup/components/images', { enabled: false, pricing: { mode: 'AI_COST' } })).statusCode).toBe(200);
  });
});

describe('top-up settings, carrier amounts and credit pricing', () => {
  it('settings: read and change (applied to the next quote), audited, refused when the engine could not price', async () => {
    const before = json(await call(reader.accessToken, 'GET', '/v1/admin/topup/settings'));
    expect(before).toMatchObject({
      roundToCents: 100,
      minOrderCents: 2_000,
      maxOrderCents: 1_000_000,
      profitFloorBp: 1_000,
      maxDiscountBp: 5_000,
      gatewayFeeBp: 500,
      vatBp: 1_500,
      profitBp: 4_000,
      lowBalanceThresholdTokens: 100_000,
    });
    expect((await quoteOf({ credits: 500 })).amountCents).toBe(22_500);

    const changed = await su('PUT', '/v1/admin/topup/settings', { profitBp: 5_000, lowBalanceThresholdTokens: 50_000 });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(json(changed)).toMatchObject({ profitBp: 5_000, lowBalanceThresholdTokens: 50_000, vatBp: 1_500 });
    expect((await quoteOf({ credits: 500 })).amountCents).toBe(30_000); // cost 9,000 / 0.30
    expect((await t.services.topup.terms()).lowBalanceThresholdTokens).toBe(50_000);
    const [entry] = await auditOf('topup.settings.update');
    expect(entry).toMatchObject({
      targetType: 'topup_settings',
      before: { profitBp: 4_000, lowBalanceThresholdTokens: 100_000 },
      after: { profitBp: 5_000, lowBalanceThresholdTokens: 50_000 },
    });

    await expect400(await su('PUT', '/v1/admin/topup/settings', { gatewayFeeBp: 4_000, vatBp: 1_000 }), 'less than 10,000 bp');
    await expect400(await su('PUT', '/v1/admin/topup/settings', { profitFloorBp: 6_000 }), 'must not exceed profitBp');
    await expect400(await su('PUT', '/v1/admin/topup/settings', { minOrderCents: 2_000_000 }), 'must not exceed maxOrderCents');
    await expect400(await su('PUT', '/v1/admin/topup/settings', { roundToCents: 300 }), 'multiples of the rounding step');
    await expect400(await su('PUT', '/v1/admin/topup/settings', { maxDiscountBp: 10_001 }), 'maxDiscountBp');
    await expect400(await su('PUT', '/v1/admin/topup/settings', { surprise: 1 }), 'surprise');
    expect((await call(reader.accessToken, 'PUT', '/v1/admin/topup/settings', { profitBp: 4_000 })).statusCode).toBe(403);
    expect(json(await su('GET', '/v1/admin/topup/settings'))).toMatchObject({ profitBp: 5_000, gatewayFeeBp: 500, minOrderCents: 2_000 });

    expect((await su('PUT', '/v1/admin/topup/settings', { profitBp: 4_000, lowBalanceThresholdTokens: 100_000 })).statusCode).toBe(200);
  });

  it('carrier billing amounts: positive, unique, ascending; the builder offers exactly those', async () => {
    expect(json(await call(reader.accessToken, 'GET', '/v1/admin/topup/payment-rules/dcb'))).toEqual({ amountsCents: [49_900, 149_900] });
    const set = await su('PUT', '/v1/admin/topup/payment-rules/dcb', { amountsCents: [22_500, 49_900] });
    expect(set.statusCode, set.body).toBe(200);
    expect(json(set)).toEqual({ amountsCents: [22_500, 49_900] });
    expect((await quoteOf({ credits: 500 })).payableWith).toContain('dcb'); // ৳225 is registered now
    expect((await auditOf('topup.payment-rules.dcb.update'))[0]).toMatchObject({
      targetId: 'dcb',
      before: { amountsCents: [49_900, 149_900] },
      after: { amountsCents: [22_500, 49_900] },
    });

    await expect400(await su('PUT', '/v1/admin/topup/payment-rules/dcb', { amountsCents: [49_900, 22_500] }), 'each larger than the one before');
    await expect400(await su('PUT', '/v1/admin/topup/payment-rules/dcb', { amountsCents: [22_500, 22_500] }), 'amountsCents');
    await expect400(await su('PUT', '/v1/admin/topup/payment-rules/dcb', { amountsCents: [0] }), 'amountsCents');
    await expect400(await su('PUT', '/v1/admin/topup/payment-rules/dcb', { amountsCents: [99.5] }), 'amountsCents');
    expect(json(await su('GET', '/v1/admin/topup/payment-rules/dcb'))).toEqual({ amountsCents: [22_500, 49_900] });
    expect((await su('PUT', '/v1/admin/topup/payment-rules/dcb', { amountsCents: [49_900, 149_900] })).statusCode).toBe(200);
  });

  it('credit pricing: topUpEnabled=false refuses quotes and orders with the spec’s 400; audited', async () => {
    expect(json(await call(reader.accessToken, 'GET', '/v1/admin/credits/pricing'))).toEqual({
      tokenValueCents: 1_800,
      tokenValueTokens: 1_000_000,
      tokensPerCredit: 10_000,
      currency: 'BDT',
      topUpEnabled: true,
    });
    const off = await su('PUT', '/v1/admin/credits/pricing', { topUpEnabled: false });
    expect(off.statusCode, off.body).toBe(200);
    expect(json(off)).toMatchObject({ topUpEnabled: false, tokensPerCredit: 10_000 });
    expect(await quoteOf({ credits: 500 })).toMatchObject({ valid: false, issues: [{ field: 'enabled' }] });
    const order = await call(customer.accessToken, 'POST', '/v1/topup/orders', { selection: { credits: 500 }, provider: 'card_regional' });
    await expect400(order, 'switched off');
    expect((await auditOf('credits.pricing.update'))[0]).toMatchObject({
      targetType: 'settings',
      before: { topUpEnabled: true },
      after: { topUpEnabled: false },
    });

    await expect400(await su('PUT', '/v1/admin/credits/pricing', { tokensPerCredit: 0 }), 'tokensPerCredit');
    await expect400(await su('PUT', '/v1/admin/credits/pricing', {}), 'fewer than 1');
    await expect400(await su('PUT', '/v1/admin/credits/pricing', { currency: 'USD' }), 'currency');
    expect((await call(reader.accessToken, 'PUT', '/v1/admin/credits/pricing', { topUpEnabled: true })).statusCode).toBe(403);
    expect((await su('PUT', '/v1/admin/credits/pricing', { topUpEnabled: true })).statusCode).toBe(200);
    expect((await quoteOf({ credits: 500 })).valid).toBe(true);
  });
});

describe('top-up orders for operators', () => {
  it('PRICE_CHANGED (409) after an admin price change between quote and order; the order list filters by user and status', async () => {
    const quoted = await quoteOf({ credits: 500 });
    expect((await su('PUT', '/v1/admin/topup/settings', { profitBp: 5_000 })).statusCode).toBe(200);
    const stale = await call(customer.accessToken, 'POST', '/v1/topup/orders', {
      selection: { credits: 500 },
      provider: 'card_regional',
      expectedAmountCents: quoted.amountCents,
    });
    expect(stale.statusCode).toBe(409);
    expect(json(stale).error).toMatchObject({ code: 'PRICE_CHANGED', details: { amountCents: 30_000, totalTokens: 5_000_000 } });
    expect((await su('PUT', '/v1/admin/topup/settings', { profitBp: 4_000 })).statusCode).toBe(200);

    const placed = await call(customer.accessToken, 'POST', '/v1/topup/orders', {
      selection: { credits: 500 },
      provider: 'card_regional',
      expectedAmountCents: quoted.amountCents,
    });
    expect(placed.statusCode, placed.body).toBe(200);
    const { orderId } = json(placed);

    const mine = json(await call(reader.accessToken, 'GET', `/v1/admin/topup/orders?userId=${customer.user.id}`));
    expect(mine.items).toEqual([
      expect.objectContaining({ id: orderId, userId: customer.user.id, status: 'PENDING', selection: { credits: 500 }, amountCents: 22_500, appliedRules: [] }),
    ]);
    expect(mine.nextCursor).toBeNull();
    expect(
      json(await call(reader.accessToken, 'GET', `/v1/admin/topup/orders?userId=${customer.user.id}&status=PENDING`)).items.map((o: { id: string }) => o.id),
    ).toEqual([orderId]);
    expect(json(await call(reader.accessToken, 'GET', `/v1/admin/topup/orders?userId=${customer.user.id}&status=SUCCEEDED`)).items).toEqual([]);

    // A second order pages with the cursor, newest first.
    const second = json(await call(customer.accessToken, 'POST', '/v1/topup/orders', { selection: { credits: 600 }, provider: 'card_regional' }));
    const page1 = json(await call(reader.accessToken, 'GET', `/v1/admin/topup/orders?userId=${customer.user.id}&limit=1`));
    expect(page1.items.map((o: { id: string }) => o.id)).toEqual([second.orderId]);
    const page2 = json(await call(reader.accessToken, 'GET', `/v1/admin/topup/orders?userId=${customer.user.id}&limit=1&cursor=${page1.nextCursor}`));
    expect(page2.items.map((o: { id: string }) => o.id)).toEqual([orderId]);
    expect(page2.nextCursor).toBeNull();

    expect((await call(customer.accessToken, 'GET', '/v1/admin/topup/orders')).statusCode).toBe(403);
    await expect400(await su('GET', '/v1/admin/topup/orders?status=PAID'), 'status');
  });
});
