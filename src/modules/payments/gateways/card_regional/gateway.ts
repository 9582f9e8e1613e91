import type { Clock } from '../../../../platform/clock/clock.js';
import type { CallbackInput, ChannelAdapter, VerifiedCallback } from '../../types.js';
import {
  call,
  form,
  fromDecimal,
  gatewayId,
  invalidCallback,
  json,
  toDecimal,
  type GatewaySimulator,
  type SimContext,
  type SimState,
  type Transport,
} from '../common.js';
import { settings as channelSettings } from './settings.js';

/**
 * card_regional: an SSLCommerz-style gateway. A session is opened on `gwprocess/v4/api.php` with our `tran_id`; its
 * IPN (a form POST) is never believed as sent: the transaction is re-validated by `val_id` through the gateway's
 * validation API, and only its answer (status VALID/VALIDATED, our tran_id, the amount) counts. Failed and cancelled
 * IPNs carry no `val_id` and are checked by the transaction query API instead.
 */
const SLUG = channelSettings.slug;

export interface CardRegionalSettings {
  baseUrl: string;
  storeId: string;
  storePassword: string;
}

type SslAnswer = Record<string, any>;

export function createCardRegional(settings: CardRegionalSettings, deps: { transport: Transport; clock: Clock; mode: 'live' | 'sandbox' }): ChannelAdapter {
  const api = <T>(path: string, init: RequestInit) => call<T>(deps.transport, SLUG, `${settings.baseUrl}${path}`, init);
  const credentials = `store_id=${encodeURIComponent(settings.storeId)}&store_passwd=${encodeURIComponent(settings.storePassword)}&format=json`;

  async function byTransaction(tranId: string, eventKey: string): Promise<VerifiedCallback | null> {
    const answer = await api<SslAnswer>(`/validator/api/merchantTransIDvalidationAPI.php?tran_id=${encodeURIComponent(tranId)}&${credentials}`, {
      method: 'GET',
    });
    const element = (answer.element as SslAnswer[] | undefined)?.[0];
    if (!element) return null;
    if (element.status === 'VALID' || element.status === 'VALIDATED') {
      return {
        eventKey: `${eventKey}:${String(element.val_id)}`,
        paymentId: tranId,
        outcome: 'succeeded',
        gatewayTxnId: String(element.bank_tran_id ?? element.val_id),
        amountCents: fromDecimal(element.amount),
        currency: element.currency_type ?? element.currency,
        payload: answer,
      };
    }
    if (element.status === 'FAILED') return { eventKey: `${eventKey}:failed`, paymentId: tranId, outcome: 'failed', payload: answer };
    if (element.status === 'CANCELLED') return { eventKey: `${eventKey}:cancelled`, paymentId: tranId, outcome: 'cancelled', payload: answer };
    return null;
  }

  return {
    slug: SLUG,
    mode: deps.mode,

    async createCheckout(payment, context) {
      const answer = await api<SslAnswer>('/gwprocess/v4/api.php', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: form({
          store_id: settings.storeId,
          store_passwd: settings.storePassword,
          total_amount: toDecimal(payment.amountCents),
          currency: payment.currency,
          tran_id: payment.id,
          success_url: context.returnUrl('success'),
          fail_url: context.returnUrl('fail'),
          cancel_url: context.returnUrl('cancel'),
          ipn_url: context.callbackUrl,
          product_name: payment.description,
          product_category: 'digital',
          product_profile: 'non-physical-goods',
          shipping_method: 'NO',
          cus_name: 'Customer',
          cus_email: 'customer@example.com',
          cus_phone: '00000000000',
          cus_add1: 'N/A',
          cus_city: 'Dhaka',
          cus_country: 'Bangladesh',
        }),
      });
      if (answer.status !== 'SUCCESS' || !answer.GatewayPageURL) throw new Error(`session refused: ${String(answer.failedreason ?? answer.status)}`);
      return { gatewayRef: payment.id, redirectUrl: String(answer.GatewayPageURL) };
    },

    async verifyCallback(input: CallbackInput) {
      const ipn = Object.fromEntries(new URLSearchParams(input.rawBody));
      const tranId = ipn.tran_id;
      if (!tranId) throw invalidCallback(SLUG, 'tran_id is missing');
      if (ipn.status === 'VALID' || ipn.status === 'VALIDATED') {
        if (!ipn.val_id) throw invalidCallback(SLUG, 'val_id is missing');
        const answer = await api<SslAnswer>(`/validator/api/validationserverAPI.php?val_id=${encodeURIComponent(ipn.val_id)}&${credentials}`, {
          method: 'GET',
        });
        if ((answer.status !== 'VALID' && answer.status !== 'VALIDATED') || answer.tran_id !== tranId)
          throw invalidCallback(SLUG, 'the gateway did not validate this transaction');
        const validated = fromDecimal(answer.amount);
        if (ipn.amount !== undefined && fromDecimal(ipn.amount) !== validated) throw invalidCallback(SLUG, 'the amount differs from the validated transaction');
        return {
          eventKey: `ipn:${ipn.val_id}`,
          paymentId: tranId,
          outcome: 'succeeded',
          gatewayTxnId: String(answer.bank_tran_id ?? ipn.val_id),
          amountCents: validated,
          currency: answer.currency_type ?? answer.currency,
          payload: { ipn, validation: answer },
        };
      }
      // Failures and cancellations are re-read from the gateway too, so nobody can cancel another's checkout.
      const checked = await byTransaction(tranId, 'ipn');
      if (!checked || checked.outcome === 'succeeded' || checked.outcome !== (ipn.status === 'FAILED' ? 'failed' : 'cancelled')) {
        throw invalidCallback(SLUG, 'the gateway does not report this outcome for the transaction');
      }
      return checked;
    },

    callbackFromReturn(params) {
      // The gateway posts the transaction's fields to success_url/fail_url/cancel_url with the browser: the same
      // verification as its IPN applies (an IPN lost on the way is made good by the customer's return).
      if (!params.tran_id || !params.status) return null;
      const result = params.status === 'VALID' || params.status === 'VALIDATED' ? 'success' : params.status === 'FAILED' ? 'fail' : 'cancel';
      return { callback: { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, rawBody: form(params), query: {} }, result };
    },

    async requery(payment) {
      return byTransaction(payment.id, 'requery');
    },
  };
}

