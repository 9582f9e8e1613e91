import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { plans } from '../../db/schema/plans.js';
import { subscriptionChanges, subscriptions } from '../../db/schema/subscriptions.js';
import { DAY_MS } from '../../platform/clock/clock.js';
import { createTestApp, json, type TestApp } from '../../../test/helpers/test-app.js';
import { fakePayments, subscriptionFixtures, type FakePayments } from '../../../test/helpers/subscriptions.js';

let t: TestApp;
let pay: FakePayments;
let f: ReturnType<typeof subscriptionFixtures>;
let ids: Record<'free' | 'starter' | 'pro' | 'studio' | 'playground' | 'freePlus', string>;

beforeAll(async () => {
  t = await createTestApp();
  t.clock.set(new Date('2027-03-01T00:00:00Z'));
  pay = fakePayments(t);
  f = subscriptionFixtures(t);
  const [freePlus] = await t.platform.db
    .insert(plans)
    .values({ slug: 'free-plus', name: 'Free Plus', interval: 'MONTHLY', priceCents: 0, currency: 'BDT', tokenAllowance: 2_000_000, sortOrder: 5 })
    .returning();
  t.services.plans.invalidate();
  ids = {
    free: await f.planId('free'),
    starter: await f.planId('starter'),
    pro: await f.planId('pro'),
    studio: await f.planId('studio'),
    playground: await f.planId('internal-playground'),
    freePlus: freePlus!.id,
  };
});
afterAll(async () => t?.close());
beforeEach(() => pay.connect());

/** Buys a plan through the switch and the (stand-in) gateway; returns the paid checkout's figures. */
async function buy(token: string, planId: string, body: Record<string, unknown> = {}) {
  const response = await f.switchTo(token, { planId, provider: 'card_global', ...body });
  expect(response.statusCode, response.body).toBe(200);
  const answer = json(response);
  expect(await pay.pay(answer.paymentId)).toMatchObject({ status: 'fulfilled' });
  return answer;
}

describe('GET /v1/subscriptions', () => {
  it('lists the caller’s subscriptions newest first, with the one in effect carrying its usage', async () => {
    const { user, accessToken } = await f.customer();
    await f.customer(); // someone else's rows never show
    const initial = await f.list(accessToken);
    expect(initial).toHaveLength(1);
    expect(initial[0]).toMatchObject({ status: 'ACTIVE', planId: ids.free, plan: { slug: 'free', priceCents: 0 }, endsAt: null, pendingChange: null });
    t.clock.advance(1000);
    await buy(accessToken, ids.starter);
    const list = await f.list(accessToken);
    expect(list.map((s) => [s.plan.slug, s.status])).toEqual([
      ['starter', 'ACTIVE'],
      ['free', 'ACTIVE'],
    ]);
    const rows = await t.platform.db.select().from(subscriptions).where(eq(subscriptions.userId, user.id));
    expect(rows).toHaveLength(2);
    expect(list[0]!.usage).toEqual((await f.me(accessToken))!.usage);
  });
});

describe('GET /v1/subscriptions/switch/quote', () => {
  it('prices a purchase from the free plan: the full price, at once', async () => {
    const { accessToken } = await f.customer();
    const response = await f.quote(accessToken, ids.pro);
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({
      kind: 'upgrade',
      planPriceCents: 149_900,
      unusedCreditCents: 0,
      amountDueCents: 149_900,
      requiresPayment: true,
      effectiveAt: t.clock.now().toISOString(),
      currency: 'BDT',
      planId: ids.pro,
    });
  });

  it('answers 404 for a slug, an unknown id or an internal plan, and 400 for bad queries; the quote changes nothing', async () => {
    const { user, accessToken } = await f.customer();
    for (const planId of ['pro', '01900000-0000-7000-8000-000000000000', ids.playground]) {
      const response = await f.quote(accessToken, planId);
      expect(response.statusCode, planId).toBe(404);
      expect(json(response).error.message).toMatch(/GET \/v1\/plans/);
    }
    expect((await f.inject(accessToken, 'GET', '/v1/subscriptions/switch/quote')).statusCode).toBe(400);
    expect((await f.inject(accessToken, 'GET', `/v1/subscriptions/switch/quote?planId=${ids.pro}&x=1`)).statusCode).toBe(400);
    expect(await t.platform.db.$count(subscriptionChanges, eq(subscriptionChanges.userId, user.id))).toBe(0);
  });
});

