import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { couponRedemptions, coupons } from '../../db/schema/coupons.js';
import { DAY_MS } from '../../platform/clock/clock.js';
import { createTestApp, json, type TestApp } from '../../../test/helpers/test-app.js';
import type { NewCoupon } from './coupons.js';
import { fakePayments, subscriptionFixtures, type FakePayments } from '../../../test/helpers/subscriptions.js';

let t: TestApp;
let pay: FakePayments;
let f: ReturnType<typeof subscriptionFixtures>;
let ids: Record<'free' | 'starter' | 'pro', string>;
let seq = 0;

beforeAll(async () => {
  t = await createTestApp();
  t.clock.set(new Date('2027-03-01T00:00:00Z'));
  pay = fakePayments(t);
  f = subscriptionFixtures(t);
  ids = { free: await f.planId('free'), starter: await f.planId('starter'), pro: await f.planId('pro') };
});
afterAll(async () => t?.close());
beforeEach(() => pay.connect());

/** A coupon fixture with a fresh code (operators will create them through the admin API). */
const coupon = (input: Partial<NewCoupon> = {}) =>
  t.services.subscriptionBilling.coupons.create({ code: `CODE-${++seq}`, discountType: 'PERCENT', percentOff: 20, ...input });
const preview = (token: string, code: string, planId: string) => f.inject(token, 'POST', '/v1/subscriptions/coupons/preview', { code, planId });
const checkoutsOf = (userId: string) => [...pay.checkouts.values()].filter((c) => c.userId === userId);
const countOf = async (id: string) => (await t.platform.db.select().from(coupons).where(eq(coupons.id, id)))[0]!.redeemedCount;

describe('POST /v1/subscriptions/coupons/preview', () => {
  it('prices the code on what the plan costs the caller now, without redeeming it', async () => {
    const { accessToken } = await f.customer();
    const c = await coupon({ percentOff: 20 });
    const response = await preview(accessToken, c.code.toLowerCase(), ids.pro);
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ couponId: c.id, code: c.code, originalCents: 149_900, discountCents: 29_980, finalCents: 119_920, currency: 'BDT' });
    expect(await countOf(c.id)).toBe(0);
    expect(await t.platform.db.$count(couponRedemptions, eq(couponRedemptions.couponId, c.id))).toBe(0);
  });

  it('the worked example with a 20 % code: the upgrade’s 116,097 becomes 92,878, charged at checkout', async () => {
    t.clock.set(new Date('2027-03-01T00:00:00Z'));
    const customer = await f.customer();
    const bought = json(await f.switchTo(customer.accessToken, { planId: ids.starter, provider: 'card_global' }));
    await pay.pay(bought.paymentId);
    t.clock.set(new Date('2027-03-11T00:00:00Z'));
    const token = await customer.token();
    const c = await coupon({ percentOff: 20 });
    expect(json(await preview(token, c.code, ids.pro))).toMatchObject({ originalCents: 116_097, discountCents: 23_219, finalCents: 92_878 });
    const answer = json(await f.switchTo(token, { planId: ids.pro, provider: 'card_global', couponCode: c.code }));
    expect(answer).toMatchObject({ amountDueCents: 92_878, discountCents: 23_219 });
    expect(pay.checkouts.get(answer.paymentId)!.amountCents).toBe(92_878);
    expect(await pay.pay(answer.paymentId)).toMatchObject({ status: 'fulfilled' });
    const [redemption] = await t.platform.db.select().from(couponRedemptions).where(eq(couponRedemptions.couponId, c.id));
    expect(redemption).toMatchObject({ userId: customer.user.id, status: 'REDEEMED', discountCents: 23_219 });
  });
});

