import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, json, type TestApp } from '../helpers/test-app.js';
import { deliverTo } from '../helpers/fake-gateways.js';
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

const MSISDN = '01712345678';
const pinOn = (html: string) => /this PIN: (\d{5})/.exec(html)?.[1];

async function pinCheckout(token: string) {
  const session = await f.checkoutOk(token, { planId: starter, provider: 'dcb', extra: { paymentProvider: 'GP', msisdn: MSISDN } });
  const page = await t.app.inject({ method: 'GET', url: f.pathOf(session.redirectUrl) });
  return { ...session, pin: pinOn(page.body)!, page };
}

describe('carrier billing PIN (POST /v1/payments/dcb/verify-pin)', () => {
  it('the sandbox page shows the 5-digit PIN; a wrong PIN is 400 retryable, the right one activates the plan', async () => {
    const c = await f.customer();
    const { paymentId, pin, page } = await pinCheckout(c.accessToken);
    expect(pin).toMatch(/^\d{5}$/);
    expect(page.body).toContain('valid 5 minutes');
    const wrongPin = pin === '12345' ? '54321' : '12345';
    const wrong = await f.inject(c.accessToken, 'POST', '/v1/payments/dcb/verify-pin', { paymentId, pinCode: wrongPin });
    expect(wrong.statusCode).toBe(400);
    expect(json(wrong).error).toMatchObject({ code: 'BAD_REQUEST', details: { retryable: true, reason: 'PIN_INVALID' } });
    expect(json(await f.getPayment(c.accessToken, paymentId)).status).toBe('PENDING');
    const malformed = await f.inject(c.accessToken, 'POST', '/v1/payments/dcb/verify-pin', { paymentId, pinCode: '12a45' });
    expect(malformed.statusCode).toBe(400);
    const right = await f.inject(c.accessToken, 'POST', '/v1/payments/dcb/verify-pin', { paymentId, pinCode: pin });
    expect(right.statusCode).toBe(200);
    expect(json(right)).toMatchObject({ ok: true, paymentId, subscriptionStatus: 'ACTIVE' });
    expect(json(await f.getPayment(c.accessToken, paymentId))).toMatchObject({ status: 'SUCCEEDED', tokensGranted: 10_000_000, recurring: true });
    const again = await f.inject(c.accessToken, 'POST', '/v1/payments/dcb/verify-pin', { paymentId, pinCode: pin });
    expect(again.statusCode).toBe(400);
    expect(json(again).error.details).toMatchObject({ retryable: false });
  });

  it("a PIN older than 5 minutes is 400 retryable (expired); another user's payment is 404", async () => {
    const c = await f.customer();
    const other = await f.customer();
    const { paymentId, pin } = await pinCheckout(c.accessToken);
    expect((await f.inject(other.accessToken, 'POST', '/v1/payments/dcb/verify-pin', { paymentId, pinCode: pin })).statusCode).toBe(404);
    t.clock.advance(5 * 60_000 + 1_000);
    const late = await f.inject(await c.token(), 'POST', '/v1/payments/dcb/verify-pin', { paymentId, pinCode: pin });
    expect(late.statusCode).toBe(400);
    expect(json(late).error.details).toMatchObject({ retryable: true, reason: 'PIN_EXPIRED' });
  });

  it('five wrong PINs void the PIN: the sixth try is refused even with the right one (not retryable)', async () => {
    const c = await f.customer();
    const { paymentId, pin } = await pinCheckout(c.accessToken);
    const wrongPin = pin === '12345' ? '54321' : '12345';
    for (let i = 0; i < 5; i++) {
      const wrong = await f.inject(c.accessToken, 'POST', '/v1/payments/dcb/verify-pin', { paymentId, pinCode: wrongPin });
      expect(json(wrong).error.details).toMatchObject({ retryable: true });
    }
    const blocked = await f.inject(c.accessToken, 'POST', '/v1/payments/dcb/verify-pin', { paymentId, pinCode: pin });
    expect(blocked.statusCode).toBe(400);
    expect(json(blocked).error.details).toMatchObject({ retryable: false, reason: 'PIN_ATTEMPTS_EXCEEDED' });
    expect(json(await f.getPayment(c.accessToken, paymentId)).status).toBe('PENDING');
  });

  it('a card payment has no PIN to verify', async () => {
    const c = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'card_global' });
    const response = await f.inject(c.accessToken, 'POST', '/v1/payments/dcb/verify-pin', { paymentId: session.paymentId, pinCode: '12345' });
    expect(response.statusCode).toBe(400);
  });
});