/** The sandbox SSLCommerz: session API, validation by val_id, query by tran_id, and the IPN form posts. */
export function simulateCardRegional(settings: CardRegionalSettings, ctx: SimContext): GatewaySimulator {
  const authorised = (params: URLSearchParams) => params.get('store_id') === settings.storeId && params.get('store_passwd') === settings.storePassword;
  const statusOf = (state: SimState) =>
    state.status === 'paid' || state.status === 'refunded'
      ? 'VALID'
      : state.status === 'failed'
        ? 'FAILED'
        : state.status === 'cancelled'
          ? 'CANCELLED'
          : 'PENDING';
  const element = (state: SimState) => ({
    status: statusOf(state),
    tran_id: state.paymentId,
    val_id: state.valId ?? null,
    amount: state.amount,
    currency_type: state.currency,
    bank_tran_id: state.bankTranId ?? null,
    tran_date: state.tranDate ?? null,
  });

  return {
    async handle(request) {
      const url = new URL(request.url);
      if (request.method === 'POST' && url.pathname.endsWith('/gwprocess/v4/api.php')) {
        const fields = new URLSearchParams(await request.text());
        if (!authorised(fields)) return json({ status: 'FAILED', failedreason: 'Store Credential Error Or Store is De-active' });
        const paymentId = fields.get('tran_id')!;
        await ctx.store.save(paymentId, { paymentId, ref: paymentId, status: 'open', amount: fields.get('total_amount'), currency: fields.get('currency') });
        return json({ status: 'SUCCESS', sessionkey: gatewayId(''), GatewayPageURL: ctx.pageUrl(paymentId) });
      }
      if (!authorised(url.searchParams)) return json({ APIConnect: 'INVALID_REQUEST' });
      if (url.pathname.endsWith('/validator/api/validationserverAPI.php')) {
        const valId = url.searchParams.get('val_id') ?? '';
        const paymentId = valId.replace(/^val_sandbox_/, '').split('_')[0] ?? '';
        const state = await ctx.store.load(paymentId);
        if (!state || state.valId !== valId) return json({ status: 'INVALID_TRANSACTION' });
        return json({ ...element(state), status: statusOf(state) === 'VALID' ? 'VALID' : 'INVALID_TRANSACTION', APIConnect: 'DONE' });
      }
      if (url.pathname.endsWith('/validator/api/merchantTransIDvalidationAPI.php')) {
        const state = await ctx.store.load(url.searchParams.get('tran_id') ?? '');
        return json({ APIConnect: 'DONE', no_of_trans_found: state ? 1 : 0, element: state ? [element(state)] : [] });
      }
      return json({ APIConnect: 'INVALID_REQUEST' }, 404);
    },

    async press(paymentId, action) {
      const state = await ctx.store.load(paymentId);
      if (!state || state.status !== 'open') return null;
      if (action === 'pay') {
        Object.assign(state, {
          status: 'paid',
          valId: `val_sandbox_${paymentId}_${gatewayId('')}`,
          bankTranId: gatewayId('BT'),
          tranDate: ctx.clock.now().toISOString(),
        });
      } else state.status = action === 'cancel' ? 'cancelled' : 'failed';
      await ctx.store.save(paymentId, state);
      const ipn: Record<string, string> = { tran_id: paymentId, status: statusOf(state), amount: String(state.amount), currency: String(state.currency) };
      if (state.valId) Object.assign(ipn, { val_id: state.valId, bank_tran_id: state.bankTranId, tran_date: state.tranDate });
      return { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, rawBody: form(ipn), query: {} };
    },
  };
}
