import type { Clock } from '../../../../platform/clock/clock.js';
import type { CallbackInput, ChannelAdapter, VerifiedCallback } from '../../types.js';
import {
  call,
  fromDecimal,
  gatewayId,
  invalidCallback,
  json,
  parseJsonBody,
  toDecimal,
  type GatewaySimulator,
  type SimContext,
  type SimState,
  type Transport,
} from '../common.js';
import { settings as channelSettings } from './settings.js';

/**
 * wallet_regional_1: a bKash-style tokenized checkout. A grant token (username/password headers, app key/secret body)
 * authorises `create`; the callback only names a `paymentID` and a claimed status, so it is believed after `execute`
 * and a status re-query (`payment/status`) report `transactionStatus: Completed` with the amount and our invoice number.
 */
const SLUG = channelSettings.slug;

export interface WalletRegional1Settings {
  baseUrl: string;
  appKey: string;
  appSecret: string;
  username: string;
  password: string;
}

type BkashAnswer = Record<string, any>;

export function createWalletRegional1(
  settings: WalletRegional1Settings,
  deps: { transport: Transport; clock: Clock; mode: 'live' | 'sandbox' },
): ChannelAdapter {
  const api = <T>(path: string, init: RequestInit) => call<T>(deps.transport, SLUG, `${settings.baseUrl}${path}`, init);
  async function headers(): Promise<Record<string, string>> {
    const grant = await api<BkashAnswer>('/tokenized/checkout/token/grant', {
      method: 'POST',
      headers: { username: settings.username, password: settings.password, 'content-type': 'application/json' },
      body: JSON.stringify({ app_key: settings.appKey, app_secret: settings.appSecret }),
    });
    if (!grant.id_token) throw new Error(`token grant refused: ${String(grant.statusMessage ?? grant.statusCode)}`);
    return { authorization: String(grant.id_token), 'x-app-key': settings.appKey, 'content-type': 'application/json' };
  }
  async function status(paymentID: string, eventKey: string): Promise<VerifiedCallback | null> {
    const answer = await api<BkashAnswer>('/tokenized/checkout/payment/status', {
      method: 'POST',
      headers: await headers(),
      body: JSON.stringify({ paymentID }),
    });
    const base = { paymentId: answer.merchantInvoiceNumber as string | undefined, gatewayRef: paymentID, payload: answer };
    if (answer.transactionStatus === 'Completed') {
      return {
        ...base,
        eventKey: `${eventKey}:${String(answer.trxID)}`,
        outcome: 'succeeded',
        gatewayTxnId: String(answer.trxID),
        amountCents: fromDecimal(answer.amount),
        currency: answer.currency,
      };
    }
    if (answer.transactionStatus === 'Failed') return { ...base, eventKey: `${eventKey}:failed`, outcome: 'failed' };
    if (answer.transactionStatus === 'Cancelled') return { ...base, eventKey: `${eventKey}:cancelled`, outcome: 'cancelled' };
    return null;
  }

  return {
    slug: SLUG,
    mode: deps.mode,

    async createCheckout(payment, context) {
      const answer = await api<BkashAnswer>('/tokenized/checkout/create', {
        method: 'POST',
        headers: await headers(),
        body: JSON.stringify({
          mode: '0011',
          payerReference: payment.userId.slice(0, 8),
          // The gateway sends the browser here with `paymentID` and `status`; the return route verifies it as a callback.
          callbackURL: context.returnUrl('success'),
          amount: toDecimal(payment.amountCents),
          currency: payment.currency,
          intent: 'sale',
          merchantInvoiceNumber: payment.id,
        }),
      });
      if (answer.statusCode !== '0000' || !answer.bkashURL) throw new Error(`create refused: ${String(answer.statusMessage ?? answer.statusCode)}`);
      return { gatewayRef: String(answer.paymentID), redirectUrl: String(answer.bkashURL) };
    },

    async verifyCallback(input: CallbackInput) {
      const body = input.method === 'GET' ? input.query : parseJsonBody(SLUG, input.rawBody);
      const paymentID = body.paymentID;
      if (typeof paymentID !== 'string' || !paymentID) throw invalidCallback(SLUG, 'paymentID is missing');
      if (body.status === 'success') {
        // Executing completes an authorised payment (a second execute of a completed one is refused, harmlessly).
        await api<BkashAnswer>('/tokenized/checkout/execute', { method: 'POST', headers: await headers(), body: JSON.stringify({ paymentID }) }).catch(
          () => undefined,
        );
      }
      const checked = await status(paymentID, `callback:${paymentID}`);
      const claimed = body.status === 'success' ? 'succeeded' : body.status === 'failure' ? 'failed' : body.status === 'cancel' ? 'cancelled' : null;
      if (!checked || checked.outcome !== claimed) throw invalidCallback(SLUG, "the gateway's status query does not confirm this callback");
      return checked;
    },

    callbackFromReturn(params) {
      const result = params.status === 'success' ? 'success' : params.status === 'cancel' ? 'cancel' : params.status === 'failure' ? 'fail' : null;
      if (!params.paymentID || !result) return null;
      return { callback: { method: 'GET', headers: {}, rawBody: '', query: { paymentID: params.paymentID, status: params.status! } }, result };
    },

    async requery(payment) {
      if (!payment.gatewayRef) return null;
      // An authorised payment whose callback was lost still needs its execute (refused harmlessly otherwise).
      await api('/tokenized/checkout/execute', { method: 'POST', headers: await headers(), body: JSON.stringify({ paymentID: payment.gatewayRef }) }).catch(
        () => undefined,
      );
      return status(payment.gatewayRef, `requery:${payment.gatewayRef}`);
    },
  };
}