describe('proration: the worked example of docs/subscription-billing.md', () => {
  it('Starter bought 1 March, upgraded to Pro on 11 March: 33,803 credited, 116,097 due, 35M tokens added to what is left', async () => {
    t.clock.set(new Date('2027-03-01T00:00:00Z'));
    const customer = await f.customer();
    const { user } = customer;
    let accessToken = customer.accessToken;
    await buy(accessToken, ids.starter);
    expect(await f.me(accessToken)).toMatchObject({ plan: { slug: 'starter' }, startsAt: '2027-03-01T00:00:00.000Z', endsAt: '2027-04-01T00:00:00.000Z' });
    // 4,000,000 of Starter's 10,000,000 tokens are spent before the upgrade
    await t.services.wallet.reserve({ userId: user.id, tokens: 4_000_000, requestId: `req-${user.id}` });
    await t.services.wallet.settle({ requestId: `req-${user.id}`, actualTokens: 4_000_000 });

    t.clock.set(new Date('2027-03-11T00:00:00Z'));
    accessToken = await customer.token();
    const quote = json(await f.quote(accessToken, ids.pro));
    expect(quote).toMatchObject({
      kind: 'upgrade',
      planPriceCents: 149_900,
      unusedCreditCents: 33_803,
      amountDueCents: 116_097,
      requiresPayment: true,
      effectiveAt: '2027-03-11T00:00:00.000Z',
    });

    const before = (await t.services.wallet.balance({ userId: user.id })).tokens;
    const answer = await buy(accessToken, ids.pro);
    expect(answer).toMatchObject({ kind: 'upgrade', amountDueCents: 116_097, scheduled: false, switched: false });
    expect(pay.checkouts.get(answer.paymentId)).toMatchObject({ amountCents: 116_097, currency: 'BDT', channel: 'card_global', recurring: false });
    expect(await f.me(accessToken)).toMatchObject({ plan: { slug: 'pro' }, startsAt: '2027-03-11T00:00:00.000Z', endsAt: '2027-04-11T00:00:00.000Z' });
    expect((await t.services.wallet.balance({ userId: user.id })).tokens - before).toBe(35_000_000);
    expect(before).toBe(1_000_000 + 10_000_000 - 4_000_000); // sign-up grant + Starter − spent: carried over
  });
});

