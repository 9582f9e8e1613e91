import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, json, type TestApp } from '../helpers/test-app.js';
import { waitForQueue } from '../helpers/jobs.js';
import { PAYMENT_TEST_ENV, paymentFixtures } from '../helpers/payments.js';

let t: TestApp;
let f: ReturnType<typeof paymentFixtures>;

beforeAll(async () => {
  t = await createTestApp({ env: PAYMENT_TEST_ENV, startJobs: true });
  f = paymentFixtures(t);
});
afterAll(async () => t?.close());

describe('the payments.reconcile queue (pg-boss)', () => {
  it('its job re-queries an open checkout whose callback was lost and grants the plan', async () => {
    const c = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: await f.planId('pro'), provider: 'card_regional' });
    await t.services.payments.simulator('card_regional')!.press(session.paymentId, 'pay'); // the IPN never arrives
    t.clock.advance(2 * 60_000);
    await t.platform.jobs.send('payments.reconcile', {});
    await waitForQueue(t.platform.db, 'payments.reconcile');
    expect(json(await f.getPayment(await c.token(), session.paymentId))).toMatchObject({ status: 'SUCCEEDED', tokensGranted: 35_000_000 });
    expect(await f.me(await c.token())).toMatchObject({ plan: { slug: 'pro' } });
  });
});
