import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { notifications } from '../../src/db/schema/notifications.js';
import { plans } from '../../src/db/schema/plans.js';
import { createTestApp, json, type TestApp } from '../helpers/test-app.js';
import { CANCEL_URL, PAYMENT_TEST_ENV, paymentFixtures, SUCCESS_URL } from '../helpers/payments.js';

let t: TestApp;
let f: ReturnType<typeof paymentFixtures>;
let starter: string;

beforeAll(async () => {
  t = await createTestApp({ env: PAYMENT_TEST_ENV });
  f = paymentFixtures(t);
  starter = await f.planId('starter');
});
afterAll(async () => t?.close());

const EXTRA: Record<string, Record<string, string>> = { dcb: { paymentProvider: 'BL', msisdn: '01712345678' } };
const STARTER_TOKENS = 10_000_000;

async function notificationsOf(userId: string, type: 'PAYMENT_SUCCEEDED' | 'PAYMENT_FAILED') {
  return t.platform.db
    .select()
    .from(notifications)
    .where(and(eq(notifications.userId, userId), eq(notifications.type, type)));
}

describe('sandbox checkout over HTTP, every channel', () => {
  for (const provider of ['card_global', 'wallet_global', 'card_regional', 'wallet_regional_1', 'wallet_regional_2', 'dcb']) {
    it(`${provider}: Pay sends the signed callback, lands on the stored successUrl, grants the plan once`, async () => {
      const c = await f.customer();
      const session = await f.checkoutOk(c.accessToken, { planId: starter, provider, ...(EXTRA[provider] ? { extra: EXTRA[provider] } : {}) });
      const { page, landedOn } = await f.pressSandbox(session.redirectUrl, 'pay');
      expect(page.headers['content-type']).toContain('text/html');
      expect(page.body).toContain('Pay 499.00 BDT');
      expect(landedOn).toBe(SUCCESS_URL);
      const payment = json(await f.getPayment(c.accessToken, session.paymentId));
      expect(payment).toMatchObject({ status: 'SUCCEEDED', kind: 'plan', fulfilment: 'FULFILLED', tokensGranted: STARTER_TOKENS, amountCents: 49_900 });
      const [sub] = await f.list(c.accessToken);
      expect(sub).toMatchObject({ status: 'ACTIVE', plan: { slug: 'starter' } });
      expect((await f.grants({ userId: c.user.id })).filter((g) => g.paymentId === session.paymentId)).toHaveLength(1);
      const succeeded = (await f.outboxEvents('payment.succeeded', c.user.id)).map((e) => e.data);
      expect(succeeded).toEqual([
        expect.objectContaining({ paymentId: session.paymentId, kind: 'plan', amountCents: 49_900, currency: 'BDT', tokensGranted: STARTER_TOKENS }),
      ]);
      expect(await notificationsOf(c.user.id, 'PAYMENT_SUCCEEDED')).toHaveLength(1);
      // The page is done: pressing again changes nothing.
      const again = await t.app.inject({ method: 'GET', url: f.pathOf(session.redirectUrl) });
      expect(again.body).not.toContain('<form');
    });
  }

  it('Cancel lands on the cancelUrl and the payment is CANCELLED; Fail is FAILED with a PAYMENT_FAILED notification', async () => {
    const c = await f.customer();
    const first = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'card_global' });
    expect((await f.pressSandbox(first.redirectUrl, 'cancel')).landedOn).toBe(CANCEL_URL);
    expect(json(await f.getPayment(c.accessToken, first.paymentId))).toMatchObject({ status: 'CANCELLED', tokensGranted: 0 });
    const second = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'card_regional' });
    expect((await f.pressSandbox(second.redirectUrl, 'fail')).landedOn).toBe(CANCEL_URL);
    expect(json(await f.getPayment(c.accessToken, second.paymentId))).toMatchObject({ status: 'FAILED' });
    expect(await notificationsOf(c.user.id, 'PAYMENT_FAILED')).toHaveLength(1);
    expect(await f.me(c.accessToken)).toMatchObject({ plan: { slug: 'free' } });
  });

  it('a sandbox page link without its token is 404', async () => {
    const c = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'card_global' });
    const url = new URL(session.redirectUrl);
    expect((await t.app.inject({ method: 'GET', url: `${url.pathname}?t=forged` })).statusCode).toBe(404);
  });
});

