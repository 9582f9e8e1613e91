import { randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../../platform/clock/clock.js';
import type { CallbackInput, ChannelAdapter } from '../types.js';
import { call, gatewayId, GatewayError, invalidCallback, json, type GatewaySimulator, type SimContext, type SimState, type Transport } from './common.js';

/**
 * dcb: direct carrier billing through an aggregator. The charge is opened with an `order_tracking_id` we generate
 * (128 random bits); a carrier option with `needsPin` texts a 5-digit PIN valid 5 minutes that the customer posts
 * back through us. The carrier's callback is an unsigned GET: it is believed only when its `order_tracking_id` names a
 * payment in flight on this channel (and its phone number and amount match), then re-checked by status query.
 */
const SLUG = 'dcb';
export const PIN_TTL_MS = 5 * 60_000;

export interface DcbSettings {
  baseUrl: string;
  apiKey: string;
}

type CarrierAnswer = Record<string, any>;

export function createDcb(settings: DcbSettings, deps: { transport: Transport; clock: Clock; mode: 'live' | 'sandbox' }): ChannelAdapter {
  const headers = { 'x-api-key': settings.apiKey, 'content-type': 'application/json' };
  const api = <T>(path: string, init: RequestInit) => call<T>(deps.transport, SLUG, `${settings.baseUrl}${path}`, init);

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
      const outcome =
        q.status === 'SUCCESS' ? 'succeeded' : q.status === 'FAILED' ? 'failed' : q.status === 'CANCELLED' ? 'cancelled' : q.status === 'UNSUBSCRIBED' ? 'unsubscribed' : null;
      if (!outcome) throw invalidCallback(SLUG, `unknown status "${q.status ?? ''}"`);
      if (outcome === 'succeeded') {
        // Unsigned: the carrier's own record decides what was charged.
        const status = await api<CarrierAnswer>(`/charge/status?order_tracking_id=${encodeURIComponent(ref)}`, { method: 'GET', headers }).catch((err: unknown) => {
          if (err instanceof GatewayError && err.status === 404) throw invalidCallback(SLUG, 'the carrier has no such order');
          throw err;
        });
        if (status.status !== 'CHARGED') throw invalidCallback(SLUG, 'the carrier has no charge for this order');
        if (q.amount !== undefined && Number(q.amount) !== Number(status.amount)) throw invalidCallback(SLUG, 'the amount differs from the carrier\'s record');
        return {
          eventKey: `${ref}:${outcome}:${String(status.transaction_id)}`,
          gatewayRef: ref,
          outcome,
          gatewayTxnId: String(status.transaction_id),
          amountCents: Number(status.amount),
          currency: String(status.currency ?? 'BDT'),
          payload: { query: q, status },
          matches: q.msisdn ? { msisdn: q.msisdn } : undefined,
        };
      }
      return { eventKey: `${ref}:${outcome}:${q.transaction_id ?? ''}`, gatewayRef: ref, outcome, payload: { query: q }, matches: q.msisdn ? { msisdn: q.msisdn } : undefined };
    },

    async requery(payment) {
      if (!payment.gatewayRef) return null;
      const status = await api<CarrierAnswer>(`/charge/status?order_tracking_id=${encodeURIComponent(payment.gatewayRef)}`, { method: 'GET', headers });
      if (status.status === 'CHARGED') {
        return {
          eventKey: `${payment.gatewayRef}:succeeded:${String(status.transaction_id)}`,
          gatewayRef: payment.gatewayRef,
          outcome: 'succeeded',
          gatewayTxnId: String(status.transaction_id),
          amountCents: Number(status.amount),
          currency: String(status.currency ?? 'BDT'),
          payload: status,
        };
      }
      if (status.status === 'FAILED') return { eventKey: `${payment.gatewayRef}:failed:`, gatewayRef: payment.gatewayRef, outcome: 'failed', payload: status };
      return null;
    },

    async verifyPin(payment, pin) {
      const answer = await api<CarrierAnswer>('/charge/verify-pin', { method: 'POST', headers, body: JSON.stringify({ order_tracking_id: payment.gatewayRef, pin }) });
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
        const status = state.status === 'paid' || state.status === 'refunded' ? 'CHARGED' : state.status === 'open' ? 'PENDING' : state.status === 'failed' ? 'FAILED' : 'CANCELLED';
        return json({ order_tracking_id: state.ref, status, amount: state.amount, currency: state.currency, transaction_id: state.txnId ?? null });
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

    pageNotes(state) {
      return state.pin ? [`The carrier texted ${state.msisdn} this PIN: ${state.pin} (valid 5 minutes). Enter it in the app (POST /v1/payments/dcb/verify-pin).`] : [];
    },
  };
}