/** The sandbox bKash: token grant, create, execute and status, and the callback its page sends. */
export function simulateWalletRegional1(settings: WalletRegional1Settings, ctx: SimContext): GatewaySimulator {
  const idToken = `sandbox-token-${settings.appKey.slice(0, 8)}`;
  const statusOf = (state: SimState) =>
    state.status === 'paid' || state.status === 'refunded'
      ? state.executed
        ? 'Completed'
        : 'Authorized'
      : state.status === 'failed'
        ? 'Failed'
        : state.status === 'cancelled'
          ? 'Cancelled'
          : 'Initiated';

  return {
    async handle(request) {
      const url = new URL(request.url);
      if (url.pathname.endsWith('/tokenized/checkout/token/grant')) {
        const body = (await request.json()) as BkashAnswer;
        const ok =
          request.headers.get('username') === settings.username &&
          request.headers.get('password') === settings.password &&
          body.app_key === settings.appKey &&
          body.app_secret === settings.appSecret;
        return ok
          ? json({ statusCode: '0000', id_token: idToken, token_type: 'Bearer', expires_in: 3600 })
          : json({ statusCode: '2079', statusMessage: 'Invalid username and password' });
      }
      if (request.headers.get('authorization') !== idToken || request.headers.get('x-app-key') !== settings.appKey)
        return json({ statusCode: '9999', statusMessage: 'Unauthorized' }, 401);
      const body = (await request.json()) as BkashAnswer;
      if (url.pathname.endsWith('/tokenized/checkout/create')) {
        const state: SimState = {
          paymentId: body.merchantInvoiceNumber,
          ref: gatewayId('TR0011'),
          status: 'open',
          amount: body.amount,
          currency: body.currency,
          callbackURL: body.callbackURL,
        };
        await ctx.store.save(state.paymentId, state);
        return json({
          statusCode: '0000',
          statusMessage: 'Successful',
          paymentID: state.ref,
          bkashURL: ctx.pageUrl(state.paymentId),
          amount: state.amount,
          currency: state.currency,
        });
      }
      const state = await ctx.store.findByRef(String(body.paymentID));
      if (!state) return json({ statusCode: '2056', statusMessage: 'Invalid Payment State' });
      if (url.pathname.endsWith('/tokenized/checkout/execute')) {
        if (state.status !== 'paid' || state.executed)
          return json({ statusCode: '2062', statusMessage: 'The payment has already been completed or was not authorised' });
        Object.assign(state, { executed: true, trxID: gatewayId('TRX').toUpperCase() });
        await ctx.store.save(state.paymentId, state);
      }
      if (url.pathname.endsWith('/tokenized/checkout/execute') || url.pathname.endsWith('/tokenized/checkout/payment/status')) {
        return json({
          statusCode: '0000',
          paymentID: state.ref,
          trxID: state.trxID ?? null,
          transactionStatus: statusOf(state),
          amount: state.amount,
          currency: state.currency,
          intent: 'sale',
          merchantInvoiceNumber: state.paymentId,
        });
      }
      return json({ statusCode: '9999', statusMessage: 'Unknown API' }, 404);
    },

    async press(paymentId, action) {
      const state = await ctx.store.load(paymentId);
      if (!state || state.status !== 'open') return null;
      state.status = action === 'pay' ? 'paid' : action === 'cancel' ? 'cancelled' : 'failed';
      await ctx.store.save(paymentId, state);
      const status = action === 'pay' ? 'success' : action === 'cancel' ? 'cancel' : 'failure';
      return {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        rawBody: JSON.stringify({ paymentID: state.ref, status, signature: 'n/a' }),
        query: {},
      };
    },
  };
}
