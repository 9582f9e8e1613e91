import { createPrivateKey, createPublicKey, createSign, createVerify, type KeyObject } from 'node:crypto';
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
 * wallet_regional_2: a Nagad-style wallet. Requests to the gateway carry `sensitiveData` signed with the merchant's
 * RSA key; the gateway's callback carries an RSA-SHA256 signature (the gateway's key) over its fields, which we check
 * with the gateway's public key (node:crypto), together with a `dateTime` within 5 minutes of our clock.
 */
const SLUG = channelSettings.slug;
export const WALLET_REGIONAL_2_TOLERANCE_MS = 5 * 60_000;
const CALLBACK_FIELDS = ['merchantId', 'orderId', 'paymentRefId', 'amount', 'currency', 'status', 'issuerPaymentRefNo', 'dateTime'] as const;

export interface WalletRegional2Settings {
  baseUrl: string;
  merchantId: string;
  /** PEM. */
  merchantPrivateKey: string;
  /** PEM. */
  gatewayPublicKey: string;
}

type NagadAnswer = Record<string, any>;

export const rsaSign = (key: KeyObject | string, text: string) => createSign('RSA-SHA256').update(text).sign(key, 'base64');
export const rsaVerify = (key: KeyObject | string, text: string, signature: string) => {
  try {
    return createVerify('RSA-SHA256').update(text).verify(key, signature, 'base64');
  } catch {
    return false;
  }
};
/** The text the gateway signs for a callback: its fields in a fixed order, `|`-separated. */
export const callbackSigningText = (fields: Record<string, unknown>) =>
  CALLBACK_FIELDS.map((name) => {
    const value = fields[name];
    return typeof value === 'string' || typeof value === 'number' ? String(value) : '';
  }).join('|');

/** `YYYYMMDDHHmmss` in UTC, the gateway's timestamp format. */
export const nagadDateTime = (date: Date) => date.toISOString().replace(/[-:T]/g, '').slice(0, 14);
const parseNagadDateTime = (text: string) => {
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})$/.exec(text);
  return m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])) : NaN;
};

export function createWalletRegional2(
  settings: WalletRegional2Settings,
  deps: { transport: Transport; clock: Clock; mode: 'live' | 'sandbox' },
): ChannelAdapter {
  const api = <T>(path: string, init: RequestInit) => call<T>(deps.transport, SLUG, `${settings.baseUrl}${path}`, init);
  const merchantKey = createPrivateKey(settings.merchantPrivateKey);
  const gatewayKey = createPublicKey(settings.gatewayPublicKey);
  const headers = { 'content-type': 'application/json', 'x-km-api-version': 'v-0.2.0', 'x-km-client-type': 'PC_WEB' };

  return {
    slug: SLUG,
    mode: deps.mode,

    async createCheckout(payment, context) {
      const orderId = payment.id.replace(/-/g, '');
      const sensitive = JSON.stringify({
        merchantId: settings.merchantId,
        orderId,
        datetime: nagadDateTime(deps.clock.now()),
        amount: toDecimal(payment.amountCents),
        currencyCode: payment.currency,
        merchantCallbackURL: context.callbackUrl,
        additionalMerchantInfo: { paymentId: payment.id },
      });
      const answer = await api<NagadAnswer>(`/api/dfs/check-out/initialize/${encodeURIComponent(settings.merchantId)}/${orderId}`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          dateTime: nagadDateTime(deps.clock.now()),
          sensitiveData: Buffer.from(sensitive).toString('base64'),
          signature: rsaSign(merchantKey, sensitive),
        }),
      });
      if (answer.status !== 'Success' || !answer.callBackUrl) throw new Error(`initialize refused: ${String(answer.message ?? answer.status)}`);
      return { gatewayRef: String(answer.paymentReferenceId), redirectUrl: String(answer.callBackUrl) };
    },

    async verifyCallback(input: CallbackInput) {
      const body = input.method === 'GET' ? input.query : parseJsonBody(SLUG, input.rawBody);
      if (typeof body.signature !== 'string' || !rsaVerify(gatewayKey, callbackSigningText(body), body.signature))
        throw invalidCallback(SLUG, 'the RSA signature does not verify');
      if (body.merchantId !== settings.merchantId) throw invalidCallback(SLUG, 'the callback is for another merchant');
      const sent = parseNagadDateTime(String(body.dateTime));
      if (!Number.isFinite(sent) || Math.abs(deps.clock.now().getTime() - sent) > WALLET_REGIONAL_2_TOLERANCE_MS)
        throw invalidCallback(SLUG, 'dateTime is outside the 5-minute tolerance');
      const outcome = body.status === 'Success' ? 'succeeded' : body.status === 'Aborted' ? 'cancelled' : body.status === 'Failed' ? 'failed' : 'pending';
      return {
        eventKey: `${String(body.paymentRefId)}:${String(body.status)}:${String(body.issuerPaymentRefNo ?? '')}`,
        gatewayRef: String(body.paymentRefId),
        outcome,
        gatewayTxnId: outcome === 'succeeded' ? String(body.issuerPaymentRefNo) : null,
        amountCents: fromDecimal(body.amount),
        currency: String(body.currency),
        payload: body,
      };
    },

    async requery(payment): Promise<VerifiedCallback | null> {
      if (!payment.gatewayRef) return null;
      const answer = await api<NagadAnswer>(`/api/dfs/verify/payment/${encodeURIComponent(payment.gatewayRef)}`, { method: 'GET', headers });
      const base = { gatewayRef: payment.gatewayRef, payload: answer };
      if (answer.status === 'Success') {
        return {
          ...base,
          eventKey: `requery:${payment.gatewayRef}:${String(answer.issuerPaymentRefNo)}`,
          outcome: 'succeeded',
          gatewayTxnId: String(answer.issuerPaymentRefNo),
          amountCents: fromDecimal(answer.amount),
          currency: answer.currency,
        };
      }
      if (answer.status === 'Aborted' || answer.status === 'Cancelled')
        return { ...base, eventKey: `requery:${payment.gatewayRef}:aborted`, outcome: 'cancelled' };
      if (answer.status === 'Failed') return { ...base, eventKey: `requery:${payment.gatewayRef}:failed`, outcome: 'failed' };
      return null;
    },
  };
}