describe('exactly once', () => {
  it('a valid callback delivered 10 times concurrently grants once', async () => {
    const c = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'card_global' });
    const callback = (await t.services.payments.simulator('card_global')!.press(session.paymentId, 'pay'))!;
    const responses = await Promise.all(
      Array.from({ length: 10 }, () =>
        t.app.inject({
          method: 'POST',
          url: '/v1/payments/webhook/card_global',
          headers: callback.headers as Record<string, string>,
          payload: callback.rawBody,
        }),
      ),
    );
    expect(responses.map((r) => r.statusCode)).toEqual(Array(10).fill(200));
    expect(responses.map((r) => json(r).applied).filter((a) => a === 'succeeded')).toHaveLength(1);
    expect((await f.grants({ userId: c.user.id })).filter((g) => g.paymentId === session.paymentId)).toHaveLength(1);
    expect(await f.events(session.paymentId)).toHaveLength(1);
    expect(await f.outboxEvents('payment.succeeded', c.user.id)).toHaveLength(1);
  });

  it('replayed and reordered callbacks: a cancel or failure after success changes nothing; a replay is a no-op', async () => {
    const c = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'wallet_regional_2' });
    const sim = t.services.payments.simulator('wallet_regional_2')!;
    const paid = (await sim.press(session.paymentId, 'pay'))!;
    await t.services.payments.handleCallback('wallet_regional_2', paid);
    // The gateway's earlier "Aborted" message, signed and arriving late:
    const state = (await f.payment(session.paymentId)).sandbox!;
    await f.rewriteSandbox(session.paymentId, { ...state, status: 'open' });
    const aborted = (await sim.press(session.paymentId, 'cancel'))!;
    expect(await t.services.payments.handleCallback('wallet_regional_2', aborted)).toMatchObject({ applied: 'unchanged' });
    expect(await t.services.payments.handleCallback('wallet_regional_2', paid)).toMatchObject({ applied: 'replayed' });
    expect(json(await f.getPayment(c.accessToken, session.paymentId))).toMatchObject({ status: 'SUCCEEDED', tokensGranted: STARTER_TOKENS });
    expect((await f.grants({ userId: c.user.id })).filter((g) => g.paymentId === session.paymentId)).toHaveLength(1);
  });

  it('a callback for another amount leaves the payment unfulfilled and flagged for review (visible), never dropped', async () => {
    const c = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'card_regional' });
    // The gateway validated a different amount than we charged (its own record decides the amount).
    const sim = t.services.payments.simulator('card_regional')!;
    const ipn = (await sim.press(session.paymentId, 'pay'))!;
    const state = (await f.payment(session.paymentId)).sandbox!;
    await f.rewriteSandbox(session.paymentId, { ...state, amount: '400.00' });
    const forged = { ...ipn, rawBody: ipn.rawBody.replace('amount=499.00', 'amount=400.00') };
    expect(await t.services.payments.handleCallback('card_regional', forged)).toMatchObject({ applied: 'review' });
    const payment = json(await f.getPayment(c.accessToken, session.paymentId));
    expect(payment).toMatchObject({ status: 'PENDING', fulfilment: 'REVIEW', tokensGranted: 0 });
    expect(payment.reviewReason).toContain('400.00 BDT');
    expect(await f.grants({ userId: c.user.id })).toHaveLength(1); // the sign-up grant only
    expect(await f.me(c.accessToken)).toMatchObject({ plan: { slug: 'free' } });
  });

  it('a verified callback whose fulfilment throws is recorded, answered 500, and fulfilled by reconciliation', async () => {
    const c = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'card_global' });
    const real = t.services.payments.fulfilmentHandler('subscription')!;
    const restore = t.services.payments.registerFulfilment('subscription', async () => {
      throw new Error('the database hiccuped');
    });
    let response;
    try {
      const callback = (await t.services.payments.simulator('card_global')!.press(session.paymentId, 'pay'))!;
      response = await t.app.inject({
        method: 'POST',
        url: '/v1/payments/webhook/card_global',
        headers: callback.headers as Record<string, string>,
        payload: callback.rawBody,
      });
    } finally {
      restore();
    }
    expect(t.services.payments.fulfilmentHandler('subscription')).toBe(real);
    expect(response.statusCode).toBe(500);
    const [event] = await f.events(session.paymentId);
    expect(event).toMatchObject({ outcome: 'succeeded', processedAt: null, lastError: 'the database hiccuped' });
    expect(json(await f.getPayment(c.accessToken, session.paymentId))).toMatchObject({ status: 'PENDING', tokensGranted: 0 });
    expect(await f.reconcile()).toMatchObject({ applied: 1 });
    expect(json(await f.getPayment(c.accessToken, session.paymentId))).toMatchObject({
      status: 'SUCCEEDED',
      fulfilment: 'FULFILLED',
      tokensGranted: STARTER_TOKENS,
    });
    expect(await f.list(c.accessToken)).toContainEqual(expect.objectContaining({ status: 'ACTIVE', plan: expect.objectContaining({ slug: 'starter' }) }));
  });

  it('a lost callback is recovered by reconciliation re-querying the gateway', async () => {
    const c = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'wallet_regional_1' });
    await t.services.payments.simulator('wallet_regional_1')!.press(session.paymentId, 'pay'); // its callback never arrives
    expect(await f.reconcile()).toMatchObject({ requeried: 0 }); // the gateway gets a minute to call back
    t.clock.advance(2 * 60_000);
    await f.reconcile();
    expect(json(await f.getPayment(c.accessToken, session.paymentId))).toMatchObject({ status: 'SUCCEEDED', tokensGranted: STARTER_TOKENS });
    expect(await f.me(c.accessToken)).toMatchObject({ plan: { slug: 'starter' } });
  });

  it('an unpaid checkout expires after a day; money that arrives later still grants', async () => {
    const c = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'card_global' });
    t.clock.advance(25 * 60 * 60_000);
    await f.reconcile();
    await t.services.subscriptionBilling.runDue();
    expect(json(await f.getPayment(await c.token(), session.paymentId))).toMatchObject({ status: 'EXPIRED' });
    const callback = (await t.services.payments.simulator('card_global')!.press(session.paymentId, 'pay'))!;
    await t.services.payments.handleCallback('card_global', callback);
    expect(json(await f.getPayment(await c.token(), session.paymentId))).toMatchObject({
      status: 'SUCCEEDED',
      fulfilment: 'FULFILLED',
      tokensGranted: STARTER_TOKENS,
    });
    expect(await f.me(await c.token())).toMatchObject({ plan: { slug: 'starter' } });
  });
});