describe('POST /v1/subscriptions/switch: the four response branches', () => {
  it('redirectUrl: payment needed; a PENDING subscription becomes ACTIVE when the gateway confirms', async () => {
    const { user, accessToken } = await f.customer();
    const response = await f.switchTo(accessToken, { planId: ids.pro, provider: 'card_global', successUrl: 'https://app.example/ok' });
    expect(response.statusCode).toBe(200);
    const answer = json(response);
    expect(answer).toMatchObject({
      kind: 'upgrade',
      planId: ids.pro,
      recurring: false,
      scheduled: false,
      switched: false,
      settled: false,
      effectiveAt: null,
      amountDueCents: 149_900,
    });
    expect(answer.redirectUrl).toBe(`https://pay.example.test/checkout/${answer.paymentId}`);
    expect(pay.checkouts.get(answer.paymentId)).toMatchObject({
      successUrl: 'https://app.example/ok',
      purpose: { kind: 'subscription', subscriptionId: answer.subscriptionId, planId: ids.pro },
    });

    const pending = (await f.list(accessToken))[0]!;
    expect(pending).toMatchObject({
      id: answer.subscriptionId,
      status: 'PENDING',
      pendingChange: { kind: 'upgrade', paid: false, paymentId: answer.paymentId },
    });
    expect((await f.me(accessToken))!.plan.slug).toBe('free'); // nothing changes before the gateway confirms

    expect(await pay.pay(answer.paymentId)).toEqual({ status: 'fulfilled', changeId: answer.changeId, subscriptionId: answer.subscriptionId, applied: true });
    expect(await f.me(accessToken)).toMatchObject({ id: answer.subscriptionId, status: 'ACTIVE', plan: { slug: 'pro' } });
    const grants = await f.grants({ userId: user.id });
    expect(grants.map((g) => [g.amount, g.paymentId])).toEqual([
      [1_000_000, null],
      [35_000_000, answer.paymentId],
    ]);

    // a repeated confirmation grants nothing more; another amount is never fulfilled
    expect(await pay.pay(answer.paymentId)).toMatchObject({ status: 'already_fulfilled' });
    expect(await f.grants({ userId: user.id })).toHaveLength(2);
  });

  it('switched: true: done at once, nothing to pay (free plan to another free plan)', async () => {
    const { accessToken } = await f.customer();
    const response = await f.switchTo(accessToken, { planId: ids.freePlus });
    expect(json(response)).toMatchObject({
      kind: 'downgrade',
      switched: true,
      scheduled: false,
      settled: false,
      paymentId: null,
      amountDueCents: 0,
      effectiveAt: t.clock.now().toISOString(),
    });
    expect(json(response).redirectUrl).toBeUndefined();
    expect((await f.me(accessToken))!.plan.slug).toBe('free-plus');
    expect((await f.list(accessToken)).map((s) => [s.plan.slug, s.status])).toEqual([
      ['free-plus', 'ACTIVE'],
      ['free', 'EXPIRED'],
    ]);
  });

  it('scheduled: true without redirectUrl: a paid plan switching to the free plan, from the end of the paid cycle', async () => {
    const { accessToken } = await f.customer();
    await buy(accessToken, ids.starter);
    const endsAt = (await f.me(accessToken))!.endsAt;
    const answer = json(await f.switchTo(accessToken, { planId: ids.free }));
    expect(answer).toMatchObject({
      kind: 'downgrade',
      scheduled: true,
      switched: false,
      settled: false,
      paymentId: null,
      amountDueCents: 0,
      effectiveAt: endsAt,
    });
    expect(answer.redirectUrl).toBeUndefined();
    expect(await f.me(accessToken)).toMatchObject({ plan: { slug: 'starter' }, nextPlanId: ids.free });
  });

  it('settled: true: a coupon covered the whole price; already fulfilled; redirectUrl is the success page', async () => {
    pay.disconnect(); // no payment provider is needed when nothing is left to pay
    const { user, accessToken } = await f.customer();
    await t.services.subscriptionBilling.coupons.create({ code: `FULL-${user.id.slice(0, 8)}`, discountType: 'PERCENT', percentOff: 100 });
    const answer = json(await f.switchTo(accessToken, { planId: ids.pro, couponCode: `full-${user.id.slice(0, 8)}` }));
    expect(answer).toMatchObject({ settled: true, switched: true, scheduled: false, paymentId: null, amountDueCents: 0, discountCents: 149_900 });
    expect(answer.redirectUrl).toBe(`${t.platform.config.frontendUrl}/billing/success?subscriptionId=${answer.subscriptionId}`);
    expect(await f.me(accessToken)).toMatchObject({ status: 'ACTIVE', plan: { slug: 'pro' } });
    expect((await f.grants({ userId: user.id })).map((g) => g.amount)).toEqual([1_000_000, 35_000_000]);
  });
});

