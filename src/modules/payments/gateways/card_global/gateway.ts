import type Stripe from 'stripe';
import type { Clock } from '../../../../platform/clock/clock.js';
import type { CallbackInput, ChannelAdapter, VerifiedCallback } from '../../types.js';
import { call, form, gatewayId, header, invalidCallback, json, type GatewaySimulator, type SimContext, type SimState, type Transport } from '../common.js';
import { settings as channelSettings } from './settings.js';

/**
 * card_global: a Stripe-style card gateway. Checkout Sessions over its form-encoded API; callbacks are events signed
 * with `Stripe-Signature: t=<unix>,v1=<HMAC-SHA256 of "<t>.<raw body>">`, verified by the official `stripe` package
 * with a 5-minute tolerance measured on our clock.
 */
const SLUG = channelSettings.slug;

/** The `stripe` package (a few MB of heap) only signs and checks events, so it is loaded by the first one. */
let stripe: Promise<typeof Stripe> | undefined;
const loadStripe = (): Promise<typeof Stripe> => (stripe ??= import('stripe').then((loaded) => loaded.default));
export const CARD_GLOBAL_TOLERANCE_SECONDS = 300;

export interface CardGlobalSettings {
  baseUrl: string;
  secretKey: string;
  webhookSecret: string;
}

type StripeObject = Record<string, any>;

export function createCardGlobal(settings: CardGlobalSettings, deps: { transport: Transport; clock: Clock; mode: 'live' | 'sandbox' }): ChannelAdapter {
  const auth = { authorization: `Bearer ${settings.secretKey}` };
  const api = <T>(path: string, init: RequestInit) => call<T>(deps.transport, SLUG, `${settings.baseUrl}${path}`, init);

  const fromSession = (session: StripeObject, eventKey: string, payload: unknown): VerifiedCallback | null => {
    const base = { eventKey, paymentId: session.client_reference_id as string, gatewayRef: session.id as string, payload };
    if (session.status === 'complete' && session.payment_status === 'paid') {
      return {
        ...base,
        outcome: 'succeeded',
        gatewayTxnId: session.payment_intent as string,
        amountCents: Number(session.amount_total),
        currency: String(session.currency).toUpperCase(),
      };
    }
    if (session.status === 'expired') return { ...base, outcome: 'cancelled' };
    return null;
  };

  return {
    slug: SLUG,
    mode: deps.mode,

    async createCheckout(payment, context) {
      const session = await api<StripeObject>('/v1/checkout/sessions', {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded', 'idempotency-key': payment.id },
        body: form({
          mode: 'payment',
          client_reference_id: payment.id,
          'metadata[paymentId]': payment.id,
          'payment_intent_data[metadata][paymentId]': payment.id,
          'line_items[0][quantity]': '1',
          'line_items[0][price_data][currency]': payment.currency.toLowerCase(),
          'line_items[0][price_data][unit_amount]': String(payment.amountCents),
          'line_items[0][price_data][product_data][name]': payment.description,
          success_url: context.returnUrl('success'),
          cancel_url: context.returnUrl('cancel'),
        }),
      });
      return { gatewayRef: session.id as string, redirectUrl: session.url as string };
    },

    async verifyCallback(input: CallbackInput) {
      const signature = header(input, 'stripe-signature');
      if (!signature) throw invalidCallback(SLUG, 'the Stripe-Signature header is missing');
      const { webhooks } = await loadStripe();
      let event: StripeObject;
      try {
        event = webhooks.constructEvent(input.rawBody, signature, settings.webhookSecret, CARD_GLOBAL_TOLERANCE_SECONDS, undefined, deps.clock.now().getTime());
      } catch (err) {
        throw invalidCallback(SLUG, (err as Error).message);
      }
      const object = (event.data?.object ?? {}) as StripeObject;
      const eventKey = String(event.id);
      switch (event.type) {
        case 'checkout.session.completed':
        case 'checkout.session.async_payment_succeeded':
          return (
            fromSession(object, eventKey, event) ?? {
              eventKey,
              paymentId: object.client_reference_id,
              gatewayRef: object.id,
              outcome: 'pending',
              payload: event,
            }
          );
        case 'checkout.session.async_payment_failed':
          return { eventKey, paymentId: object.client_reference_id, gatewayRef: object.id, outcome: 'failed', payload: event };
        case 'checkout.session.expired':
          return { eventKey, paymentId: object.client_reference_id, gatewayRef: object.id, outcome: 'cancelled', payload: event };
        case 'charge.refunded':
          return {
            eventKey,
            paymentId: object.metadata?.paymentId,
            outcome: 'refunded',
            gatewayTxnId: object.payment_intent,
            amountCents: Number(object.amount_refunded),
            currency: String(object.currency).toUpperCase(),
            payload: event,
          };
        default:
          return { eventKey, paymentId: object.metadata?.paymentId ?? object.client_reference_id, outcome: 'pending', payload: event };
      }
    },

    async requery(payment) {
      if (!payment.gatewayRef) return null;
      const session = await api<StripeObject>(`/v1/checkout/sessions/${encodeURIComponent(payment.gatewayRef)}`, { method: 'GET', headers: auth });
      return fromSession(session, `requery:${session.id}:${session.status}`, session);
    },

    async refund(payment) {
      await api('/v1/refunds', {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded', 'idempotency-key': `refund-${payment.id}` },
        body: form({ payment_intent: payment.gatewayTxnId ?? '', 'metadata[paymentId]': payment.id }),
      });
    },
  };
}