describe('coupon refusals: 400 with a message a person can act on, nothing changed', () => {
  it('refuses every case of the spec, at preview and at switch', async () => {
    const { user, accessToken } = await f.customer();
    const now = t.clock.now();
    const used = await coupon();
    const other = await f.customer();
    // this customer already used `used`
    await t.platform.db.transaction((tx) =>
      t.services.subscriptionBilling.coupons.reserve(tx, { coupon: used, userId: user.id, changeId: crypto.randomUUID(), discountCents: 1 }),
    );
    const redeemed = await coupon({ maxRedemptions: 1 });
    await t.platform.db.transaction((tx) =>
      t.services.subscriptionBilling.coupons.reserve(tx, { coupon: redeemed, userId: other.user.id, changeId: crypto.randomUUID(), discountCents: 1 }),
    );
    const cases: Array<[string, string, RegExp]> = [
      [(await coupon({ endsAt: new Date(now.getTime() - DAY_MS) })).code, 'EXPIRED', /^The code CODE-\d+ expired on \d{4}-\d{2}-\d{2}\.$/],
      [(await coupon({ startsAt: new Date(now.getTime() + DAY_MS) })).code, 'NOT_STARTED', /^The code CODE-\d+ can be used from \d{4}-\d{2}-\d{2}\.$/],
      [redeemed.code, 'FULLY_REDEEMED', /^The code CODE-\d+ has been fully redeemed\.$/],
      [used.code, 'ALREADY_USED', /^You have already used the code CODE-\d+\.$/],
      [
        (await coupon({ minOrderCents: 200_000 })).code,
        'BELOW_MINIMUM',
        /^The code CODE-\d+ needs an order of at least 2,000\.00 BDT; this one is 1,499\.00 BDT\.$/,
      ],
      [(await coupon({ appliesTo: 'TOPUP' })).code, 'OTHER_PURCHASE_KIND', /^The code CODE-\d+ is for top-ups, not plans; top-ups take no code\.$/],
      [(await coupon({ planIds: [ids.starter] })).code, 'OTHER_PLAN', /^The code CODE-\d+ does not apply to the Pro plan\.$/],
      [
        (await coupon({ discountType: 'FIXED', amountOffCents: 500, currency: 'USD' })).code,
        'CURRENCY',
        /^The code CODE-\d+ is in USD and cannot be used on a BDT price\.$/,
      ],
      ['NO-SUCH-CODE', 'UNKNOWN', /^The code "NO-SUCH-CODE" does not exist\. Check the spelling\.$/],
    ];
    for (const [code, reason, message] of cases) {
      for (const response of [
        await preview(accessToken, code, ids.pro),
        await f.switchTo(accessToken, { planId: ids.pro, provider: 'card_global', couponCode: code }),
      ]) {
        expect(response.statusCode, reason).toBe(400);
        expect(json(response).error, reason).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringMatching(message), details: { reason } });
      }
    }
    expect(checkoutsOf(user.id)).toEqual([]);
    expect((await f.list(accessToken)).map((s) => s.status)).toEqual(['ACTIVE']);
  });

  it('refuses a code on a recurring mandate, asked for or imposed by the channel, and when nothing is to be paid', async () => {
    const { user, accessToken } = await f.customer();
    const c = await coupon();
    const asked = await f.switchTo(accessToken, { planId: ids.pro, provider: 'wallet_global', recurring: 'true', couponCode: c.code });
    expect(json(asked).error).toMatchObject({
      message: `Codes cannot be used with automatic renewal. Send recurring: false (or choose a channel that does not renew by itself) to use ${c.code}.`,
      details: { reason: 'RECURRING' },
    });
    const imposed = await f.switchTo(accessToken, { planId: ids.pro, provider: 'dcb', couponCode: c.code });
    expect(imposed.statusCode).toBe(400);
    expect(json(imposed).error).toMatchObject({
      message: `Codes cannot be used with automatic renewal, and dcb renews by itself. Remove the code or choose another provider.`,
      details: { reason: 'RECURRING' },
    });
    const bought = json(await f.switchTo(accessToken, { planId: ids.starter, provider: 'card_global' }));
    await pay.pay(bought.paymentId);
    const free = await f.switchTo(accessToken, { planId: ids.free, couponCode: c.code });
    expect(json(free).error).toMatchObject({
      message: 'There is nothing to pay for this change, so no code is needed.',
      details: { reason: 'NOTHING_TO_PAY' },
    });
    expect(await countOf(c.id)).toBe(0);
    expect(checkoutsOf(user.id).map((r) => r.amountCents)).toEqual([49_900]); // only the plan bought without a code
  });

  it('validates coupons created by operators', async () => {
    const { coupons: service } = t.services.subscriptionBilling;
    await expect(service.create({ code: 'x', discountType: 'PERCENT', percentOff: 10 })).rejects.toThrow(/3-40 letters/);
    await expect(service.create({ code: 'BIG', discountType: 'PERCENT', percentOff: 101 })).rejects.toThrow(/1 to 100/);
    await expect(service.create({ code: 'FIX', discountType: 'FIXED', amountOffCents: 100 })).rejects.toThrow(/its currency/);
    const made = await service.create({ code: ' spring-27 ', discountType: 'FIXED', amountOffCents: 10_000, currency: 'bdt', maxRedemptions: 5 });
    expect(made).toMatchObject({ code: 'SPRING-27', currency: 'BDT', maxRedemptions: 5, redeemedCount: 0 });
    await expect(service.create({ code: 'Spring-27', discountType: 'PERCENT', percentOff: 5 })).rejects.toThrow(/already exists/);
  });
});

