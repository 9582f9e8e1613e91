import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, json, signUpAs, type TestApp } from '../helpers/test-app.js';
import { PAYMENT_TEST_ENV, paymentFixtures } from '../helpers/payments.js';

let t: TestApp;
let f: ReturnType<typeof paymentFixtures>;
let starter: string;
let operator: Awaited<ReturnType<typeof signUpAs>>;

beforeAll(async () => {
  t = await createTestApp({ env: PAYMENT_TEST_ENV });
  f = paymentFixtures(t);
  starter = await f.planId('starter');
  operator = await signUpAs(t, 'SUPER_ADMIN');
});
afterAll(async () => t?.close());

const asOperator = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
  t.app.inject({ method, url, headers: bearer(operator.accessToken), ...(payload === undefined ? {} : { payload: payload as object }) });

async function paidPayment() {
  const c = await f.customer();
  const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'card_global' });
  await f.pressSandbox(session.redirectUrl, 'pay');
  return { customer: c, paymentId: session.paymentId };
}

describe('admin payments', () => {
  it("lists every customer's payments newest first, filtered by customer, status and channel, and shows one", async () => {
    const first = await paidPayment();
    t.clock.advance(1000);
    const second = await paidPayment();
    const all = json(await asOperator('GET', '/v1/admin/payments?limit=100'));
    const ids = all.items.map((p: { id: string }) => p.id);
    expect(ids.indexOf(second.paymentId)).toBeLessThan(ids.indexOf(first.paymentId));
    const mine = json(await asOperator('GET', `/v1/admin/payments?userId=${first.customer.user.id}`));
    expect(mine.items).toEqual([
      expect.objectContaining({ id: first.paymentId, userId: first.customer.user.id, status: 'SUCCEEDED', provider: 'card_global' }),
    ]);
    expect(json(await asOperator('GET', `/v1/admin/payments?userId=${first.customer.user.id}&status=REFUNDED`)).items).toEqual([]);
    expect(json(await asOperator('GET', `/v1/admin/payments?userId=${first.customer.user.id}&channel=bkash`)).items).toEqual([]);
    const paged = json(await asOperator('GET', '/v1/admin/payments?limit=1'));
    expect(paged.items).toHaveLength(1);
    expect(json(await asOperator('GET', `/v1/admin/payments?limit=1&cursor=${paged.nextCursor}`)).items[0].id).not.toBe(paged.items[0].id);
    expect(json(await asOperator('GET', `/v1/admin/payments/${first.paymentId}`))).toMatchObject({ id: first.paymentId, userId: first.customer.user.id });
    const missing = await asOperator('GET', '/v1/admin/payments/01900000-0000-7000-8000-000000000000');
    expect([missing.statusCode, json(missing).error.code]).toEqual([404, 'NOT_FOUND']);
    expect((await asOperator('GET', '/v1/admin/payments?status=PAID')).statusCode).toBe(400);
  });

  it('refunds once with a reason, audited with before and after; a second refund changes nothing', async () => {
    const { customer, paymentId } = await paidPayment();
    const noReason = await asOperator('POST', `/v1/admin/payments/${paymentId}/refund`, {});
    expect([noReason.statusCode, json(noReason).error.code]).toEqual([400, 'BAD_REQUEST']);

    const refunded = await asOperator('POST', `/v1/admin/payments/${paymentId}/refund`, { reason: 'customer asked' });
    expect(refunded.statusCode).toBe(200);
    expect(json(refunded)).toMatchObject({ id: paymentId, status: 'REFUNDED' });
    const again = await asOperator('POST', `/v1/admin/payments/${paymentId}/refund`, { reason: 'customer asked twice' });
    expect(again.statusCode).toBe(400);
    expect(json(again).error.message).toContain('refunded');

    const adjustments = (await f.ledger({ userId: customer.user.id })).filter((r) => r.kind === 'ADJUSTMENT');
    expect(adjustments).toHaveLength(1);
    const audit = json(await asOperator('GET', `/v1/admin/audit?targetType=payment&targetId=${paymentId}`));
    expect(audit.items).toEqual([
      expect.objectContaining({
        action: 'payment.refund',
        actor: { userId: operator.user.id, role: 'SUPER_ADMIN' },
        before: expect.objectContaining({ status: 'SUCCEEDED' }),
        after: expect.objectContaining({ status: 'REFUNDED' }),
        reason: 'customer asked',
      }),
    ]);
  });

  it('two simultaneous refunds of one payment: one refunds, the other is refused, the books move once', async () => {
    const { customer, paymentId } = await paidPayment();
    const answers = await Promise.all([1, 2].map((n) => asOperator('POST', `/v1/admin/payments/${paymentId}/refund`, { reason: `operator ${n}` })));
    expect(answers.map((a) => a.statusCode).sort()).toEqual(expect.arrayContaining([200]));
    expect(answers.filter((a) => a.statusCode === 200)).toHaveLength(1);
    for (const refused of answers.filter((a) => a.statusCode !== 200)) expect([400, 409]).toContain(refused.statusCode);
    expect((await f.ledger({ userId: customer.user.id })).filter((r) => r.kind === 'ADJUSTMENT')).toHaveLength(1);
    expect(json(await asOperator('GET', `/v1/admin/audit?targetType=payment&targetId=${paymentId}`)).items).toHaveLength(1);
  });

  it('refuses to refund a payment that was never paid', async () => {
    const c = await f.customer();
    const session = await f.checkoutOk(c.accessToken, { planId: starter, provider: 'card_global' });
    const refused = await asOperator('POST', `/v1/admin/payments/${session.paymentId}/refund`, { reason: 'by mistake' });
    expect([refused.statusCode, json(refused).error.details]).toEqual([400, { status: 'PENDING' }]);
  });
});