/** The sandbox Stripe: the Checkout Session API the adapter calls, and signed events for the page's buttons. */
export function simulateCardGlobal(settings: CardGlobalSettings, ctx: SimContext): GatewaySimulator {
  const sessionOf = (state: SimState) => ({
    id: state.ref,
    object: 'checkout.session',
    client_reference_id: state.paymentId,
    amount_total: state.amount,
    currency: state.currency,
    status: state.status === 'paid' || state.status === 'refunded' ? 'complete' : state.status === 'cancelled' ? 'expired' : 'open',
    payment_status: state.status === 'paid' || state.status === 'refunded' ? 'paid' : 'unpaid',
    payment_intent: state.txnId ?? null,
    metadata: { paymentId: state.paymentId },
    url: ctx.pageUrl(state.paymentId),
  });
  const signed = async (event: Record<string, unknown>): Promise<CallbackInput> => {
    const { webhooks } = await loadStripe();
    const rawBody = JSON.stringify(event);
    const timestamp = Math.floor(ctx.clock.now().getTime() / 1000);
    const signature = webhooks.generateTestHeaderString({ payload: rawBody, secret: settings.webhookSecret, timestamp });
    return { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': signature }, rawBody, query: {} };
  };
  const event = (type: string, object: unknown) => ({
    id: gatewayId('evt_'),
    object: 'event',
    type,
    created: Math.floor(ctx.clock.now().getTime() / 1000),
    data: { object },
  });
  const paymentIdOf = (ref: string) => ref.replace(/^cs_sandbox_/, '');

  return {
    async handle(request) {
      if (request.headers.get('authorization') !== `Bearer ${settings.secretKey}`)
        return json({ error: { type: 'invalid_request_error', message: 'Invalid API Key provided' } }, 401);
      const url = new URL(request.url);
      if (request.method === 'POST' && url.pathname === '/v1/checkout/sessions') {
        const fields = new URLSearchParams(await request.text());
        const paymentId = fields.get('client_reference_id')!;
        const state: SimState = {
          paymentId,
          ref: `cs_sandbox_${paymentId}`,
          status: 'open',
          amount: Number(fields.get('line_items[0][price_data][unit_amount]')),
          currency: fields.get('line_items[0][price_data][currency]'),
        };
        await ctx.store.save(paymentId, state);
        return json(sessionOf(state));
      }
      const match = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(url.pathname);
      if (request.method === 'GET' && match) {
        const state = await ctx.store.load(paymentIdOf(decodeURIComponent(match[1]!)));
        return state ? json(sessionOf(state)) : json({ error: { type: 'invalid_request_error', message: 'No such checkout.session' } }, 404);
      }
      if (request.method === 'POST' && url.pathname === '/v1/refunds') {
        const fields = new URLSearchParams(await request.text());
        const state = await ctx.store.load(fields.get('metadata[paymentId]') ?? '');
        if (!state || state.txnId !== fields.get('payment_intent') || state.status !== 'paid')
          return json({ error: { message: 'No such payment_intent' } }, 400);
        state.status = 'refunded';
        await ctx.store.save(state.paymentId, state);
        await ctx.deliver(
          await signed(
            event('charge.refunded', {
              id: gatewayId('ch_'),
              object: 'charge',
              payment_intent: state.txnId,
              amount_refunded: state.amount,
              currency: state.currency,
              metadata: { paymentId: state.paymentId },
            }),
          ),
        );
        return json({ id: gatewayId('re_'), object: 'refund', status: 'succeeded' });
      }
      return json({ error: { message: 'Unrecognized request URL' } }, 404);
    },

    async press(paymentId, action) {
      const state = await ctx.store.load(paymentId);
      if (!state || state.status !== 'open') return null;
      if (action === 'pay') Object.assign(state, { status: 'paid', txnId: gatewayId('pi_') });
      else state.status = action === 'cancel' ? 'cancelled' : 'failed';
      await ctx.store.save(paymentId, state);
      const type = action === 'pay' ? 'checkout.session.completed' : action === 'cancel' ? 'checkout.session.expired' : 'checkout.session.async_payment_failed';
      return signed(event(type, sessionOf(state)));
    },
  };
}
