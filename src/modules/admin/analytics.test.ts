import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CANCEL_URL, PAYMENT_TEST_ENV, SUCCESS_URL, paymentFixtures } from '../../../test/helpers/payments.js';
import { bearer, createTestApp, json, signUp, signUpAs, type TestApp } from '../../../test/helpers/test-app.js';

let t: TestApp;
let admin: Awaited<ReturnType<typeof signUpAs>>;
let today: string;

beforeAll(async () => {
  t = await createTestApp({ env: PAYMENT_TEST_ENV });
  admin = await signUpAs(t, 'ADMIN');
  today = t.clock.now().toISOString().slice(0, 10);
});
afterAll(async () => t?.close());

const get = (url: string) => t.app.inject({ method: 'GET', url, headers: bearer(admin.accessToken) });

describe('revenue and usage analytics', () => {
  it("counts customers' succeeded payments and usage per day and leaves the playground identity out", async () => {
    const f = paymentFixtures(t);
    const starter = await f.planId('starter');
    // The playground's internal identity (made at start; it cannot sign in, so its payment is opened through the service).
    const playgroundId = await t.services.playground.identityId();
    const customer = await signUp(t.app);

    const failed = await f.checkoutOk(customer.accessToken, { planId: starter, provider: 'card_regional' });
    await f.pressSandbox(failed.redirectUrl, 'fail');
    const paid = await f.checkoutOk(customer.accessToken, { planId: starter, provider: 'card_global' });
    await f.pressSandbox(paid.redirectUrl, 'pay');
    const internal = await t.services.payments.checkout(playgroundId, {
      planId: starter,
      provider: 'card_global',
      successUrl: SUCCESS_URL,
      cancelUrl: CANCEL_URL,
    });
    await f.pressSandbox(internal.redirectUrl!, 'pay');

    const model = await t.services.catalog.getBySlug('local/text');
    const record = (userId: string, n: number, status: 'SUCCESS' | 'FAILED' = 'SUCCESS') =>
      t.services.usage.record({
        userId,
        modelId: model!.row.id,
        providerId: model!.row.providerId,
        requestId: `req-${userId}-${n}`,
        operation: 'text.generate',
        status,
        tokensConsumed: 100 * n,
        providerCostCents: n,
      });
    await record(customer.user.id, 1);
    await record(customer.user.id, 2, 'FAILED');
    await record(playgroundId, 50);

    const revenue = json(await get(`/v1/admin/analytics/revenue?from=${today}&to=${today}`));
    expect(revenue).toMatchObject({ from: today, to: today, excludedPlaygroundIdentity: true });
    expect(revenue.rows).toEqual([{ day: today, channel: 'card_global', currency: 'BDT', kind: 'SUBSCRIPTION', payments: 1, amountCents: 49_900 }]);
    expect(revenue.totals).toEqual([{ currency: 'BDT', kind: 'SUBSCRIPTION', payments: 1, amountCents: 49_900 }]);

    const usage = json(await get(`/v1/admin/analytics/usage?from=${today}&to=${today}`));
    expect(usage.rows).toEqual([{ day: today, provider: 'local', model: 'local/text', calls: 2, failedCalls: 1, tokens: 300, providerCostCents: 3 }]);
    expect(usage.totals).toEqual({ calls: 2, failedCalls: 1, tokens: 300, providerCostCents: 3 });

    // The default range is the last 30 days ending today; days outside the range count nothing.
    expect(json(await get('/v1/admin/analytics/usage')).totals.calls).toBe(2);
    const yesterday = new Date(Date.parse(`${today}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10);
    expect(json(await get(`/v1/admin/analytics/revenue?from=${yesterday}&to=${yesterday}`)).rows).toEqual([]);
  });

  it('refuses a reversed, too long or malformed range with 400', async () => {
    for (const query of ['from=2026-02-01&to=2026-01-01', 'from=2024-01-01&to=2026-01-01', 'from=yesterday', 'to=2026-13-40', 'days=7']) {
      for (const path of ['revenue', 'usage']) {
        const response = await get(`/v1/admin/analytics/${path}?${query}`);
        expect(response.statusCode, `${path}?${query}`).toBe(400);
        expect(json(response).error.code).toBe('BAD_REQUEST');
      }
    }
  });
});
