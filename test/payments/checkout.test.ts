import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { payments } from '../../src/db/schema/payments.js';
import { subscriptionChanges } from '../../src/db/schema/subscriptions.js';
import { createTestApp, json, type TestApp } from '../helpers/test-app.js';
import { CANCEL_URL, PAYMENT_TEST_ENV, paymentFixtures, SUCCESS_URL } from '../helpers/payments.js';

let t: TestApp;
let f: ReturnType<typeof paymentFixtures>;
let starter: string;
let studio: string;

beforeAll(async () => {
  t = await createTestApp({ env: PAYMENT_TEST_ENV });
  f = paymentFixtures(t);
  starter = await f.planId('starter');
  studio = await f.planId('studio');
});
afterAll(async () => t?.close());

const error = (response: Parameters<typeof json>[0]) => json(response).error;

describe('GET /v1/payments/channels', () => {
  it('lists every channel in sandbox with its fields; carrier options carry needsPin', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/v1/payments/channels' });
    expect(response.statusCode).toBe(200);
    const channels = json<any[]>(response);
    expect(channels.map((c) => c.slug)).toEqual(['card_global', 'wallet_global', 'card_regional', 'wallet_regional_1', 'wallet_regional_2', 'dcb']);
    const dcb = channels.find((c) => c.slug === 'dcb');
    expect(dcb).toMatchObject({ autoRenews: true, supportsRecurring: true, recurringDefault: true });
    expect(dcb.requiredFields.map((x: any) => x.name)).toEqual(['paymentProvider', 'msisdn']);
    expect(dcb.requiredFields[0].options).toContainEqual({ value: 'GP', label: 'Grameenphone', needsPin: true });
    expect(dcb.requiredFields[0].options).toContainEqual({ value: 'BL', label: 'Banglalink', needsPin: false });
    expect(channels.find((c) => c.slug === 'wallet_global')).toMatchObject({
      autoRenews: false,
      supportsRecurring: true,
      recurringDefault: false,
      requiredFields: [],
    });
    expect(channels.find((c) => c.slug === 'card_regional')).not.toHaveProperty('supportsRecurring');
  });

  it('withholds a disabled channel, and plans list it out of payableWith', async () => {
    await f.setChannel('wallet_regional_2', { enabled: false });
    try {
      const channels = json<any[]>(await t.app.inject({ method: 'GET', url: '/v1/payments/channels' }));
      expect(channels.map((c) => c.slug)).not.toContain('wallet_regional_2');
      const plan = json(await t.app.inject({ method: 'GET', url: '/v1/plans/starter' }));
      expect(plan.payableWith).toContain('card_global');
      expect(plan.payableWith).not.toContain('wallet_regional_2');
    } finally {
      await f.setChannel('wallet_regional_2', { enabled: true });
    }
  });
});