describe('POST /v1/subscriptions/switch: refusals', () => {
  it('a switch to the current plan is 400', async () => {
    const { accessToken } = await f.customer();
    await buy(accessToken, ids.starter);
    const response = await f.switchTo(accessToken, { planId: ids.starter, provider: 'card_global' });
    expect(response.statusCode).toBe(400);
    expect(json(response).error.message).toBe('You are already on the Starter plan. Choose another plan to switch to.');
  });

  it('a paid switch without a provider is 400 stating the amount; without a payments module too', async () => {
    const { user, accessToken } = await f.customer();
    const noProvider = await f.switchTo(accessToken, { planId: ids.pro });
    expect(noProvider.statusCode).toBe(400);
    expect(json(noProvider).error).toMatchObject({
      code: 'BAD_REQUEST',
      message: 'This change costs 1,499.00 BDT. Choose a payment provider (provider) to pay it.',
      details: { amountDueCents: 149_900, currency: 'BDT' },
    });
    pay.disconnect();
    const noModule = await f.switchTo(accessToken, { planId: ids.pro, provider: 'card_global' });
    expect(noModule.statusCode).toBe(400);
    expect(json(noModule).error.message).toMatch(/costs 1,499\.00 BDT, and no payment provider is available/);
    expect(await t.platform.db.$count(subscriptionChanges, eq(subscriptionChanges.userId, user.id))).toBe(0);
    expect(await t.platform.db.$count(subscriptions, eq(subscriptions.userId, user.id))).toBe(1);
  });

  it('accepts recurring as 1, 0, true, false, "true", "false"; a channel decides whether it renews', async () => {
    const { accessToken } = await f.customer();
    const cases: Array<[unknown, string, boolean]> = [
      [1, 'wallet_global', true],
      ['true', 'wallet_global', true],
      [true, 'wallet_global', true],
      [0, 'wallet_global', false],
      ['false', 'wallet_global', false],
      [false, 'card_global', false],
      [undefined, 'dcb', true], // carrier billing always renews
    ];
    for (const [recurring, provider, expected] of cases) {
      const response = await f.switchTo(accessToken, { planId: ids.pro, provider, ...(recurring === undefined ? {} : { recurring }) });
      expect(response.statusCode, `${String(recurring)} ${provider}`).toBe(200);
      expect(json(response).recurring, `${String(recurring)} ${provider}`).toBe(expected);
    }
    for (const recurring of ['yes', 2, null])
      expect((await f.switchTo(accessToken, { planId: ids.pro, provider: 'wallet_global', recurring })).statusCode).toBe(400);
    const cannot = await f.switchTo(accessToken, { planId: ids.pro, provider: 'card_global', recurring: true });
    expect(json(cannot).error.message).toBe('card_global cannot renew automatically; send recurring: false or choose another provider.');
    expect(json(await f.switchTo(accessToken, { planId: ids.pro, provider: 'nope' })).error.message).toBe('nope is not available right now.');
  });

  it('a plan limited to some channels refuses the others, naming them', async () => {
    const { accessToken } = await f.customer();
    await t.platform.db
      .update(plans)
      .set({ allowedChannels: ['dcb'] })
      .where(eq(plans.id, ids.studio));
    t.services.plans.invalidate();
    try {
      const response = await f.switchTo(accessToken, { planId: ids.studio, provider: 'card_global' });
      expect(response.statusCode).toBe(400);
      expect(json(response).error).toMatchObject({
        message: 'The Studio plan can be paid with dcb only.',
        details: { requested: 'card_global', allowedChannels: ['dcb'] },
      });
    } finally {
      await t.platform.db.update(plans).set({ allowedChannels: [] }).where(eq(plans.id, ids.studio));
      t.services.plans.invalidate();
    }
  });

  it('a gateway refusing the session is 503 PROVIDER_UNAVAILABLE and leaves no change open', async () => {
    const { user, accessToken } = await f.customer();
    pay.refuseNextCheckout();
    const response = await f.switchTo(accessToken, { planId: ids.pro, provider: 'card_global' });
    expect(response.statusCode).toBe(503);
    expect(json(response).error).toMatchObject({ code: 'PROVIDER_UNAVAILABLE', message: expect.stringMatching(/^Provider card_global unavailable/) });
    const [change] = await t.platform.db.select().from(subscriptionChanges).where(eq(subscriptionChanges.userId, user.id));
    expect(change!.status).toBe('FAILED');
    expect((await f.list(accessToken)).map((s) => s.status)).toEqual(['EXPIRED', 'ACTIVE']);
  });

  it('a new switch replaces an unpaid pending one (its checkout voided); a paid pending change refuses a second', async () => {
    const { accessToken } = await f.customer();
    await buy(accessToken, ids.pro);
    const first = json(await f.switchTo(accessToken, { planId: ids.starter, provider: 'card_global' }));
    expect(first).toMatchObject({ kind: 'downgrade', scheduled: true, amountDueCents: 49_900 });
    const second = json(await f.switchTo(accessToken, { planId: ids.studio, provider: 'card_global' }));
    expect(second.kind).toBe('upgrade');
    expect(pay.cancelled).toContain(first.paymentId);
    expect(await pay.pay(first.paymentId)).toMatchObject({ status: 'unfulfillable', reason: 'The plan change was superseded before the payment arrived.' });

    const third = json(await f.switchTo(accessToken, { planId: ids.starter, provider: 'card_global' }));
    expect(await pay.pay(third.paymentId)).toMatchObject({ status: 'fulfilled', applied: false });
    expect(await f.me(accessToken)).toMatchObject({ plan: { slug: 'pro' }, nextPlanId: ids.starter });
    for (const planId of [ids.studio, ids.free]) {
      const refused = await f.switchTo(accessToken, { planId, provider: 'card_global' });
      expect(refused.statusCode).toBe(400);
      expect(json(refused).error.message).toMatch(/^A plan change you already paid for \(to Starter on .*\) is pending/);
    }
  });
});

