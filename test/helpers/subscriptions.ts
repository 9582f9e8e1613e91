import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { domainEvents } from '../../src/db/schema/platform.js';
import { walletLedger, wallets } from '../../src/db/schema/wallet.js';
import { bearer, json, signUp, type TestApp } from './test-app.js';
import { ACCESS_TOKEN_TTL_SECONDS } from '../../src/platform/auth/access-tokens.js';
import type { ChannelPolicy, CheckoutRequest, FulfilmentResult, PaymentsPort } from '../../src/modules/subscriptions/payments-port.js';

/**
 * A stand-in for the payments module for tests of subscriptions alone, speaking the port exactly as payments does:
 * checkouts are recorded, and `pay` confirms one by calling the real fulfilment handler in a transaction, as a verified
 * gateway callback does. `connect` replaces the payments module's port for the test's app (test/payments drives the real one).
 */
export function fakePayments(t: TestApp) {
  const channels: Record<string, ChannelPolicy> = {
    card_global: { autoRenews: false, supportsRecurring: false },
    wallet_global: { autoRenews: false, supportsRecurring: true },
    dcb: { autoRenews: true, supportsRecurring: true },
  };
  const checkouts = new Map<string, CheckoutRequest>();
  const cancelled: string[] = [];
  let refuseNext = false;

  const port: PaymentsPort = {
    async channelPolicy(channel) {
      return channels[channel] ?? null;
    },
    async createCheckout(request) {
      if (refuseNext) {
        refuseNext = false;
        throw new Error('gateway refused the session');
      }
      const paymentId = randomUUID();
      checkouts.set(paymentId, request);
      return { paymentId, redirectUrl: `https://pay.example.test/checkout/${paymentId}` };
    },
    async cancelCheckout(paymentId) {
      cancelled.push(paymentId);
    },
  };

  /** Confirms a purchase as the payments module does: fulfilled in the confirming transaction, then its after-commit hook. */
  const confirm = async (payment: Parameters<typeof t.services.subscriptionBilling.fulfilSubscriptionPayment>[1]): Promise<FulfilmentResult> => {
    const result = await t.platform.db.transaction((tx) => t.services.subscriptionBilling.fulfilSubscriptionPayment(tx, payment));
    if (result.status !== 'fulfilled') return result;
    const { committed, ...answered } = result;
    committed?.();
    return answered;
  };

  return {
    port,
    checkouts,
    cancelled,
    refuseNextCheckout: () => void (refuseNext = true),
    connect: () => void t.services.subscriptionBilling.payments.connect(port),
    disconnect: () => t.services.subscriptionBilling.payments.disconnect(),
    /** The gateway confirms the checkout (optionally with another amount); returns what fulfilment answered. */
    async pay(paymentId: string, overrides: { amountCents?: number } = {}): Promise<FulfilmentResult> {
      const request = checkouts.get(paymentId);
      if (!request) throw new Error(`no checkout ${paymentId}`);
      return confirm({
        id: paymentId,
        userId: request.userId,
        amountCents: overrides.amountCents ?? request.amountCents,
        currency: request.currency,
        purpose: request.purpose,
      });
    },
    /** A charge the payments module would make for a `subscription.renewal_due` event, confirmed. */
    async payRenewal(event: { userId: string | null; data: Record<string, unknown> }, paymentId: string = randomUUID()): Promise<FulfilmentResult> {
      const data = event.data as { changeId: string; subscriptionId: string; planId: string; amountCents: number; currency: string };
      return confirm({
        id: paymentId,
        userId: event.userId!,
        amountCents: data.amountCents,
        currency: data.currency,
        purpose: { kind: 'subscription', changeId: data.changeId, subscriptionId: data.subscriptionId, planId: data.planId },
      });
    },
  };
}

export type FakePayments = ReturnType<typeof fakePayments>;

/** HTTP helpers for the subscription routes, and reads of what the tests check. */
export function subscriptionFixtures(t: TestApp) {
  const inject = async (token: string, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
    t.app.inject({ method, url, headers: bearer(token), ...(payload !== undefined ? { payload: payload as object } : {}) });
  return {
    inject,
    async planId(slug: string): Promise<string> {
      const plan = await t.services.plans.getBySlug(slug);
      if (!plan) throw new Error(`no plan ${slug}`);
      return plan.id;
    },
    /** A new customer; `token()` signs a fresh access token (tests move the clock past the 15-minute lifetime). */
    async customer() {
      const bundle = await signUp(t.app);
      const token = () => t.platform.tokens.sign({ sub: bundle.user.id, kind: 'access', role: 'USER' }, ACCESS_TOKEN_TTL_SECONDS);
      return { ...bundle, user: bundle.user as { id: string; email: string }, token };
    },
    async list(token: string) {
      const response = await inject(token, 'GET', '/v1/subscriptions');
      if (response.statusCode !== 200) throw new Error(`list: ${response.statusCode} ${response.body}`);
      return json<Array<Record<string, any>>>(response);
    },
    async me(token: string) {
      return json(await inject(token, 'GET', '/v1/users/me')).activeSubscription as Record<string, any> | null;
    },
    switchTo: (token: string, body: Record<string, unknown>) => inject(token, 'POST', '/v1/subscriptions/switch', body),
    quote: (token: string, planId: string) => inject(token, 'GET', `/v1/subscriptions/switch/quote?planId=${planId}`),
    /** Every ledger row of the user's own wallet, oldest first. */
    async ledger(owner: { userId?: string; workspaceId?: string }) {
      const [wallet] = await t.platform.db
        .select()
        .from(wallets)
        .where(eq(wallets.ownerId, (owner.workspaceId ?? owner.userId)!));
      if (!wallet) return [];
      return (await t.platform.db.select().from(walletLedger).where(eq(walletLedger.walletId, wallet.id))).sort(
        (a, b) => a.createdAt.getTime() - b.createdAt.getTime(),
      );
    },
    async grants(owner: { userId?: string; workspaceId?: string }) {
      return (await this.ledger(owner)).filter((r) => r.kind === 'GRANT');
    },
    async events(name: string, userId: string) {
      return (await t.platform.db.select().from(domainEvents).where(eq(domainEvents.name, name))).filter((e) => e.userId === userId);
    },
  };
}