describe('64-bit amounts', () => {
  it('a plan payment above 2^31 minor units goes through end to end', async () => {
    const price = 3_000_000_123; // 30,000,001.23 BDT, above 2^31 = 2,147,483,648
    const [plan] = await t.platform.db
      .insert(plans)
      .values({
        slug: 'enterprise-max',
        name: 'Enterprise max',
        interval: 'MONTHLY',
        priceCents: price,
        currency: 'BDT',
        tokenAllowance: 5_000_000_000,
        allModels: true,
        sortOrder: 90,
      })
      .returning();
    t.services.plans.invalidate();
    const c = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: plan!.id, provider: 'card_global' });
    expect((await f.pressSandbox(session.redirectUrl, 'pay')).page.body).toContain('Pay 30000001.23 BDT');
    expect(json(await f.getPayment(c.accessToken, session.paymentId))).toMatchObject({ status: 'SUCCEEDED', amountCents: price, tokensGranted: 5_000_000_000 });
    expect((await f.payment(session.paymentId)).paidAmountCents).toBe(price);
    expect(await f.me(c.accessToken)).toMatchObject({ plan: { slug: 'enterprise-max' } });
  });
});

describe('refunds', () => {
  it('takes the tokens back as far as the balance allows and records the rest; the plan is untouched', async () => {
    const c = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'card_global' });
    await f.pressSandbox(session.redirectUrl, 'pay');
    // Spend 10,500,000 of the 11,000,000 tokens (1M sign-up + 10M plan).
    await t.services.wallet.debit({ userId: c.user.id, amount: 10_500_000, idempotencyKey: `spend-${c.user.id}`, kind: 'USAGE', note: 'generations' });
    const refunded = await t.services.payments.refund(session.paymentId, 'customer asked');
    expect(refunded).toMatchObject({ status: 'REFUNDED', tokensTakenBack: 500_000, tokensUnrecovered: 9_500_000 });
    const adjustment = (await f.ledger({ userId: c.user.id })).filter((r) => r.kind === 'ADJUSTMENT');
    expect(adjustment).toEqual([expect.objectContaining({ amount: -500_000, paymentId: session.paymentId })]);
    expect(adjustment[0]!.note).toContain('9500000 tokens were already spent');
    expect(json(await t.app.inject({ method: 'GET', url: '/v1/credits/balance', headers: f.bearer(c.accessToken) })).tokens).toBe(0);
    expect(await f.me(c.accessToken)).toMatchObject({ plan: { slug: 'starter' } });
    expect((await f.outboxEvents('payment.refunded', c.user.id)).map((e) => e.data)).toEqual([
      expect.objectContaining({ paymentId: session.paymentId, tokensTakenBack: 500_000, tokensUnrecovered: 9_500_000 }),
    ]);
    // The gateway's refund callback came through the webhook; a second refund is refused, and nothing moves twice.
    expect(await f.events(session.paymentId)).toContainEqual(expect.objectContaining({ outcome: 'refunded' }));
    await expect(t.services.payments.refund(session.paymentId)).rejects.toMatchObject({ statusCode: 400 });
    expect((await f.ledger({ userId: c.user.id })).filter((r) => r.kind === 'ADJUSTMENT')).toHaveLength(1);
  });
});