describe("the carrier's unsigned GET callback", () => {
  it("is believed only for an in-flight payment's order_tracking_id with the same phone number", async () => {
    const c = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'dcb', extra: { paymentProvider: 'BL', msisdn: MSISDN } });
    const ref = (await f.payment(session.paymentId)).gatewayRef!;
    const unknown = await t.app.inject({
      method: 'GET',
      url: `/v1/payments/webhook/dcb?order_tracking_id=ot_${'0'.repeat(32)}&status=SUCCESS&msisdn=${MSISDN}`,
    });
    expect(unknown.statusCode).toBe(400);
    // Claimed success the carrier has no record of:
    const claimed = await t.app.inject({
      method: 'GET',
      url: `/v1/payments/webhook/dcb?order_tracking_id=${ref}&status=SUCCESS&msisdn=${MSISDN}&amount=49900`,
    });
    expect(claimed.statusCode).toBe(400);
    const cancelledByStranger = await t.app.inject({
      method: 'GET',
      url: `/v1/payments/webhook/dcb?order_tracking_id=${ref}&status=CANCELLED&msisdn=01800000000`,
    });
    expect(cancelledByStranger.statusCode).toBe(400);
    expect((await f.payment(session.paymentId)).status).toBe('PENDING');
    const { landedOn } = await f.pressSandbox(session.redirectUrl, 'pay');
    expect(landedOn).toBe(SUCCESS_URL);
    expect((await f.payment(session.paymentId)).status).toBe('SUCCEEDED');
  });

  it("a forged failure or cancellation of a pending payment (right tracking id and phone number) changes nothing; the sandbox carrier's own Fail is applied", async () => {
    const c = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'dcb', extra: { paymentProvider: 'BL', msisdn: MSISDN } });
    const ref = (await f.payment(session.paymentId)).gatewayRef!;
    for (const status of ['FAILED', 'CANCELLED']) {
      const forged = await t.app.inject({ method: 'GET', url: `/v1/payments/webhook/dcb?order_tracking_id=${ref}&status=${status}&msisdn=${MSISDN}` });
      expect(forged.statusCode).toBe(400);
      expect(json(forged).error.message).toContain(`does not say ${status}`);
    }
    expect((await f.payment(session.paymentId)).status).toBe('PENDING');
    expect(await f.events(session.paymentId)).toEqual([]);
    const { landedOn } = await f.pressSandbox(session.redirectUrl, 'fail');
    expect(landedOn).toBe(CANCEL_URL);
    expect((await f.payment(session.paymentId)).status).toBe('FAILED');
  });

  it('an unsubscription stops future cycles and cancels the agreement, but takes nothing back (not a refund)', async () => {
    const c = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'dcb', extra: { paymentProvider: 'BL', msisdn: MSISDN } });
    await f.pressSandbox(session.redirectUrl, 'pay');
    const agreements = json(await f.inject(c.accessToken, 'GET', '/v1/payments/agreements'));
    expect(agreements.items).toEqual([
      expect.objectContaining({ channel: 'dcb', label: 'BL ••••5678', status: 'ACTIVE', subscriptionId: session.subscriptionId }),
    ]);
    const before = json(await t.app.inject({ method: 'GET', url: '/v1/credits/balance', headers: f.bearer(c.accessToken) })).tokens;
    const ref = (await f.payment(session.paymentId)).gatewayRef!;
    const forged = await t.app.inject({ method: 'GET', url: `/v1/payments/webhook/dcb?order_tracking_id=${ref}&status=UNSUBSCRIBED&msisdn=${MSISDN}` });
    expect(forged.statusCode).toBe(400);
    expect(json(await f.inject(c.accessToken, 'GET', '/v1/payments/agreements')).items[0].status).toBe('ACTIVE');
    // The customer leaves at the carrier (the sandbox carrier records it), and the carrier calls back.
    const left = await t.services.payments.simulator('dcb')!.unsubscribe!(session.paymentId);
    const response = await deliverTo(t, 'dcb', left!);
    expect(response.statusCode, response.body).toBe(200);
    expect(json(await f.inject(c.accessToken, 'GET', '/v1/payments/agreements')).items[0].status).toBe('CANCELLED');
    const [sub] = await f.list(c.accessToken);
    expect(sub).toMatchObject({ id: session.subscriptionId, status: 'CANCELED', autoRenew: false });
    expect(json(await t.app.inject({ method: 'GET', url: '/v1/credits/balance', headers: f.bearer(c.accessToken) })).tokens).toBe(before);
    expect(json(await f.getPayment(c.accessToken, session.paymentId)).status).toBe('SUCCEEDED');
  });
});

