import { and, desc, eq, inArray, isNull, lt, sql, type SQL } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import { PAYMENT_CHANNEL_SLUGS, type PaymentsConfig } from '../../config.js';
import { paymentAgreements, paymentChannels, payments, type PaymentStatus } from '../../db/schema/payments.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db } from '../../platform/db/database.js';
import { badRequest, conflict, notFound } from '../../platform/http/errors.js';
import { afterCursor, toPage } from '../../platform/http/pagination.js';
import type { AuditWriter } from '../audit/service.js';
import type { NotificationsService } from '../notifications/service.js';
import type { PlansService } from '../plans/service.js';
import type { SubscriptionBillingService } from '../subscriptions/index.js';
import type { WalletService } from '../wallet/service.js';
import { channelView, listChannelRows, seedChannels } from './channels.js';
import { createCheckoutFlow, type CheckoutInput } from './checkout.js';
import { createConfirmation, publicKind } from './confirm.js';
import { pageTokens, type PaymentsContext } from './context.js';
import { buildChannels } from './gateways/index.js';
import { GatewayError, invalidCallback, providerUnavailable } from './gateways/common.js';
import { createReconciler } from './reconcile.js';
import { createSandboxPages, databaseSimStore, isUuid } from './sandbox.js';
import type { CallbackInput, FulfilmentHandler, PaymentRow, ReturnResult } from './types.js';
import { revenueByDay, type RevenueRange } from './revenue.js';
import type { Metrics } from '../../platform/metrics/metrics.js';

export type { FulfilmentHandler, ConfirmedPurchase, HandlerResult } from './types.js';
export type { NewPayment } from './checkout.js';