describe('POST /v1/payments/checkout refusals (each changes nothing)', () => {
  async function expectNothingRecorded(userId: string) {
    expect(await t.platform.db.select().from(payments).where(eq(payments.userId, userId))).toEqual([]);
    expect(await t.platform.db.select().from(subscriptionChanges).where(eq(subscriptionChanges.userId, userId))).toEqual([]);
  }

  it('rule 1: a required extra field missing names the field', async () => {
    const c = await f.customer();
    const response = await f.checkout(c.accessToken, { planId: starter, provider: 'dcb', extra: { paymentProvider: 'BL' } });
    expect(response.statusCode).toBe(400);
    expect(error(response)).toMatchObject({ code: 'BAD_REQUEST', details: { field: 'extra.msisdn' } });
    expect(error(response).message).toMatch(/^extra\.msisdn: /);
    await expectNothingRecorded(c.user.id);
  });

  it("rule 2: the phone number must be 10-15 local digits, and the carrier one of the channel's options", async () => {
    const c = await f.customer();
    for (const msisdn of ['+8801712345678', '017123', '01712 345678', '0171234567890123']) {
      const response = await f.checkout(c.accessToken, { planId: starter, provider: 'dcb', extra: { paymentProvider: 'BL', msisdn } });
      expect(response.statusCode).toBe(400);
      expect(error(response).details).toMatchObject({ field: 'extra.msisdn' });
    }
    const carrier = await f.checkout(c.accessToken, { planId: starter, provider: 'dcb', extra: { paymentProvider: 'TELETALK', msisdn: '01712345678' } });
    expect(carrier.statusCode).toBe(400);
    expect(error(carrier).message).toContain('"TELETALK" is not offered');
    expect(error(carrier).details.options).toEqual(['GP', 'BL', 'ROBI', 'ROBI_WAP', 'BKASH']);
    await expectNothingRecorded(c.user.id);
  });

  it("rule 5: a plan's allowedChannels refuses other channels with { requested, allowedChannels }", async () => {
    const c = await f.customer();
    await f.setPlan('starter', { allowedChannels: ['card_regional', 'dcb'] });
    try {
      const response = await f.checkout(c.accessToken, { planId: starter, provider: 'card_global' });
      expect(response.statusCode).toBe(400);
      expect(error(response)).toMatchObject({ code: 'BAD_REQUEST', details: { requested: 'card_global', allowedChannels: ['card_regional', 'dcb'] } });
      expect(error(response).message).toContain('card_regional, dcb');
      await expectNothingRecorded(c.user.id);
      const allowed = await f.checkout(c.accessToken, { planId: starter, provider: 'card_regional' });
      expect(allowed.statusCode).toBe(200);
    } finally {
      await f.setPlan('starter', { allowedChannels: [] });
    }
  });

  it('rule 7: an archived plan is 404; a disabled or unknown channel is 400 "<slug> is not available right now"', async () => {
    const c = await f.customer();
    await f.setPlan('studio', { status: 'ARCHIVED' });
    try {
      const archived = await f.checkout(c.accessToken, { planId: studio, provider: 'card_global' });
      expect(archived.statusCode).toBe(404);
      expect(error(archived).code).toBe('NOT_FOUND');
    } finally {
      await f.setPlan('studio', { status: 'ACTIVE' });
    }
    await f.setChannel('card_regional', { enabled: false });
    try {
      const disabled = await f.checkout(c.accessToken, { planId: starter, provider: 'card_regional' });
      expect(disabled.statusCode).toBe(400);
      expect(error(disabled).message).toMatch(/^card_regional is not available right now/);
    } finally {
      await f.setChannel('card_regional', { enabled: true });
    }
    const unknown = await f.checkout(c.accessToken, { planId: starter, provider: 'paygo' });
    expect(unknown.statusCode).toBe(400);
    expect(error(unknown).message).toMatch(/^paygo is not available right now/);
    await expectNothingRecorded(c.user.id);
  });

  it('rule 7: an amount the carrier has no registered plan for is 400, permanent (retryable: false)', async () => {
    const c = await f.customer();
    const response = await f.checkout(c.accessToken, { planId: studio, provider: 'dcb', extra: { paymentProvider: 'BL', msisdn: '01712345678' } });
    expect(response.statusCode).toBe(400);
    expect(error(response).message).toContain('cannot be charged to a mobile balance');
    expect(error(response).details).toMatchObject({ provider: 'dcb', amountCents: 499_900, retryable: false });
    await expectNothingRecorded(c.user.id);
  });

  it('rule 3: recurring on a channel that cannot renew is refused; a code on a channel that renews by itself is refused', async () => {
    const c = await f.customer();
    const recurring = await f.checkout(c.accessToken, { planId: starter, provider: 'card_regional', recurring: true });
    expect(recurring.statusCode).toBe(400);
    expect(error(recurring).message).toContain('card_regional cannot renew automatically');
    await t.services.subscriptionBilling.coupons.create({ code: 'TENOFF', discountType: 'PERCENT', percentOff: 10 });
    const coupon = await f.checkout(c.accessToken, {
      planId: starter,
      provider: 'dcb',
      couponCode: 'TENOFF',
      extra: { paymentProvider: 'BL', msisdn: '01712345678' },
    });
    expect(coupon.statusCode).toBe(400);
    expect(error(coupon)).toMatchObject({ details: { reason: 'RECURRING' } });
    await expectNothingRecorded(c.user.id);
  });

  it('needs a provider and both return URLs (validation); a paid switch without provider states the amount', async () => {
    const c = await f.customer();
    const noProvider = await f.inject(c.accessToken, 'POST', '/v1/payments/checkout', { planId: starter, successUrl: SUCCESS_URL, cancelUrl: CANCEL_URL });
    expect(noProvider.statusCode).toBe(400);
    const noUrls = await f.inject(c.accessToken, 'POST', '/v1/payments/checkout', { planId: starter, provider: 'card_global' });
    expect(noUrls.statusCode).toBe(400);
    const badUrl = await f.checkout(c.accessToken, { planId: starter, provider: 'card_global', successUrl: 'javascript:alert(1)' });
    expect(badUrl.statusCode).toBe(400);
    // The return route redirects to these URLs, so they must be on our front end: no open redirect through us.
    const elsewhere = await f.checkout(c.accessToken, { planId: starter, provider: 'card_global', cancelUrl: 'https://evil.example.net/phish' });
    expect(elsewhere.statusCode).toBe(400);
    expect(error(elsewhere)).toMatchObject({ details: { field: 'cancelUrl', allowedOrigins: expect.arrayContaining(['https://app.example.test']) } });
    const sw = await f.switchTo(c.accessToken, { planId: starter });
    expect(sw.statusCode).toBe(400);
    expect(error(sw).message).toContain('costs 499.00 BDT');
    await expectNothingRecorded(c.user.id);
  });
});

describe('checkout and GET /v1/payments/:id', () => {
  it('opens a sandbox checkout; the payment is PENDING, own only (another user gets 404)', async () => {
    const c = await f.customer();
    const other = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'card_global' });
    expect(session.redirectUrl).toMatch(new RegExp(`/v1/payments/sandbox/${session.paymentId}\\?t=`));
    const mine = await f.getPayment(c.accessToken, session.paymentId);
    expect(mine.statusCode).toBe(200);
    expect(json(mine)).toMatchObject({
      id: session.paymentId,
      status: 'PENDING',
      kind: 'plan',
      topUpOrderId: null,
      tokensGranted: 0,
      amountCents: 49_900,
      currency: 'BDT',
      provider: 'card_global',
    });
    expect((await f.getPayment(other.accessToken, session.paymentId)).statusCode).toBe(404);
    expect((await f.getPayment(c.accessToken, 'not-a-uuid')).statusCode).toBe(404);
    const row = await f.payment(session.paymentId);
    expect(row).toMatchObject({ successUrl: SUCCESS_URL, cancelUrl: CANCEL_URL, mode: 'sandbox' });
  });

  it('the paid switch route opens a real checkout now that payments is connected', async () => {
    const c = await f.customer();
    const response = await f.switchTo(c.accessToken, { planId: starter, provider: 'card_regional' });
    expect(response.statusCode).toBe(200);
    expect(json(response).redirectUrl).toContain('/v1/payments/sandbox/');
  });
});