describe('agreements, recurring and renewal', () => {
  it('a carrier subscription renews itself: at the cycle end the renewal is charged on the saved agreement (no PIN), once', async () => {
    const c = await f.customer();
    const { paymentId, pin } = await pinCheckout(c.accessToken);
    expect((await f.inject(c.accessToken, 'POST', '/v1/payments/dcb/verify-pin', { paymentId, pinCode: pin })).statusCode).toBe(200);
    const [sub] = await f.list(c.accessToken);
    t.clock.set(new Date(new Date(sub!.endsAt as string).getTime() + 60_000));
    await t.services.subscriptionBilling.runDue();
    expect((await f.list(await c.token()))[0]).toMatchObject({ status: 'GRACE' });
    const first = await f.reconcile();
    expect(first.renewals).toBeGreaterThanOrEqual(1); // earlier customers' carrier plans renew too
    expect((await f.reconcile()).renewals).toBe(0);
    // The carrier charges the standing subscription and calls back a moment later.
    await f.eventually(async () => expect((await f.list(await c.token()))[0]).toMatchObject({ status: 'ACTIVE' }));
    const [renewed] = await f.list(await c.token());
    expect(renewed).toMatchObject({ id: sub!.id, status: 'ACTIVE' });
    expect(new Date(renewed!.endsAt as string).getTime()).toBeGreaterThan(new Date(sub!.endsAt as string).getTime());
    expect(await f.grants({ userId: c.user.id })).toHaveLength(3); // sign-up, first cycle, renewal
  });

  it('a wallet bought with recurring: true is saved at the gateway and the renewal charges it without the customer', async () => {
    const c = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'wallet_global', recurring: true });
    expect((await f.pressSandbox(session.redirectUrl, 'pay')).landedOn).toBe(SUCCESS_URL);
    const [agreement] = json(await f.inject(c.accessToken, 'GET', '/v1/payments/agreements')).items;
    expect(agreement).toMatchObject({ channel: 'wallet_global', status: 'ACTIVE' });
    const [sub] = await f.list(c.accessToken);
    expect(sub).toMatchObject({ status: 'ACTIVE', autoRenew: true });
    t.clock.set(new Date(new Date(sub!.endsAt as string).getTime() + 60_000));
    await t.services.subscriptionBilling.runDue();
    await f.reconcile();
    const [renewed] = await f.list(await c.token());
    expect(renewed).toMatchObject({ id: sub!.id, status: 'ACTIVE' });
    expect(await f.grants({ userId: c.user.id })).toHaveLength(3);
    expect(json(await f.inject(await c.token(), 'GET', '/v1/payments/agreements')).items).toHaveLength(1);
  });

  it('DELETE /v1/payments/agreements/:id stops charging it (own only); without an agreement the renewal is not charged', async () => {
    const c = await f.customer();
    const other = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'dcb', extra: { paymentProvider: 'BL', msisdn: MSISDN } });
    await f.pressSandbox(session.redirectUrl, 'pay');
    const [agreement] = json(await f.inject(c.accessToken, 'GET', '/v1/payments/agreements')).items;
    expect((await f.inject(other.accessToken, 'DELETE', `/v1/payments/agreements/${agreement.id}`)).statusCode).toBe(404);
    const deleted = await f.inject(c.accessToken, 'DELETE', `/v1/payments/agreements/${agreement.id}`);
    expect(deleted.statusCode).toBe(200);
    expect(json(deleted)).toMatchObject({ ok: true, id: agreement.id, status: 'CANCELLED' });
    const [sub] = await f.list(c.accessToken);
    t.clock.set(new Date(new Date(sub!.endsAt as string).getTime() + 60_000));
    await t.services.subscriptionBilling.runDue();
    await f.reconcile();
    expect((await f.list(await c.token()))[0]).toMatchObject({ status: 'GRACE' });
    expect(await f.grants({ userId: c.user.id })).toHaveLength(2);
  });

  it('DELETE /v1/payments/recurring/:id cancels the auto-renewing subscription: the paid cycle runs to its end', async () => {
    const c = await f.customer();
    const other = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'wallet_global', recurring: true });
    await f.pressSandbox(session.redirectUrl, 'pay');
    expect(json(await f.inject(c.accessToken, 'GET', '/v1/payments/agreements')).items).toHaveLength(1);
    expect((await f.inject(other.accessToken, 'DELETE', `/v1/payments/recurring/${session.subscriptionId}`)).statusCode).toBe(404);
    const response = await f.inject(c.accessToken, 'DELETE', `/v1/payments/recurring/${session.subscriptionId}`);
    expect(response.statusCode).toBe(200);
    expect(json(response)).toMatchObject({ ok: true, subscriptionId: session.subscriptionId, status: 'CANCELED' });
    expect(await f.me(c.accessToken)).toMatchObject({ plan: { slug: 'starter' } });
    expect(json(await f.inject(c.accessToken, 'GET', '/v1/payments/agreements')).items[0].status).toBe('CANCELLED');
    // The saved wallet is deleted at the gateway too: charging it now fails there.
    const state = (await f.payment(session.paymentId)).sandbox as Record<string, unknown>;
    expect(state).toMatchObject({ vaultRevoked: true });
  });
});