describe('concurrency', () => {
  it('two switches of one customer at once leave one open change (the other replaced it, or got a 409)', async () => {
    const { user, accessToken } = await f.customer();
    const responses = await Promise.all([ids.pro, ids.studio].map((planId) => f.switchTo(accessToken, { planId, provider: 'card_global' })));
    for (const r of responses) expect([200, 409], r.body).toContain(r.statusCode);
    expect(responses.some((r) => r.statusCode === 200)).toBe(true);
    const open = (await t.platform.db.select().from(subscriptionChanges).where(eq(subscriptionChanges.userId, user.id))).filter(
      (c) => c.status === 'AWAITING_PAYMENT',
    );
    expect(open).toHaveLength(1);
    expect((await f.list(accessToken)).filter((s) => s.status === 'PENDING')).toHaveLength(1);
  });
});

describe('DELETE /v1/subscriptions/:id/scheduled-switch', () => {
  it('cancels an unpaid pending change; a paid one is 400; none is 404', async () => {
    const { accessToken } = await f.customer();
    await buy(accessToken, ids.pro);
    const subscriptionId = (await f.me(accessToken))!.id;
    const url = `/v1/subscriptions/${subscriptionId}/scheduled-switch`;
    expect((await f.inject(accessToken, 'DELETE', url)).statusCode).toBe(404);

    await f.switchTo(accessToken, { planId: ids.free });
    expect((await f.me(accessToken))!.nextPlanId).toBe(ids.free);
    const cancelled = await f.inject(accessToken, 'DELETE', url);
    expect(cancelled.statusCode).toBe(200);
    expect(json(cancelled)).toEqual({ ok: true, subscriptionId });
    expect(await f.me(accessToken)).toMatchObject({ plan: { slug: 'pro' }, nextPlanId: null });

    const paid = json(await f.switchTo(accessToken, { planId: ids.starter, provider: 'card_global' }));
    await pay.pay(paid.paymentId);
    const refused = await f.inject(accessToken, 'DELETE', url);
    expect(refused.statusCode).toBe(400);
    expect(json(refused).error.message).toBe('The change to Starter is already paid, so it cannot be cancelled here. Contact support to reverse it.');
    expect((await f.me(accessToken))!.nextPlanId).toBe(ids.starter);
  });
});

