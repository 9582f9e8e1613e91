import { eq } from 'drizzle-orm';
import { paymentChannels, paymentEvents, payments } from '../../src/db/schema/payments.js';
import { plans } from '../../src/db/schema/plans.js';
import { bearer, json, type TestApp } from './test-app.js';
import { subscriptionFixtures } from './subscriptions.js';

export const SUCCESS_URL = 'https://app.example.test/billing/success';
export const CANCEL_URL = 'https://app.example.test/billing/cancel';
/** The test front ends checkout may return to (besides FRONTEND_URL and PUBLIC_BASE_URL). */
export const PAYMENT_TEST_ENV = { PAYMENTS_RETURN_ORIGINS: 'https://app.example.test,https://shop.example.test' };

/** HTTP helpers for the payment routes, the sandbox page driven like a browser, and reads of what tests check. */
export function paymentFixtures(t: TestApp) {
  const subs = subscriptionFixtures(t);
  const inject = subs.inject;

  /** Follows one redirect Location (absolute or relative) inside the app. */
  const pathOf = (location: string) => {
    const url = new URL(location, 'http://localhost');
    return `${url.pathname}${url.search}`;
  };

  return {
    ...subs,
    pathOf,
    checkout: (token: string, body: Record<string, unknown>) =>
      inject(token, 'POST', '/v1/payments/checkout', { successUrl: SUCCESS_URL, cancelUrl: CANCEL_URL, ...body }),
    async checkoutOk(token: string, body: Record<string, unknown>) {
      const response = await inject(token, 'POST', '/v1/payments/checkout', { successUrl: SUCCESS_URL, cancelUrl: CANCEL_URL, ...body });
      if (response.statusCode !== 200) throw new Error(`checkout: ${response.statusCode} ${response.body}`);
      return json<{ paymentId: string; redirectUrl: string; subscriptionId: string }>(response);
    },
    getPayment: async (token: string, id: string) => inject(token, 'GET', `/v1/payments/${id}`),
    async payment(id: string) {
      const [row] = await t.platform.db.select().from(payments).where(eq(payments.id, id));
      return row!;
    },
    /** Domain events (outbox) of a name for a user. */
    outboxEvents: (name: string, userId: string) => subs.events(name, userId),
    async rewriteSandbox(paymentId: string, state: Record<string, unknown>) {
      await t.platform.db.update(payments).set({ sandbox: state }).where(eq(payments.id, paymentId));
    },
    /** The verified gateway messages recorded for a payment. */
    async events(paymentId: string) {
      return t.platform.db.select().from(paymentEvents).where(eq(paymentEvents.paymentId, paymentId));
    },
    /** Opens the sandbox page, presses a button through its form, and follows the redirects to the stored URL. */
    async pressSandbox(redirectUrl: string, action: 'pay' | 'cancel' | 'fail', extra: Record<string, string> = {}) {
      const page = await t.app.inject({ method: 'GET', url: pathOf(redirectUrl) });
      if (page.statusCode !== 200) throw new Error(`sandbox page: ${page.statusCode} ${page.body}`);
      const formAction = /<form method="post" action="([^"]+)">/.exec(page.body)?.[1];
      const token = /name="t" value="([^"]+)"/.exec(page.body)?.[1];
      if (!formAction || !token) throw new Error(`no form on the sandbox page: ${page.body}`);
      const posted = await t.app.inject({
        method: 'POST',
        url: formAction,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ t: token, action, ...extra }).toString(),
      });
      if (posted.statusCode !== 303) throw new Error(`sandbox press: ${posted.statusCode} ${posted.body}`);
      const back = await t.app.inject({ method: 'GET', url: pathOf(posted.headers.location as string) });
      return { page, posted, back, landedOn: back.headers.location as string };
    },
    async setChannel(slug: string, changes: Partial<typeof paymentChannels.$inferInsert>) {
      await t.platform.db.update(paymentChannels).set(changes).where(eq(paymentChannels.slug, slug));
    },
    async setPlan(slug: string, changes: Partial<typeof plans.$inferInsert>) {
      await t.platform.db.update(plans).set(changes).where(eq(plans.slug, slug));
      t.services.plans.invalidate();
    },
    reconcile: () => t.services.payments.reconcile(),
    /** Retries an assertion until it holds (work a gateway does a moment later), for up to 5 seconds. */
    async eventually(check: () => Promise<void>, timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        try {
          return await check();
        } catch (err) {
          if (Date.now() > deadline) throw err;
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      }
    },
    bearer,
  };
}
