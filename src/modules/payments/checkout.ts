import { and, eq } from 'drizzle-orm';
import { payments } from '../../db/schema/payments.js';
import { badRequest } from '../../platform/http/errors.js';
import type { PlansService } from '../plans/service.js';
import type { ChannelPolicy, CheckoutRequest, CheckoutSession, PaymentsPort, SubscriptionBillingService } from '../subscriptions/index.js';
import { validateAmount, validateExtra, type ChannelRow } from './channels.js';
import { GatewayError, providerUnavailable } from './gateways/common.js';
import { channelPlugin } from './gateways/index.js';
import type { PaymentsContext } from './context.js';

export const PENDING_EXPIRY_MS = 24 * 60 * 60_000;

export interface NewPayment {
  userId: string;
  purpose: Record<string, unknown> & { kind: string };
  /** The owner's id of the purchase (a change id, an order id). */
  purposeRef: string;
  amountCents: number;
  currency: string;
  channel: string;
  recurring: boolean;
  extra?: Record<string, unknown> | undefined;
  successUrl?: string | undefined;
  cancelUrl?: string | undefined;
  description: string;
}

export interface CheckoutInput {
  planId: string;
  provider: string;
  successUrl: string;
  cancelUrl: string;
  extra?: Record<string, unknown>;
  recurring?: boolean;
  couponCode?: string;
}

/** Opening checkouts: the payments port subscriptions calls, and `POST /v1/payments/checkout` in front of it. */
export function createCheckoutFlow(
  ctx: PaymentsContext,
  deps: { billing: Pick<SubscriptionBillingService, 'switchPlan' | 'quote'>; plans: Pick<PlansService, 'getById'> },
) {
  const { db, clock } = ctx;

  /** The channel's row when it is offered (enabled, live or in sandbox); otherwise rule 7's 400, naming what is offered. */
  async function available(slug: string): Promise<ChannelRow> {
    const row = await ctx.channelRow(slug);
    if (row) return row;
    const offered = (await ctx.offeredChannels()).map((r) => r.slug);
    throw badRequest(
      offered.length > 0
        ? `${slug} is not available right now. Choose one of ${offered.join(', ')} (GET /v1/payments/channels).`
        : 'No payment channel takes payments here right now, so nothing can be bought. Try again later or contact support.',
      { provider: slug, offered },
    );
  }

  /** Return URLs must point at our own front end (or an origin the operator listed): the return route redirects there. */
  function checkReturnUrls(input: { successUrl?: string | undefined; cancelUrl?: string | undefined }) {
    for (const field of ['successUrl', 'cancelUrl'] as const) {
      const value = input[field];
      if (value === undefined) continue;
      const origin = URL.canParse(value) ? new URL(value).origin : null;
      if (!origin || !ctx.returnOrigins.includes(origin)) {
        throw badRequest(`${field}: return to one of ${ctx.returnOrigins.join(', ')} (other sites are not allowed).`, {
          field,
          allowedOrigins: ctx.returnOrigins,
        });
      }
    }
  }

  /** Records a PENDING payment and opens the gateway's hosted checkout for it (or charges a saved agreement). */
  async function openPayment(input: NewPayment, agreementId?: string): Promise<CheckoutSession> {
    checkReturnUrls(input);
    const row = await available(input.channel);
    const extra = validateExtra(row, input.extra);
    validateAmount(row, input.amountCents, input.currency);
    const runtime = ctx.channels.get(input.channel)!;
    const now = clock.now();
    const [payment] = await db
      .insert(payments)
      .values({
        userId: input.userId,
        purposeKind: input.purpose.kind,
        purposeRef: input.purposeRef,
        purpose: input.purpose,
        channel: input.channel,
        mode: runtime.adapter.mode,
        amountCents: input.amountCents,
        currency: input.currency,
        description: input.description,
        recurring: input.recurring,
        extra,
        successUrl: input.successUrl ?? null,
        cancelUrl: input.cancelUrl ?? null,
        expiresAt: new Date(now.getTime() + PENDING_EXPIRY_MS),
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    try {
      const context = { callbackUrl: ctx.callbackUrl(input.channel), returnUrl: (result: 'success' | 'cancel' | 'fail') => ctx.returnUrl(payment!.id, result) };
      const opened =
        agreementId && runtime.adapter.chargeAgreement
          ? await runtime.adapter.chargeAgreement(payment!, agreementId, context)
          : await runtime.adapter.createCheckout(payment!, context);
      await db.update(payments).set({ gatewayRef: opened.gatewayRef }).where(eq(payments.id, payment!.id));
      return { paymentId: payment!.id, redirectUrl: opened.redirectUrl };
    } catch (err) {
      ctx.logger.warn(
        { err: err instanceof GatewayError ? err.message : err, channel: input.channel, paymentId: payment!.id },
        'the gateway refused a checkout session',
      );
      await db.update(payments).set({ status: 'FAILED', updatedAt: clock.now() }).where(eq(payments.id, payment!.id));
      throw providerUnavailable(input.channel);
    }
  }

  const port: PaymentsPort = {
    async channelPolicy(channel: string): Promise<ChannelPolicy | null> {
      const row = await ctx.channelRow(channel);
      if (!row) return null;
      const { traits } = channelPlugin(row.slug);
      return { autoRenews: traits.autoRenews, supportsRecurring: traits.supportsRecurring };
    },
    createCheckout: (request: CheckoutRequest) =>
      openPayment({
        userId: request.userId,
        purpose: { ...request.purpose },
        purposeRef: request.purpose.changeId,
        amountCents: request.amountCents,
        currency: request.currency,
        channel: request.channel,
        recurring: request.recurring,
        extra: request.extra,
        successUrl: request.successUrl,
        cancelUrl: request.cancelUrl,
        description: request.description,
      }),
    async cancelCheckout(paymentId: string) {
      await db
        .update(payments)
        .set({ status: 'CANCELLED', updatedAt: clock.now() })
        .where(and(eq(payments.id, paymentId), eq(payments.status, 'PENDING'), eq(payments.fulfilment, 'NONE')));
    },
  };

  return {
    port,
    openPayment,

    /**
     * `POST /v1/payments/checkout`: a plan purchase or change. Everything the customer can get wrong is refused before
     * anything is recorded (rules 1, 2, 5, 7); then subscriptions prices it and opens the checkout through the port.
     */
    async checkout(userId: string, input: CheckoutInput) {
      checkReturnUrls(input);
      const quote = await deps.billing.quote(userId, input.planId); // 404 for an unknown, archived or internal plan
      const plan = (await deps.plans.getById(input.planId))!;
      if (plan.allowedChannels.length > 0 && !plan.allowedChannels.includes(input.provider)) {
        throw badRequest(`The ${plan.name} plan can be paid with ${plan.allowedChannels.join(', ')} only.`, {
          requested: input.provider,
          allowedChannels: plan.allowedChannels,
        });
      }
      const row = await available(input.provider);
      validateExtra(row, input.extra);
      if (quote.amountDueCents > 0 && !input.couponCode) validateAmount(row, quote.amountDueCents, quote.currency);
      const result = await deps.billing.switchPlan(userId, {
        planId: input.planId,
        provider: input.provider,
        successUrl: input.successUrl,
        cancelUrl: input.cancelUrl,
        ...(input.extra ? { extra: input.extra } : {}),
        ...(input.recurring !== undefined ? { recurring: input.recurring } : {}),
        ...(input.couponCode ? { couponCode: input.couponCode } : {}),
      });
      return result;
    },
  };
}

export type CheckoutFlow = ReturnType<typeof createCheckoutFlow>;
