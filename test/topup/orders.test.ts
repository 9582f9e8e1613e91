import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { topUpRules, topUpSettings } from '../../src/db/schema/topup.js';
import { payments } from '../../src/db/schema/payments.js';
import { PAYMENT_TEST_ENV, paymentFixtures, SUCCESS_URL, CANCEL_URL } from '../helpers/payments.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../helpers/test-app.js';

let t: TestApp;
let f: ReturnType<typeof paymentFixtures>;

beforeAll(async () => {
  t = await createTestApp({ env: PAYMENT_TEST_ENV });
  f = paymentFixtures(t);
});
afterAll(async () => t?.close());

const db = () => t.platform.db;
const req = (token: string, method: 'GET' | 'POST', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(token), ...(payload ? { payload } : {}) });
const order = (token: string, body: Record<string, unknown>) =>
  req(token, 'POST', '/v1/topup/orders', { provider: 'card_regional', successUrl: SUCCESS_URL, cancelUrl: CANCEL_URL, ...body });
const balance = async (token: string) => Number(json(await req(token, 'GET', '/v1/credits/balance')).tokens);
const ruleByTemplate = async (template: string) => (await db().select().from(topUpRules).where(eq(topUpRules.template, template)))[0]!;

beforeEach(async () => {
  await db().update(topUpRules).set({ active: false });
  await t.services.catalog.updatePricingSettings({ topUpEnabled: true });
  await db().update(topUpSettings).set({ profitBp: 4_000 });
});

describe('POST /v1/topup/orders and the topup fulfilment', () => {
  it('a paid order grants tokens (PURCHASE) and bonus (PROMO) exactly once, fixed when placed', async () => {
    const first = await ruleByTemplate('first-topup');
    await db().update(topUpRules).set({ active: true }).where(eq(topUpRules.id, first.id));
    const user = await signUp(t.app);
    const before = await balance(user.accessToken);
    const placed = await order(user.accessToken, { selection: { credits: 500 }, expectedAmountCents: 22_500 });
    expect(placed.statusCode).toBe(200);
    const body = json(placed);
    expect(body).toMatchObject({ amountCents: 22_500, tokens: 5_000_000, bonusTokens: 1_000_000, totalTokens: 6_000_000 });

    const pending = json(await req(user.accessToken, 'GET', `/v1/topup/orders/${body.orderId}`));
    expect(pending).toMatchObject({
      id: body.orderId,
      status: 'PENDING',
      selection: { credits: 500 },
      channel: 'card_regional',
      tokensGranted: 0,
      payment: { id: body.paymentId, status: 'PENDING', provider: 'card_regional', paidAt: null },
    });
    expect(pending.appliedRules.map((a: { id: string }) => a.id)).toEqual([first.id]);

    // The price changes after the order was placed: the order keeps what it was sold with.
    await db().update(topUpSettings).set({ profitBp: 5_000 });
    await f.pressSandbox(body.redirectUrl, 'pay');
    const paid = json(await req(user.accessToken, 'GET', `/v1/topup/orders/${body.orderId}`));
    expect(paid).toMatchObject({ status: 'SUCCEEDED', tokensGranted: 6_000_000, payment: { status: 'SUCCEEDED' } });
    expect(await balance(user.accessToken)).toBe(before + 6_000_000);
    const payment = json(await req(user.accessToken, 'GET', `/v1/payments/${body.paymentId}`));
    expect(payment).toMatchObject({ kind: 'topup', topUpOrderId: body.orderId, tokensGranted: 6_000_000 });

    // A replayed confirmation grants nothing more.
    const [row] = await db().select().from(payments).where(eq(payments.id, body.paymentId));
    const again = await db().transaction(async (tx) => t.services.topup.fulfil(tx, { id: row!.id, userId: row!.userId, purpose: row!.purpose }));
    expect(again).toEqual({ status: 'already_fulfilled' });
    await f.reconcile();
    expect(await balance(user.accessToken)).toBe(before + 6_000_000);

    // The once-per-customer first top-up bonus is used: the next quote does not apply it.
    const next = json(await req(user.accessToken, 'POST', '/v1/topup/quote', { selection: { credits: 500 } }));
    expect(next.applied).toEqual([]);
  });

  it('a once-per-customer rule under two concurrent paid orders: both keep the bonus they were sold with (the spec allows this slight excess), later quotes count both', async () => {
    const first = await ruleByTemplate('first-topup');
    await db().update(topUpRules).set({ active: true }).where(eq(topUpRules.id, first.id));
    const user = await signUp(t.app);
    const before = await balance(user.accessToken);
    const [a, b] = await Promise.all([order(user.accessToken, { selection: { credits: 500 } }), order(user.accessToken, { selection: { credits: 600 } })]);
    expect([json(a).bonusTokens, json(b).bonusTokens]).toEqual([1_000_000, 1_000_000]);
    await Promise.all([f.pressSandbox(json(a).redirectUrl, 'pay'), f.pressSandbox(json(b).redirectUrl, 'pay')]);
    expect(await balance(user.accessToken)).toBe(before + 6_000_000 + 7_000_000);
    expect(json(await req(user.accessToken, 'POST', '/v1/topup/quote', { selection: { credits: 500 } })).applied).toEqual([]);
  });

  it('PRICE_CHANGED (409) after a price change between quote and order', async () => {
    const user = await signUp(t.app);
    const quoted = json(await req(user.accessToken, 'POST', '/v1/topup/quote', { selection: { credits: 1_000 } }));
    expect(quoted.amountCents).toBe(45_000);
    await db().update(topUpSettings).set({ profitBp: 5_000 }); // an operator raises the margin: cost / 0.30
    const refused = await order(user.accessToken, { selection: { credits: 1_000 }, expectedAmountCents: quoted.amountCents });
    expect(refused.statusCode).toBe(409);
    expect(json(refused).error).toMatchObject({ code: 'PRICE_CHANGED', details: { amountCents: 60_000, totalTokens: 10_000_000 } });
    expect(json(refused).error.message).toContain('৳600.00');
    expect(json(await req(user.accessToken, 'GET', '/v1/topup/orders')).items).toEqual([]);
  });

  it('refuses with 400: invalid selection, a channel that cannot take the amount, top-ups off, a coupon code', async () => {
    const user = await signUp(t.app);
    const invalid = await order(user.accessToken, { selection: { credits: 55 } });
    expect(invalid.statusCode).toBe(400);
    expect(json(invalid).error.details.issues[0]).toMatchObject({ field: 'credits' });

    const carrier = await order(user.accessToken, { selection: { credits: 500 }, provider: 'dcb', extra: { paymentProvider: 'GP', msisdn: '01712345678' } });
    expect(carrier.statusCode).toBe(400);
    expect(json(carrier).error.message).toContain('takes only these amounts');

    const coupon = await order(user.accessToken, { selection: { credits: 500 }, couponCode: 'SAVE10' });
    expect(coupon.statusCode).toBe(400);
    expect(json(coupon).error.message).toContain('no coupon');

    await t.services.catalog.updatePricingSettings({ topUpEnabled: false });
    const off = await order(user.accessToken, { selection: { credits: 500 } });
    expect(off.statusCode).toBe(400);
    expect(json(off).error.message).toContain('switched off');
    expect(json(await req(user.accessToken, 'GET', '/v1/topup/orders')).items).toEqual([]);
  });

  it('needs a token', async () => {
    expect(
      (await t.app.inject({ method: 'POST', url: '/v1/topup/orders', payload: { selection: { credits: 500 }, provider: 'card_regional' } })).statusCode,
    ).toBe(401);
  });
});

