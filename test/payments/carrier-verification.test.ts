import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, json, type TestApp } from '../helpers/test-app.js';
import { deliverTo, liveEnv, startFakeGateway, type FakeGateway } from '../helpers/fake-gateways.js';
import { PAYMENT_TEST_ENV, paymentFixtures } from '../helpers/payments.js';

/**
 * Carrier billing live against a fake carrier aggregator on a local port. Its callback is an unsigned GET, so anyone
 * who learns an order's tracking id can send one: every outcome it reports must be borne out by the carrier's status
 * API before it changes anything.
 */
let t: TestApp;
let f: ReturnType<typeof paymentFixtures>;
let carrier: FakeGateway;
let starter: string;

beforeAll(async () => {
  carrier = await startFakeGateway('dcb', { app: () => t });
  t = await createTestApp({ env: { ...liveEnv([carrier]), ...PAYMENT_TEST_ENV } });
  f = paymentFixtures(t);
  starter = await f.planId('starter');
});
afterAll(async () => {
  await t?.close();
  await carrier?.close();
});

const MSISDN = '01712345678';
const forge = (ref: string, status: string) =>
  t.app.inject({ method: 'GET', url: `/v1/payments/webhook/dcb?order_tracking_id=${ref}&status=${status}&msisdn=${MSISDN}` });

async function open() {
  const c = await f.customer();
  const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'dcb', extra: { paymentProvider: 'BL', msisdn: MSISDN } });
  return { c, ...session, ref: (await f.payment(session.paymentId)).gatewayRef! };
}

const agreementsOf = async (token: string) => json(await f.inject(token, 'GET', '/v1/payments/agreements')).items as Array<Record<string, unknown>>;

describe('a forged carrier callback', () => {
  it('failing or cancelling a pending payment leaves it pending, records nothing, and still lets the customer pay', async () => {
    const { c, paymentId, ref } = await open();
    const statusQueries = () => carrier.seen.filter((line) => line.startsWith(`GET /charge/status?order_tracking_id=${ref}`)).length;
    for (const status of ['FAILED', 'CANCELLED']) {
      const forged = await forge(ref, status);
      expect(forged.statusCode).toBe(400);
      expect(json(forged).error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining(`does not say ${status}`) as string });
    }
    expect((await f.payment(paymentId)).status).toBe('PENDING');
    expect(await f.events(paymentId)).toEqual([]);
    expect(statusQueries()).toBe(2);

    const paid = await carrier.sim.press(paymentId, 'pay');
    expect((await deliverTo(t, 'dcb', paid!)).statusCode).toBe(200);
    expect(json(await f.getPayment(c.accessToken, paymentId))).toMatchObject({ status: 'SUCCEEDED', tokensGranted: 10_000_000 });
  });

  it('stopping renewals leaves the agreement active and the subscription renewing', async () => {
    const { c, paymentId, ref, subscriptionId } = await open();
    expect((await deliverTo(t, 'dcb', (await carrier.sim.press(paymentId, 'pay'))!)).statusCode).toBe(200);
    expect(await agreementsOf(c.accessToken)).toEqual([expect.objectContaining({ channel: 'dcb', status: 'ACTIVE', subscriptionId })]);

    const forged = await forge(ref, 'UNSUBSCRIBED');
    expect(forged.statusCode).toBe(400);
    expect(json(forged).error.message).toContain('does not say UNSUBSCRIBED');
    expect(await agreementsOf(c.accessToken)).toEqual([expect.objectContaining({ status: 'ACTIVE' })]);
    expect((await f.list(c.accessToken))[0]).toMatchObject({ id: subscriptionId, status: 'ACTIVE', autoRenew: true });
    expect((await f.events(paymentId)).map((e) => e.outcome)).toEqual(['succeeded']);
  });

  it('while the carrier does not answer the status query: 503 (the carrier sends it again later), nothing changes', async () => {
    const { paymentId, ref } = await open();
    carrier.failing = true;
    try {
      const response = await forge(ref, 'FAILED');
      expect(response.statusCode).toBe(503);
      expect(json(response).error.code).toBe('PROVIDER_UNAVAILABLE');
    } finally {
      carrier.failing = false;
    }
    expect((await f.payment(paymentId)).status).toBe('PENDING');
    expect(await f.events(paymentId)).toEqual([]);
  });
});

describe('a genuine carrier callback', () => {
  it('a failure the carrier confirms is applied: the payment fails and the customer is told', async () => {
    const { c, paymentId } = await open();
    const failed = await carrier.sim.press(paymentId, 'fail');
    const response = await deliverTo(t, 'dcb', failed!);
    expect(response.statusCode, response.body).toBe(200);
    expect(json(response)).toEqual({ received: true, applied: 'failed' });
    expect(json(await f.getPayment(c.accessToken, paymentId))).toMatchObject({ status: 'FAILED', tokensGranted: 0 });
    const notifications = json(await f.inject(c.accessToken, 'GET', '/v1/notifications')).items as Array<{ type: string }>;
    expect(notifications.map((n) => n.type)).toContain('PAYMENT_FAILED');
    // The carrier sends it again: a replay, nothing more happens.
    expect(json(await deliverTo(t, 'dcb', failed!))).toEqual({ received: true, applied: 'replayed' });
  });

  it('an unsubscription the carrier confirms is applied: the agreement and the renewals stop, nothing is taken back', async () => {
    const { c, paymentId, subscriptionId } = await open();
    expect((await deliverTo(t, 'dcb', (await carrier.sim.press(paymentId, 'pay'))!)).statusCode).toBe(200);
    const left = await carrier.sim.unsubscribe!(paymentId);
    const response = await deliverTo(t, 'dcb', left!);
    expect(response.statusCode, response.body).toBe(200);
    expect(await agreementsOf(c.accessToken)).toEqual([expect.objectContaining({ status: 'CANCELLED' })]);
    expect((await f.list(c.accessToken))[0]).toMatchObject({ id: subscriptionId, status: 'CANCELED', autoRenew: false });
    expect(json(await f.getPayment(c.accessToken, paymentId))).toMatchObject({ status: 'SUCCEEDED', tokensGranted: 10_000_000 });
  });
});