export const MAX_PIN_ATTEMPTS = 5;

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
    slugs: PAYMENT_CHANNEL_SLUGS,
    config: deps.config,
    serverSecret: deps.serverSecret,
    clock,
    simStore: databaseSimStore(db),
    pageUrl: (paymentId) => ctx.sandboxPageUrl(paymentId),
    deliver: (slug, input) => handleCallback(slug, input).then(() => undefined),
    needsPin: async (operator) => ((await ctx.channelRow('dcb'))?.carriers ?? []).some((c) => c.value === operator && c.needsPin),
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
    verifyPin: async (payment, pin) => void (await verifyPinOf(payment, pin)),
  });

  async function findPayment(channel: string, by: { paymentId?: string | undefined; gatewayRef?: string | undefined }): Promise<PaymentRow | null> {
    if (by.paymentId && isUuid(by.paymentId)) {
      const [row] = await db.select().from(payments).where(and(eq(payments.id, by.paymentId), eq(payments.channel, channel)));
      if (row) return row;
    }
    if (by.gatewayRef) {
      const [row] = await db.select().from(payments).where(and(eq(payments.gatewayRef, by.gatewayRef), eq(payments.channel, channel)));
      if (row) return row;
    }
    return null;
  }

  /** `POST|GET /v1/payments/webhook/:provider`: verify by the channel's method, record, then apply. */
  async function handleCallback(slug: string, input: CallbackInput) {
    const runtime = channels.get(slug);
    if (!runtime) throw notFound(`No payment channel "${slug}" runs here.`);
    // A gateway that does not answer our verification call: 503, so it sends the message again later.
    const verified = await runtime.adapter.verifyCallback(input).catch((err: unknown) => {
      if (err instanceof GatewayError) throw providerUnavailable(slug);
      throw err;
    });
    if (verified.outcome === 'pending') return { received: true as const, applied: 'ignored' };
    const payment = await findPayment(slug, verified);
    if (!payment) {
      // Carrier billing is verified by this very match. The others proved the message genuine: it is about something
      // else on the same gateway account, acknowledged so the gateway stops sending it.
      if (slug === 'dcb') throw invalidCallback(slug, 'it names no checkout of ours');
      return { received: true as const, applied: 'ignored' };
    }
    for (const [field, value] of Object.entries(verified.matches ?? {})) {
      if (payment.extra[field] !== value) throw invalidCallback(slug, `its ${field} does not match the checkout`);
    }
    const result = await confirmation.confirm(slug, payment, verified, 'callback');
    return { received: true as const, applied: result.status as string };
  }

  /** Tells the gateway to forget a saved agreement; ours is cancelled already, so a failure is only logged. */
  async function revoke(row: typeof paymentAgreements.$inferSelect) {
    await channels
      .get(row.channel)
      ?.adapter.revokeAgreement?.(row.gatewayAgreementId)
      .catch((err: unknown) => deps.logger.warn({ err, agreementId: row.id }, 'the gateway did not revoke a saved agreement'));
  }

  async function own(userId: string, paymentId: string): Promise<PaymentRow> {
    const [row] = isUuid(paymentId) ? await db.select().from(payments).where(and(eq(payments.id, paymentId), eq(payments.userId, userId))) : [];
    if (!row) throw notFound(`No payment of yours has the id "${paymentId}".`);
    return row;
  }

  async function verifyPinOf(payment: PaymentRow, pin: string) {
    const runtime = channels.get(payment.channel);
    if (payment.channel !== 'dcb' || !runtime?.adapter.verifyPin) throw badRequest('This payment is not a carrier billing payment; no PIN is needed.', { paymentId: payment.id });
    if (payment.status !== 'PENDING') throw badRequest(`This payment is ${payment.status.toLowerCase()}; a PIN cannot change it.`, { paymentId: payment.id, status: payment.status, retryable: false });
    // Five tries per payment, counted before the carrier is asked, so guessing the 5 digits is not an option.
    const [counted] = await db
      .update(payments)
      .set({ pinAttempts: sql`${payments.pinAttempts} + 1` })
      .where(and(eq(payments.id, payment.id), lt(payments.pinAttempts, MAX_PIN_ATTEMPTS)))
      .returning({ id: payments.id });
    if (!counted) {
      throw badRequest('Too many wrong PINs for this payment. Start the payment again to get a new PIN.', { paymentId: payment.id, retryable: false, reason: 'PIN_ATTEMPTS_EXCEEDED' });
    }
    const answer = await runtime.adapter.verifyPin(payment, pin);
    if (answer !== 'ok') {
      throw badRequest(answer === 'expired' ? 'The PIN has expired. Start the payment again to get a new one.' : 'The PIN is not right. Check the text message and try again.', {
        paymentId: payment.id,
        retryable: true,
        reason: answer === 'expired' ? 'PIN_EXPIRED' : 'PIN_INVALID',
      });
    }
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
    async amountRules() {
      return (await ctx.offeredChannels()).map((row) => ({
        slug: row.slug,
        name: row.name,
        enabled: true,
        minAmountCents: row.minAmountCents,
        maxAmountCents: row.maxAmountCents,
        amountsCents: [...row.amountsCents],
        registeredAmountsOnly: row.slug === 'dcb',
      }));
    },

    /** The amounts carrier billing may take (`GET /v1/admin/topup/payment-rules/dcb`). */
    async carrierAmounts(): Promise<{ amountsCents: number[] }> {
      const [row] = await db.select({ amountsCents: paymentChannels.amountsCents }).from(paymentChannels).where(eq(paymentChannels.slug, 'dcb'));
      if (!row) throw notFound('The carrier billing channel is not set up.');
      return { amountsCents: [...row.amountsCents] };
    },

    /**
     * `PUT /v1/admin/topup/payment-rules/dcb`: the amounts the carrier aggregator has registered (positive, unique,
     * ascending: checked by the caller's schema and again here), written with its audit row in one transaction.
     */
    async adminSetCarrierAmounts(amountsCents: number[], audit: AuditWriter): Promise<{ amountsCents: number[] }> {
      const bad = amountsCents.findIndex((a, i) => !Number.isSafeInteger(a) || a <= 0 || (i > 0 && a <= amountsCents[i - 1]!));
      if (bad >= 0) throw badRequest(`amountsCents must be positive whole minor units, each larger than the one before (no repeats); item ${bad} is ${amountsCents[bad]}.`, { index: bad });
      return db.transaction(async (tx) => {
        const [row] = await tx.select({ amountsCents: paymentChannels.amountsCents }).from(paymentChannels).where(eq(paymentChannels.slug, 'dcb')).for('update');
        if (!row) throw notFound('The carrier billing channel is not set up.');
        await tx.update(paymentChannels).set({ amountsCents, updatedAt: clock.now() }).where(eq(paymentChannels.slug, 'dcb'));
        await audit({ action: 'topup.payment-rules.dcb.update', targetType: 'payment_channel', targetId: 'dcb', before: { amountsCents: row.amountsCents }, after: { amountsCents } }, tx);
        return { amountsCents: [...amountsCents] };
      });
    },

    /** Status, provider and paid time of payments by id (the top-up admin's order list). */
    async summaries(paymentIds: string[]): Promise<Map<string, { id: string; status: string; provider: string; paidAt: string | null }>> {
      if (paymentIds.length === 0) return new Map();
      const rows = await db
        .select({ id: payments.id, status: payments.status, channel: payments.channel, paidAt: payments.paidAt })
        .from(payments)
        .where(inArray(payments.id, paymentIds));
      return new Map(rows.map((r) => [r.id, { id: r.id, status: r.status, provider: r.channel, paidAt: r.paidAt?.toISOString() ?? null }]));
    },

    checkout: (userId: string, input: CheckoutInput) => flow.checkout(userId, input),

    async get(userId: string, paymentId: string) {
      const payment = await own(userId, paymentId);
      // Read from the ledger: a change paid now and applied later (a downgrade) grants its tokens when it starts.
      return view({ ...payment, tokensGranted: payment.status === 'PENDING' ? 0 : await deps.wallet.creditedForPayment(payment.id) });
    },

    /** `POST /v1/payments/dcb/verify-pin`: the PIN goes to the carrier; activation still comes by its callback. */
    async verifyPin(userId: string, input: { paymentId: string; pinCode: string }) {
      const payment = await own(userId, input.paymentId);
      await verifyPinOf(payment, input.pinCode);
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

    async listAgreements(userId: string) {
      const rows = await db.select().from(paymentAgreements).where(eq(paymentAgreements.userId, userId)).orderBy(desc(paymentAgreements.createdAt));
      return { items: rows.map((a) => ({ id: a.id, channel: a.channel, label: a.label, status: a.status, subscriptionId: a.subscriptionId, createdAt: a.createdAt.toISOString(), cancelledAt: a.cancelledAt?.toISOString() ?? null })) };
    },

    /** Stops charging a saved account: renewals on it stop (the running cycle is untouched). */
    async cancelAgreement(userId: string, agreementId: string) {
      const [row] = isUuid(agreementId) ? await db.select().from(paymentAgreements).where(and(eq(paymentAgreements.id, agreementId), eq(paymentAgreements.userId, userId))) : [];
      if (!row) throw notFound(`No saved payment agreement of yours has the id "${agreementId}".`);
      if (row.status === 'ACTIVE') {
        await db.update(paymentAgreements).set({ status: 'CANCELLED', cancelledAt: clock.now() }).where(eq(paymentAgreements.id, row.id));
        await revoke(row);
      }
      return { ok: true as const, id: row.id, status: 'CANCELLED' as const };
    },

    /** `DELETE /v1/payments/recurring/:id`: the subscription stops renewing; the paid cycle runs to its end. */
    async cancelRecurring(userId: string, subscriptionId: string) {
      const subscription = await deps.billing.cancel(userId, subscriptionId);
      const cancelled = await db
        .update(paymentAgreements)
        .set({ status: 'CANCELLED', cancelledAt: clock.now() })
        .where(and(eq(paymentAgreements.userId, userId), eq(paymentAgreements.subscriptionId, subscriptionId), eq(paymentAgreements.status, 'ACTIVE')))
        .returning();
      for (const row of cancelled) await revoke(row);
      return { ok: true as const, subscriptionId, status: subscription.status, endsAt: subscription.endsAt ?? null };
    },

    /**
     * Refunds a paid payment (operators): the gateway gives the money back where its API can, and the books follow at
     * once (tokens taken back as far as the balance allows; the rest recorded). The gateway's refund callback later
     * finds it already refunded and changes nothing.
     */
    async refund(paymentId: string, reason = 'refunded by an operator', audit?: AuditWriter) {
      const [before] = isUuid(paymentId) ? await db.select().from(payments).where(eq(payments.id, paymentId)) : [];
      if (!before) throw notFound('No such payment.');
      if (before.status !== 'SUCCEEDED') throw badRequest(`Only a paid payment can be refunded; this one is ${before.status.toLowerCase()}.`, { status: before.status });
      // Claimed first, so two refunds of one payment never both ask the gateway. The gateway is asked outside any
      // transaction: its refund callback may arrive while we wait, and it must find the row unlocked.
      const [claimed] = await db
        .update(payments)
        .set({ refundRequestedAt: clock.now() })
        .where(and(eq(payments.id, paymentId), eq(payments.status, 'SUCCEEDED'), isNull(payments.refundRequestedAt)))
        .returning({ id: payments.id });
      if (!claimed) throw conflict('A refund of this payment is already under way or done. Reload the payment to see its status.');
      try {
        await channels.get(before.channel)?.adapter.refund?.(before);
      } catch (err) {
        await db.update(payments).set({ refundRequestedAt: null }).where(eq(payments.id, paymentId));
        throw err;
      }
      const refunded = await db.transaction(async (tx) => {
        const [locked] = await tx.select().from(payments).where(eq(payments.id, paymentId)).for('update');
        // The gateway's callback may already have applied the books; refundBooks then changes nothing.
        await confirmation.refundBooks(tx, locked!, reason);
        const [after] = await tx.select().from(payments).where(eq(payments.id, paymentId));
        await audit?.({ action: 'payment.refund', targetType: 'payment', targetId: paymentId, before: view(before), after: view(after!), reason }, tx);
        return after!;
      });
      return view(refunded);
    },

    /** Operators' listing of payments, newest first, filtered by status, channel and customer. */
    async adminList(query: { limit: number; cursor?: string | undefined; status?: PaymentStatus | undefined; channel?: string | undefined; userId?: string | undefined }) {
      const filters: SQL[] = [];
      if (query.status) filters.push(eq(payments.status, query.status));
      if (query.channel) filters.push(eq(payments.channel, query.channel));
      if (query.userId) filters.push(eq(payments.userId, query.userId));
      const rows = await db
        .select()
        .from(payments)
        .where(afterCursor(payments.createdAt, payments.id, query.cursor, filters.length ? and(...filters) : undefined))
        .orderBy(desc(payments.createdAt), desc(payments.id))
        .limit(query.limit + 1);
      const page = toPage(rows, query.limit, (p) => ({ sort: p.createdAt.toISOString(), id: p.id }));
      return { items: page.items.map((p) => ({ ...view(p), userId: p.userId })), nextCursor: page.nextCursor };
    },

    /** One payment as operators see it (any customer's), or 404. */
    async adminGet(paymentId: string) {
      const [payment] = isUuid(paymentId) ? await db.select().from(payments).where(eq(payments.id, paymentId)) : [];
      if (!payment) throw notFound('No such payment.');
      return { ...view(payment), userId: payment.userId };
    },

    /** Revenue analytics (admin): succeeded payments per day, channel, currency and kind (see revenue.ts). */
    revenueByDay: (range: RevenueRange) => revenueByDay(db, range),

    /** The reconciliation pass (the `payments.reconcile` cron job). */
    reconcile: (limit?: number) => reconciler.run(limit),
  };
}

export function view(p: PaymentRow) {
  return {
    id: p.id,
    status: p.status,
    kind: publicKind(p.purposeKind),
    topUpOrderId: p.purposeKind === 'topup' ? p.purposeRef : null,
    subscriptionId: typeof p.purpose.subscriptionId === 'string' ? p.purpose.subscriptionId : null,
    tokensGranted: p.tokensGranted,
    amountCents: p.amountCents,
    currency: p.currency,
    provider: p.channel,
    recurring: p.recurring,
    fulfilment: p.fulfilment,
    reviewReason: p.reviewReason,
    paidAt: p.paidAt?.toISOString() ?? null,
    refundedAt: p.refundedAt?.toISOString() ?? null,
    tokensTakenBack: p.tokensTakenBack,
    tokensUnrecovered: p.tokensUnrecovered,
    expiresAt: p.expiresAt.toISOString(),
    createdAt: p.createdAt.toISOString(),
  };
}

export type PaymentsService = ReturnType<typeof createPaymentsService>;
