import { and, eq } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import type { PaymentsConfig } from '../../config.js';
import { payments, type PaymentStatus } from '../../db/schema/payments.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db } from '../../platform/db/database.js';
import type { Wireable } from '../../platform/events/hooks.js';
import { notFound } from '../../platform/http/errors.js';
import type { AuditWriter } from '../audit/service.js';
import type { NotificationsService } from '../notifications/service.js';
import type { PlansService } from '../plans/service.js';
import type { SubscriptionBillingService } from '../subscriptions/index.js';
import type { WalletService } from '../wallet/service.js';
import { cancelAgreement, cancelRecurring, listAgreements } from './agreements.js';
import { handleCallback as handleVerifiedCallback } from './callbacks.js';
import { amountRules, carrierAmounts, setCarrierAmounts } from './channel-rules.js';
import { channelView, listChannelRows, seedChannels } from './channels.js';
import { createCheckoutFlow, type CheckoutInput } from './checkout.js';
import { createConfirmation } from './confirm.js';
import { pageTokens, type PaymentsContext } from './context.js';
import { buildChannels } from './gateways/index.js';
import { refundPayment } from './operator-refund.js';
import { adminGet, adminList, summaries, view } from './payment-view.js';
import { verifyPinOf } from './pin.js';
import { createReconciler } from './reconcile.js';
import { createSandboxPages, databaseSimStore, isUuid } from './sandbox.js';
import type { CallbackInput, FulfilmentHandler, PaymentRow, ReturnResult } from './types.js';
import { revenueByDay, type RevenueRange } from './revenue.js';
import type { Metrics } from '../../platform/metrics/metrics.js';

export type { FulfilmentHandler, ConfirmedPurchase, HandlerResult } from './types.js';
export type { NewPayment } from './checkout.js';

export { MAX_PIN_ATTEMPTS } from './pin.js';
export { view } from './payment-view.js';

export interface PaymentsServiceDeps {
  db: Db;
  clock: Clock;
  logger: FastifyBaseLogger;
  config: PaymentsConfig;
  publicBaseUrl: string;
  frontendUrl: string;
  /** The service's key: sandbox credentials and page links are derived from it. */
  serverSecret: string;
  wallet: Pick<WalletService, 'creditedForPayment' | 'reversePayment'>;
  notifications: Pick<NotificationsService, 'notify'>;
  plans: Pick<PlansService, 'getById'>;
  billing: Pick<SubscriptionBillingService, 'switchPlan' | 'quote' | 'cancel' | 'list'>;
  /** Where payment outcomes are counted (the service's registry). */
  metrics?: Metrics;
}

/**
 * Payments: channels, hosted checkout, gateway callbacks verified by each channel's own method, fulfilment exactly
 * once through handlers the purchase owners register, refunds, agreements, and reconciliation with the gateways.
 */
