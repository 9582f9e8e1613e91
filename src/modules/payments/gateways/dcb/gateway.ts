import { randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../../../platform/clock/clock.js';
import type { CallbackInput, ChannelAdapter, VerifiedCallback } from '../../types.js';
import { call, gatewayId, GatewayError, invalidCallback, json, type GatewaySimulator, type SimContext, type SimState, type Transport } from '../common.js';
import { settings as channelSettings } from './settings.js';

/**
 * dcb: direct carrier billing through an aggregator. The charge is opened with an `order_tracking_id` we generate
 * (128 random bits); a carrier option with `needsPin` texts a 5-digit PIN valid 5 minutes that the customer posts
 * back through us. The carrier's callback is an unsigned GET: whatever it reports (a charge, a failure, a cancellation,
 * an unsubscription) is believed only when the carrier's status query for its `order_tracking_id` says the same, and
 * the order is a payment of ours on this channel with the same phone number (and, for a charge, the same amount).
 */
const SLUG = channelSettings.slug;
export const PIN_TTL_MS = 5 * 60_000;

export interface DcbSettings {
  baseUrl: string;
  apiKey: string;
}

type CarrierAnswer = Record<string, any>;
type CarrierOutcome = 'succeeded' | 'failed' | 'cancelled' | 'unsubscribed';

/** The carrier callback's `status`, as the outcome it claims. */
const CLAIMED = new Map<string, CarrierOutcome>([
  ['SUCCESS', 'succeeded'],
  ['FAILED', 'failed'],
  ['CANCELLED', 'cancelled'],
  ['UNSUBSCRIBED', 'unsubscribed'],
]);

/**
 * What the carrier's status answer says happened to an order: its charge (`status`), or, asked about an
 * unsubscription, whether the customer left the subscription the order started (`subscription_status`).
 */
function outcomeOf(status: CarrierAnswer, asked?: CarrierOutcome): CarrierOutcome | null {
  if (asked === 'unsubscribed') return status.subscription_status === 'UNSUBSCRIBED' ? 'unsubscribed' : null;
  return status.status === 'CHARGED' ? 'succeeded' : status.status === 'FAILED' ? 'failed' : status.status === 'CANCELLED' ? 'cancelled' : null;
}

/** A confirmed outcome; the carrier keeps one record per order, so a callback and a re-query of it share a key. */
function verified(ref: string, outcome: CarrierOutcome, status: CarrierAnswer, payload: unknown): VerifiedCallback {
  if (outcome !== 'succeeded') return { eventKey: `${ref}:${outcome}:`, gatewayRef: ref, outcome, payload };
  return {
    eventKey: `${ref}:succeeded:${String(status.transaction_id)}`,
    gatewayRef: ref,
    outcome,
    gatewayTxnId: String(status.transaction_id),
    amountCents: Number(status.amount),
    currency: String(status.currency ?? 'BDT'),
    payload,
  };
}

export function createDcb(settings: DcbSettings, deps: { transport: Transport; clock: Clock; mode: 'live' | 'sandbox' }): ChannelAdapter {
  const headers = { 'x-api-key': settings.apiKey, 'content-type': 'application/json' };
  const api = <T>(path: string, init: RequestInit) => call<T>(deps.transport, SLUG, `${settings.baseUrl}${path}`, init);
  /** The carrier's own record of an order (in sandbox, the simulated carrier's record of what the page's button did). */
  const statusOf = (ref: string) => api<CarrierAnswer>(`/charge/status?order_tracking_id=${encodeURIComponent(ref)}`, { method: 'GET', headers });

  return {
    slug: SLUG,
    mode: deps.mode,

    async createCheckout(payment, context) {
      const orderTrackingId = `ot_${randomBytes(16).toString('hex')}`;
      const answer = await api<CarrierAnswer>('/charge/init', {
        method: 'POST',
        headers,
        body: JSON.stringify({
          order_tracking_id: orderTrackingId,
          reference: payment.id,
          msisdn: payment.extra.msisdn,
          operator: payment.extra.paymentProvider,
          amount: payment.amountCents,
          currency: payment.currency,
          description: payment.description,
          recurring: payment.recurring,
          // A renewal charges the subscription the customer already confirmed: the carrier sends no PIN for it.
          renewal: payment.purpose.renewal === true,
          callback_url: context.callbackUrl,
        }),
      });
      if (!['PIN_SENT', 'REDIRECT', 'CHARGING'].includes(String(answer.status))) throw new Error(`carrier refused the charge: ${String(answer.status)}`);
      // Carrier billing never sees the customer's return URLs: the browser goes to the carrier's page or to our return route.
      return { gatewayRef: orderTrackingId, redirectUrl: (answer.redirect_url as string | undefined) ?? context.returnUrl('success') };
    },

    async verifyCallback(input: CallbackInput) {
      const q = input.query;
      const ref = q.order_tracking_id;
      if (!ref || !/^ot_[0-9a-f]{32}$/.test(ref)) throw invalidCallback(SLUG, 'order_tracking_id is missing or malformed');
      const outcome = CLAIMED.get(q.status ?? '');
      if (!outcome) throw invalidCallback(SLUG, `unknown status "${q.status ?? ''}"`);
      // Unsigned, so anyone who learns an order's tracking id could send it: every outcome (a failure or an
      // unsubscription as much as a charge) is believed only when the carrier's own record says the same.
      const status = await statusOf(ref).catch((err: unknown) => {
        if (err instanceof GatewayError && err.status === 404) throw invalidCallback(SLUG, 'the carrier has no such order');
        throw err;
      });
      if (outcomeOf(status, outcome) !== outcome) throw invalidCallback(SLUG, `the carrier's record of this order does not say ${q.status}`);
      if (outcome === 'succeeded' && q.amount !== undefined && Number(q.amount) !== Number(status.amount))
        throw invalidCallback(SLUG, "the amount differs from the carrier's record");
      return { ...verified(ref, outcome, status, { query: q, status }), matches: q.msisdn ? { msisdn: q.msisdn } : undefined };
    },

    async requery(payment) {
      if (!payment.gatewayRef) return null;
      const status = await statusOf(payment.gatewayRef);
      const outcome = outcomeOf(status);
      return outcome ? verified(payment.gatewayRef, outcome, status, status) : null;
    },

    async verifyPin(payment, pin) {
      const answer = await api<CarrierAnswer>('/charge/verify-pin', {
        method: 'POST',
        headers,
        body: JSON.stringify({ order_tracking_id: payment.gatewayRef, pin }),
      });
      return answer.status === 'CHARGED' ? 'ok' : answer.status === 'PIN_EXPIRED' ? 'expired' : 'wrong';
    },
  };
}

/** The sandbox carrier: opens charges, texts a PIN (shown on the sandbox page), charges on the right PIN and calls back. */
export function simulateDcb(settings: DcbSettings, ctx: SimContext & { needsPin(operator: string): Promise<boolean> }): GatewaySimulator {
  const callback = (state: SimState, status: string): CallbackInput => {
    const query: Record<string, string> = { order_tracking_id: state.ref, status, msisdn: state.msisdn, amount: String(state.amount) };
    if (state.txnId) query.transaction_id = state.txnId;
    return { method: 'GET', headers: {}, rawBody: '', query };
  };
  const stateOf = (ref: string) => ctx.store.findByRef(ref);
  const charge = async (state: SimState) => {
    Object.assign(state, { status: 'paid', txnId: gatewayId('dcbtx_') });
    await ctx.store.save(state.paymentId, state);
  };

  return {
    async handle(request) {
      if (request.headers.get('x-api-key') !== settings.apiKey) return json({ status: 'UNAUTHORIZED' }, 401);
      const url = new URL(request.url);
      if (request.method === 'POST' && url.pathname.endsWith('/charge/init')) {
        const body = (await request.json()) as Record<string, any>;
        const needsPin = body.renewal !== true && (await ctx.needsPin(String(body.operator)));
        const state: SimState = {
          paymentId: String(body.reference),
          ref: String(body.order_tracking_id),
          status: 'open',
          amount: Number(body.amount),
          currency: String(body.currency),
          msisdn: String(body.msisdn),
          operator: String(body.operator),
          ...(needsPin ? { pin: String(randomInt(10_000, 100_000)), pinExpiresAt: ctx.clock.now().getTime() + PIN_TTL_MS } : {}),
        };
        if (body.renewal === true) {
          // A renewal of a standing carrier subscription: the carrier charges the balance and calls back shortly after.
          await charge(state);
          setTimeout(() => void ctx.deliver(callback(state, 'SUCCESS')).catch(() => undefined), 10);
          return json({ status: 'CHARGING', redirect_url: null });
        }
        await ctx.store.save(state.paymentId, state);
        // The carrier's page: a PIN carrier shows where the text went (the sandbox page shows the PIN itself).
        return json({ status: needsPin ? 'PIN_SENT' : 'REDIRECT', redirect_url: ctx.pageUrl(state.paymentId) });
      }
      if (request.method === 'GET' && url.pathname.endsWith('/charge/status')) {
        const state = await stateOf(url.searchParams.get('order_tracking_id') ?? '');
        if (!state) return json({ status: 'NOT_FOUND' }, 404);
        const charged = state.status === 'paid' || state.status === 'refunded';
        const status = charged ? 'CHARGED' : state.status === 'open' ? 'PENDING' : state.status === 'failed' ? 'FAILED' : 'CANCELLED';
        const subscription = state.unsubscribed ? 'UNSUBSCRIBED' : charged ? 'ACTIVE' : null;
        return json({
          order_tracking_id: state.ref,
          status,
          amount: state.amount,
          currency: state.currency,
          transaction_id: state.txnId ?? null,
          subscription_status: subscription,
        });
      }
      if (request.method === 'POST' && url.pathname.endsWith('/charge/verify-pin')) {
        const body = (await request.json()) as Record<string, any>;
        const state = await stateOf(String(body.order_tracking_id));
        if (!state || state.status !== 'open' || !state.pin) return json({ status: 'INVALID_PIN' });
        if (ctx.clock.now().getTime() > Number(state.pinExpiresAt)) return json({ status: 'PIN_EXPIRED' });
        const given = Buffer.from(String(body.pin ?? ''));
        const expected = Buffer.from(String(state.pin));
        if (given.length !== expected.length || !timingSafeEqual(given, expected)) return json({ status: 'INVALID_PIN' });
        await charge(state);
        await ctx.deliver(callback(state, 'SUCCESS'));
        return json({ status: 'CHARGED', transaction_id: state.txnId });
      }
      return json({ status: 'NOT_FOUND' }, 404);
    },

    async press(paymentId, action) {
      const state = await ctx.store.load(paymentId);
      if (!state || state.status !== 'open') return null;
      if (action === 'pay') {
        if (state.pin) return null; // a PIN carrier charges only on the PIN (verify-pin)
        await charge(state);
        return callback(state, 'SUCCESS');
      }
      state.status = action === 'cancel' ? 'cancelled' : 'failed';
      await ctx.store.save(paymentId, state);
      return callback(state, action === 'cancel' ? 'CANCELLED' : 'FAILED');
    },

    async unsubscribe(paymentId) {
      const state = await ctx.store.load(paymentId);
      if (!state || state.status !== 'paid' || state.unsubscribed) return null;
      state.unsubscribed = true;
      await ctx.store.save(paymentId, state);
      return callback(state, 'UNSUBSCRIBED');
    },

    pageNotes(state) {
      return state.pin
        ? [`The carrier texted ${state.msisdn} this PIN: ${state.pin} (valid 5 minutes). Enter it in the app (POST /v1/payments/dcb/verify-pin).`]
        : [];
    },
  };
}