describe('redemption limits', () => {
  it('one use left, two customers checking out at once: exactly one gets it (settled), the other a 400', async () => {
    const c = await coupon({ percentOff: 100, maxRedemptions: 1 });
    const buyers = await Promise.all([f.customer(), f.customer()]);
    const responses = await Promise.all(buyers.map((b) => f.switchTo(b.accessToken, { planId: ids.pro, couponCode: c.code })));
    expect(responses.map((r) => r.statusCode).sort()).toEqual([200, 400]);
    const won = json(responses.find((r) => r.statusCode === 200)!);
    expect(won).toMatchObject({ settled: true, switched: true });
    expect(json(responses.find((r) => r.statusCode === 400)!).error.details.reason).toBe('FULLY_REDEEMED');
    expect(await countOf(c.id)).toBe(1);
    const pros = await Promise.all(buyers.map(async (b) => (await f.me(b.accessToken))!.plan.slug));
    expect(pros.sort()).toEqual(['free', 'pro']);
  });

  it('the same with a partial discount through checkout: one redirect, one refusal', async () => {
    const c = await coupon({ percentOff: 10, maxRedemptions: 1 });
    const buyers = await Promise.all([f.customer(), f.customer()]);
    const responses = await Promise.all(buyers.map((b) => f.switchTo(b.accessToken, { planId: ids.pro, provider: 'card_global', couponCode: c.code })));
    expect(responses.map((r) => r.statusCode).sort()).toEqual([200, 400]);
    expect(json(responses.find((r) => r.statusCode === 200)!)).toMatchObject({ amountDueCents: 134_910, redirectUrl: expect.any(String) });
  });

  it('one customer using a code twice at once: one use only', async () => {
    const c = await coupon({ percentOff: 100 });
    const b = await f.customer();
    const responses = await Promise.all([0, 1].map(() => f.switchTo(b.accessToken, { planId: ids.pro, couponCode: c.code })));
    const codes = responses.map((r) => r.statusCode).sort();
    expect(codes[0]).toBe(200);
    expect(codes[1]).toBeGreaterThanOrEqual(400); // already used (400), or a conflict when the other switch changed the plan first (409)
    expect(await t.platform.db.$count(couponRedemptions, eq(couponRedemptions.couponId, c.id))).toBe(1);
  });

  it('an abandoned or replaced checkout gives its use back', async () => {
    const c = await coupon({ percentOff: 10, maxRedemptions: 1 });
    const customer = await f.customer();
    await f.switchTo(customer.accessToken, { planId: ids.pro, provider: 'card_global', couponCode: c.code });
    expect(await countOf(c.id)).toBe(1);
    await f.switchTo(customer.accessToken, { planId: ids.starter, provider: 'card_global' }); // replaces it
    expect(await countOf(c.id)).toBe(0);

    const again = json(await f.switchTo(customer.accessToken, { planId: ids.pro, provider: 'card_global', couponCode: c.code }));
    expect(await countOf(c.id)).toBe(1);
    t.clock.advance(DAY_MS + 1000);
    await t.services.subscriptionBilling.runDue();
    expect(await countOf(c.id)).toBe(0);
    expect(await pay.pay(again.paymentId)).toMatchObject({ status: 'unfulfillable' }); // its code was released: left for review
    const token = await customer.token();
    expect(json(await f.switchTo(token, { planId: ids.pro, provider: 'card_global', couponCode: c.code }))).toMatchObject({ discountCents: 14_990 });
  });
});