describe('GET /v1/topup/orders', () => {
  it('own orders only (another user’s is 404), newest first with a cursor', async () => {
    const owner = await signUp(t.app);
    const other = await signUp(t.app);
    const ids: string[] = [];
    for (const credits of [100, 200, 300]) {
      ids.push(json(await order(owner.accessToken, { selection: { credits } })).orderId);
      t.clock.advance(1_000);
    }
    expect((await req(other.accessToken, 'GET', `/v1/topup/orders/${ids[0]}`)).statusCode).toBe(404);
    expect((await req(owner.accessToken, 'GET', `/v1/topup/orders/${ids[0]}`)).statusCode).toBe(200);
    expect((await req(owner.accessToken, 'GET', '/v1/topup/orders/not-a-uuid')).statusCode).toBe(400);
    expect(json(await req(other.accessToken, 'GET', '/v1/topup/orders')).items).toEqual([]);

    const page1 = json(await req(owner.accessToken, 'GET', '/v1/topup/orders?limit=2'));
    expect(page1.items.map((o: { id: string }) => o.id)).toEqual([ids[2], ids[1]]);
    const page2 = json(await req(owner.accessToken, 'GET', `/v1/topup/orders?limit=2&cursor=${page1.nextCursor}`));
    expect(page2).toMatchObject({ items: [{ id: ids[0], selection: { credits: 100 }, amountCents: 4_500 }], nextCursor: null });
    expect((await req(owner.accessToken, 'GET', '/v1/topup/orders?x=1')).statusCode).toBe(400);
  });
});