/** The sandbox Nagad: checks the merchant's signature on initialize, signs its callbacks with its own key. */
export function simulateWalletRegional2(
  settings: WalletRegional2Settings & { merchantPublicKey: string; gatewayPrivateKey: string },
  ctx: SimContext,
): GatewaySimulator {
  const merchantKey = createPublicKey(settings.merchantPublicKey);
  const gatewayKey = createPrivateKey(settings.gatewayPrivateKey);
  const statusOf = (state: SimState) =>
    state.status === 'paid' || state.status === 'refunded'
      ? 'Success'
      : state.status === 'cancelled'
        ? 'Aborted'
        : state.status === 'failed'
          ? 'Failed'
          : 'Initiated';

  return {
    async handle(request) {
      const url = new URL(request.url);
      const init = /\/api\/dfs\/check-out\/initialize\/([^/]+)\/([^/]+)$/.exec(url.pathname);
      if (init && request.method === 'POST') {
        const body = (await request.json()) as NagadAnswer;
        const sensitive = Buffer.from(String(body.sensitiveData), 'base64').toString();
        if (decodeURIComponent(init[1]!) !== settings.merchantId || !rsaVerify(merchantKey, sensitive, String(body.signature)))
          return json({ status: 'Failed', message: 'Invalid merchant signature' }, 400);
        const data = JSON.parse(sensitive) as NagadAnswer;
        const state: SimState = {
          paymentId: data.additionalMerchantInfo.paymentId,
          ref: gatewayId('NGD'),
          orderId: data.orderId,
          status: 'open',
          amount: data.amount,
          currency: data.currencyCode,
        };
        await ctx.store.save(state.paymentId, state);
        return json({ status: 'Success', paymentReferenceId: state.ref, callBackUrl: ctx.pageUrl(state.paymentId) });
      }
      const verify = /\/api\/dfs\/verify\/payment\/([^/]+)$/.exec(url.pathname);
      if (verify) {
        const state = await ctx.store.findByRef(decodeURIComponent(verify[1]!));
        if (!state) return json({ status: 'Failed', message: 'Invalid payment reference' }, 404);
        return json({
          merchantId: settings.merchantId,
          orderId: state.orderId,
          paymentRefId: state.ref,
          amount: state.amount,
          currency: state.currency,
          status: statusOf(state),
          issuerPaymentRefNo: state.issuerRef ?? null,
        });
      }
      return json({ status: 'Failed', message: 'Unknown API' }, 404);
    },

    async press(paymentId, action) {
      const state = await ctx.store.load(paymentId);
      if (!state || state.status !== 'open') return null;
      if (action === 'pay') Object.assign(state, { status: 'paid', issuerRef: gatewayId('ISS') });
      else state.status = action === 'cancel' ? 'cancelled' : 'failed';
      await ctx.store.save(paymentId, state);
      const fields: Record<string, string> = {
        merchantId: settings.merchantId,
        orderId: state.orderId,
        paymentRefId: state.ref,
        amount: String(state.amount),
        currency: String(state.currency),
        status: statusOf(state),
        issuerPaymentRefNo: String(state.issuerRef ?? ''),
        dateTime: nagadDateTime(ctx.clock.now()),
      };
      return {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        rawBody: JSON.stringify({ ...fields, signature: rsaSign(gatewayKey, callbackSigningText(fields)) }),
        query: {},
      };
    },
  };
}