export function createPaymentsService(deps: PaymentsServiceDeps) {
  const { db, clock } = deps;
  const base = deps.publicBaseUrl.replace(/\/$/, '');
  const tokens = pageTokens(deps.serverSecret);
  const confirmation = createConfirmation({
    db,
    clock,
    wallet: deps.wallet,
    notifications: deps.notifications,
    metrics: deps.metrics,
    // The customer left the carrier's subscription: future cycles stop; nothing paid is taken back.
    onUnsubscribed: async (payment) => {
      const subscriptionId = payment.purpose.subscriptionId;
      if (typeof subscriptionId === 'string') await deps.billing.cancel(payment.userId, subscriptionId).catch(() => undefined);
    },
  });

  const channels = buildChannels({
    config: deps.config,
    serverSecret: deps.serverSecret,
    clock,
    simStore: databaseSimStore(db),
    pageUrl: (paymentId) => ctx.sandboxPageUrl(paymentId),
    deliver: (slug, input) => handleCallback(slug, input).then(() => undefined),
    needsPin: async (slug, operator) => ((await ctx.channelRow(slug))?.carriers ?? []).some((c) => c.value === operator && c.needsPin),
  });

  const ctx: PaymentsContext = {
    db,
    clock,
    logger: deps.logger,
    channels,
    async offeredChannels() {
      return (await listChannelRows(db)).filter((row) => row.enabled && channels.has(row.slug));
    },
    async channelRow(slug) {
      if (!channels.has(slug)) return null;
      return (await ctx.offeredChannels()).find((row) => row.slug === slug) ?? null;
    },
    callbackUrl: (slug) => `${base}/v1/payments/webhook/${slug}`,
    returnOrigins: [...new Set([new URL(deps.frontendUrl).origin, new URL(base).origin, ...deps.config.returnOrigins])],
    returnUrl: (paymentId, result) => `${base}/v1/payments/return/${paymentId}?result=${result}`,
    sandboxPageUrl: (paymentId) => `${base}/v1/payments/sandbox/${paymentId}?t=${tokens.sign(paymentId)}`,
    sandboxTokenValid: (paymentId, token) => tokens.valid(paymentId, token),
    deliverCallback: (slug, input) => handleCallback(slug, input).then(() => undefined),
  };

  const flow = createCheckoutFlow(ctx, { billing: deps.billing, plans: deps.plans });
  const reconciler = createReconciler(ctx, confirmation, { openPayment: flow.openPayment });
  const sandbox = createSandboxPages(ctx, {
    deliver: (slug, input) => ctx.deliverCallback(slug, input),
    verifyPin: async (payment, pin) => void (await verifyPinOf(ctx, payment, pin)),
  });

  /** `POST|GET /v1/payments/webhook/:provider`: verify by the channel's method, record, then apply. */
  function handleCallback(slug: string, input: CallbackInput) {
    return handleVerifiedCallback(ctx, confirmation, slug, input);
  }

  async function own(userId: string, paymentId: string): Promise<PaymentRow> {
    const [row] = isUuid(paymentId)
      ? await db
          .select()
          .from(payments)
          .where(and(eq(payments.id, paymentId), eq(payments.userId, userId)))
      : [];
    if (!row) throw notFound(`No payment of yours has the id "${paymentId}".`);
    return row;
  }

  return {
    /** Seeds the channels (first start; idempotent) and warns when production takes sandbox payments. */
    async start() {
      await seedChannels(db);
      if (!deps.config.sandboxInProduction) return;
      const sandboxChannels = [...channels].filter(([, runtime]) => runtime.simulator).map(([slug]) => slug);
      deps.logger.warn(
        { sandboxChannels },
        'PAYMENTS_SANDBOX=true in production: checkouts on channels without credentials are paid on a sandbox page, granting plans and tokens without any money moving. Unset PAYMENTS_SANDBOX unless this is a test deployment.',
      );
    },
    registerFulfilment: (kind: string, handler: FulfilmentHandler) => confirmation.registerFulfilment(kind, handler),
    fulfilmentHandler: (kind: string) => confirmation.fulfilmentHandler(kind),
    /** Whether purchases of `kind` have their fulfilment registered (the start check of src/services.ts). */
    fulfilment: (kind: string): Wireable => confirmation.fulfilment(kind),
    /** The port subscriptions opens checkouts through. */
    port: flow.port,
    /** For the top-ups module: records a payment for its order and opens the checkout. */
    openPayment: flow.openPayment,
    handleCallback,
    sandbox,
    /** A sandbox channel's simulated gateway (null for live channels): operators and tests can act as the gateway. */
    simulator: (slug: string) => channels.get(slug)?.simulator ?? null,

    async listChannels() {
      return (await ctx.offeredChannels()).map(channelView);
    },

    async liveChannelSlugs(): Promise<string[]> {
      return (await ctx.offeredChannels()).map((row) => row.slug);
    },

    /**
     * For the top-up builder: the channels that run now with the amounts each may take. Carrier billing takes only its
     * registered amounts (none registered: not offered for top-ups).
     */
    amountRules: () => amountRules(ctx),

    /** The amounts carrier billing may take (`GET /v1/admin/topup/payment-rules/dcb`). */
    carrierAmounts: (): Promise<{ amountsCents: number[] }> => carrierAmounts(ctx),

    /** `PUT /v1/admin/topup/payment-rules/dcb`: the amounts the carrier aggregator has registered, audited. */
    adminSetCarrierAmounts: (amountsCents: number[], audit: AuditWriter): Promise<{ amountsCents: number[] }> => setCarrierAmounts(ctx, amountsCents, audit),

    /** Status, provider and paid time of payments by id (the top-up admin's order list). */
    summaries: (paymentIds: string[]): Promise<Map<string, { id: string; status: string; provider: string; paidAt: string | null }>> =>
      summaries(db, paymentIds),

    checkout: (userId: string, input: CheckoutInput) => flow.checkout(userId, input),

    async get(userId: string, paymentId: string) {
      const payment = await own(userId, paymentId);
      // Read from the ledger: a change paid now and applied later (a downgrade) grants its tokens when it starts.
      return view({ ...payment, tokensGranted: payment.status === 'PENDING' ? 0 : await deps.wallet.creditedForPayment(payment.id) });
    },

    /** `POST /v1/payments/dcb/verify-pin`: the PIN goes to the carrier; activation still comes by its callback. */
    async verifyPin(userId: string, input: { paymentId: string; pinCode: string }) {
      const payment = await own(userId, input.paymentId);
      await verifyPinOf(ctx, payment, input.pinCode);
      const subscriptionId = payment.purpose.subscriptionId;
      const subscription = typeof subscriptionId === 'string' ? (await deps.billing.list(userId)).find((s) => s.id === subscriptionId) : undefined;
      return {
        ok: true as const,
        paymentId: payment.id,
        message: 'PIN accepted. The carrier confirms the charge; your plan starts when it does.',
        subscriptionStatus: subscription?.status ?? 'PENDING',
      };
    },

    /** Where the gateway sends the browser back: channel work (a capture), then the URL stored at checkout. */
    async returnTo(paymentId: string, asked: ReturnResult | undefined, params: Record<string, string> = {}): Promise<string> {
      const [payment] = isUuid(paymentId) ? await db.select().from(payments).where(eq(payments.id, paymentId)) : [];
      if (!payment) throw notFound('No such payment.');
      const adapter = channels.get(payment.channel)?.adapter;
      const carried = adapter?.callbackFromReturn?.(params) ?? null;
      const result = carried?.result ?? asked ?? 'success';
      const warn = (err: unknown) => deps.logger.warn({ err, paymentId }, 'return handling failed; reconciliation will re-query');
      if (carried) await handleCallback(payment.channel, carried.callback).catch(warn);
      await adapter?.onReturn?.(payment, result).catch(warn);
      const fallback = `${deps.frontendUrl.replace(/\/$/, '')}/billing/${result === 'success' ? 'success' : 'cancel'}?paymentId=${payment.id}`;
      return (result === 'success' ? payment.successUrl : payment.cancelUrl) ?? fallback;
    },

    listAgreements: (userId: string) => listAgreements(ctx, userId),

    /** Stops charging a saved account: renewals on it stop (the running cycle is untouched). */
    cancelAgreement: (userId: string, agreementId: string) => cancelAgreement(ctx, userId, agreementId),

    /** `DELETE /v1/payments/recurring/:id`: the subscription stops renewing; the paid cycle runs to its end. */
    cancelRecurring: (userId: string, subscriptionId: string) => cancelRecurring(ctx, deps.billing, userId, subscriptionId),

    /**
     * Refunds a paid payment (operators): the gateway gives the money back where its API can, and the books follow at
     * once (see operator-refund.ts).
     */
    refund: (paymentId: string, reason = 'refunded by an operator', audit?: AuditWriter) => refundPayment(ctx, confirmation, paymentId, reason, audit),

    /** Operators' listing of payments, newest first, filtered by status, channel and customer. */
    adminList: (query: {
      limit: number;
      cursor?: string | undefined;
      status?: PaymentStatus | undefined;
      channel?: string | undefined;
      userId?: string | undefined;
    }) => adminList(db, query),

    /** One payment as operators see it (any customer's), or 404. */
    adminGet: (paymentId: string) => adminGet(db, paymentId),

    /** Revenue analytics (admin): succeeded payments per day, channel, currency and kind (see revenue.ts). */
    revenueByDay: (range: RevenueRange) => revenueByDay(db, range),

    /** The reconciliation pass (the `payments.reconcile` cron job). */
    reconcile: (limit?: number) => reconciler.run(limit),
  };
}

export type PaymentsService = ReturnType<typeof createPaymentsService>;