describe('POST /v1/subscriptions/:id/upgrade and /downgrade', () => {
  it('take a plan id and the subscription in effect; the wrong direction is 400', async () => {
    const { accessToken } = await f.customer();
    await buy(accessToken, ids.starter);
    const id = (await f.me(accessToken))!.id;
    const wrong = await f.inject(accessToken, 'POST', `/v1/subscriptions/${id}/downgrade`, { planId: ids.pro, provider: 'card_global' });
    expect(wrong.statusCode).toBe(400);
    expect(json(wrong).error.message).toBe(`The Pro plan costs more than your plan: that is an upgrade (POST /v1/subscriptions/${id}/upgrade).`);
    const bySlug = await f.inject(accessToken, 'POST', `/v1/subscriptions/${id}/upgrade`, { planId: 'pro', provider: 'card_global' });
    expect(bySlug.statusCode).toBe(404);

    const up = json(await f.inject(accessToken, 'POST', `/v1/subscriptions/${id}/upgrade`, { planId: ids.pro, provider: 'card_global' }));
    expect(up).toMatchObject({ kind: 'upgrade', subscriptionId: id });
    await pay.pay(up.paymentId);
    const down = json(await f.inject(accessToken, 'POST', `/v1/subscriptions/${id}/downgrade`, { planId: ids.starter, provider: 'card_global' }));
    expect(down).toMatchObject({ kind: 'downgrade', scheduled: true, subscriptionId: id, effectiveAt: (await f.me(accessToken))!.endsAt });

    const free = (await f.list(accessToken)).find((s) => s.plan.slug === 'free')!;
    const notInEffect = await f.inject(accessToken, 'POST', `/v1/subscriptions/${free.id}/upgrade`, { planId: ids.studio, provider: 'card_global' });
    expect(notInEffect.statusCode).toBe(400);
  });

  it('another user’s subscription id is 404 on every route and changes nothing', async () => {
    const owner = await f.customer();
    await buy(owner.accessToken, ids.pro);
    await f.switchTo(owner.accessToken, { planId: ids.free });
    const before = await f.list(owner.accessToken);
    const id = before[0]!.id;
    const intruder = await f.customer();
    for (const [method, url, body] of [
      ['POST', `/v1/subscriptions/${id}/cancel`, undefined],
      ['POST', `/v1/subscriptions/${id}/upgrade`, { planId: ids.studio, provider: 'card_global' }],
      ['POST', `/v1/subscriptions/${id}/downgrade`, { planId: ids.starter, provider: 'card_global' }],
      ['DELETE', `/v1/subscriptions/${id}/scheduled-switch`, undefined],
      ['POST', '/v1/subscriptions/not-a-uuid/cancel', undefined],
    ] as const) {
      const response = await f.inject(intruder.accessToken, method, url, body);
      expect(response.statusCode, url).toBe(404);
      expect(json(response).error.code).toBe('NOT_FOUND');
    }
    expect(await f.list(owner.accessToken)).toEqual(before);
  });
});

describe('fulfilment', () => {
  it('a payment of another amount is never fulfilled and changes nothing', async () => {
    const { user, accessToken } = await f.customer();
    const answer = json(await f.switchTo(accessToken, { planId: ids.starter, provider: 'card_global' }));
    expect(await pay.pay(answer.paymentId, { amountCents: 100 })).toEqual({ status: 'unfulfillable', reason: 'Paid 100 BDT, but the change costs 49900 BDT.' });
    expect((await f.me(accessToken))!.plan.slug).toBe('free');
    expect(await f.grants({ userId: user.id })).toHaveLength(1);
  });

  it('money for a checkout abandoned after a day still activates the plan when nothing moved since', async () => {
    const customer = await f.customer();
    const answer = json(await f.switchTo(customer.accessToken, { planId: ids.starter, provider: 'card_global' }));
    t.clock.advance(DAY_MS + 1000);
    const accessToken = await customer.token();
    expect((await t.services.subscriptionBilling.runDue()).abandoned).toBeGreaterThanOrEqual(1);
    expect((await f.list(accessToken))[0]!.status).toBe('EXPIRED');
    expect(await pay.pay(answer.paymentId)).toMatchObject({ status: 'fulfilled', applied: true });
    expect(await f.me(accessToken)).toMatchObject({ id: answer.subscriptionId, status: 'ACTIVE', plan: { slug: 'starter' } });
  });
});
