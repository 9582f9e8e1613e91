import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../../../platform/clock/clock.js';
import type { CallbackInput, ChannelAdapter, VerifiedCallback } from '../../types.js';
import {
  call,
  fromDecimal,
  gatewayId,
  header,
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
 * wallet_global: a PayPal-style wallet. Orders API v2 (create, approve on the gateway's page, capture on return);
 * webhooks carry `paypal-transmission-*` headers and are verified by the gateway itself through
 * `POST /v1/notifications/verify-webhook-signature` (answer `verification_status: SUCCESS`). The transmission time
 * must also be within 5 minutes of our clock, so a captured message cannot be replayed later.
 */
const SLUG = channelSettings.slug;
export const WALLET_GLOBAL_TOLERANCE_MS = 5 * 60_000;

export interface WalletGlobalSettings {
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  webhookId: string;
}

type PayPalObject = Record<string, any>;

export function createWalletGlobal(settings: WalletGlobalSettings, deps: { transport: Transport; clock: Clock; mode: 'live' | 'sandbox' }): ChannelAdapter {
  const api = <T>(path: string, init: RequestInit) => call<T>(deps.transport, SLUG, `${settings.baseUrl}${path}`, init);
  async function bearer(): Promise<Record<string, string>> {
    const token = await api<PayPalObject>('/v1/oauth2/token', {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${settings.clientId}:${settings.clientSecret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    });
    return { authorization: `Bearer ${String(token.access_token)}`, 'content-type': 'application/json' };
  }
  const fromOrder = (order: PayPalObject, eventKey: string): VerifiedCallback | null => {
    const unit = order.purchase_units?.[0] ?? {};
    const capture = unit.payments?.captures?.[0];
    if (order.status === 'COMPLETED' && capture?.status === 'COMPLETED') {
      return {
        eventKey,
        paymentId: unit.custom_id,
        gatewayRef: order.id,
        outcome: 'succeeded',
        gatewayTxnId: capture.id,
        amountCents: fromDecimal(capture.amount?.value),
        currency: capture.amount?.currency_code,
        agreementId: order.payment_source?.paypal?.attributes?.vault?.id ?? null,
        payload: order,
      };
    }
    if (order.status === 'VOIDED') return { eventKey, paymentId: unit.custom_id, gatewayRef: order.id, outcome: 'cancelled', payload: order };
    return null;
  };

  /** The one purchase unit of an order for our payment (its id as reference and custom id, read back on callbacks). */
  const purchaseUnits = (payment: { id: string; description: string; currency: string; amountCents: number }) => [
    {
      reference_id: payment.id,
      custom_id: payment.id,
      description: payment.description,
      amount: { currency_code: payment.currency, value: toDecimal(payment.amountCents) },
    },
  ];

  return {
    slug: SLUG,
    mode: deps.mode,

    async createCheckout(payment, context) {
      const order = await api<PayPalObject>('/v2/checkout/orders', {
        method: 'POST',
        headers: { ...(await bearer()), 'paypal-request-id': payment.id },
        body: JSON.stringify({
          intent: 'CAPTURE',
          purchase_units: purchaseUnits(payment),
          application_context: { return_url: context.returnUrl('success'), cancel_url: context.returnUrl('cancel'), user_action: 'PAY_NOW' },
          // A recurring purchase saves the wallet at the gateway (vault), so renewals can charge it without the customer.
          ...(payment.recurring ? { payment_source: { paypal: { attributes: { vault: { store_in_vault: 'ON_SUCCESS', usage_type: 'MERCHANT' } } } } } : {}),
        }),
      });
      const approve = (order.links as Array<{ rel: string; href: string }> | undefined)?.find((l) => l.rel === 'approve' || l.rel === 'payer-action');
      if (!approve) throw new Error('the order has no approval link');
      return { gatewayRef: order.id as string, redirectUrl: approve.href };
    },

    async verifyCallback(input: CallbackInput) {
      const names = ['paypal-transmission-id', 'paypal-transmission-time', 'paypal-transmission-sig', 'paypal-cert-url', 'paypal-auth-algo'] as const;
      const values = names.map((name) => header(input, name));
      if (values.some((v) => !v)) throw invalidCallback(SLUG, 'the PayPal transmission headers are missing');
      const [transmissionId, transmissionTime, transmissionSig, certUrl, authAlgo] = values as string[];
      const sent = Date.parse(transmissionTime!);
      if (!Number.isFinite(sent) || Math.abs(deps.clock.now().getTime() - sent) > WALLET_GLOBAL_TOLERANCE_MS)
        throw invalidCallback(SLUG, 'the transmission time is outside the 5-minute tolerance');
      const event = parseJsonBody(SLUG, input.rawBody);
      const answer = await api<PayPalObject>('/v1/notifications/verify-webhook-signature', {
        method: 'POST',
        headers: await bearer(),
        body: JSON.stringify({
          auth_algo: authAlgo,
          cert_url: certUrl,
          transmission_id: transmissionId,
          transmission_sig: transmissionSig,
          transmission_time: transmissionTime,
          webhook_id: settings.webhookId,
          webhook_event: event,
        }),
      });
      if (answer.verification_status !== 'SUCCESS') throw invalidCallback(SLUG, 'the gateway did not confirm the signature');
      const resource = (event.resource ?? {}) as PayPalObject;
      const base = { eventKey: String(event.id), paymentId: resource.custom_id as string | undefined, payload: event };
      switch (event.event_type) {
        case 'PAYMENT.CAPTURE.COMPLETED': {
          const orderId = resource.supplementary_data?.related_ids?.order_id as string | undefined;
          // The capture does not name the saved wallet; its order does (for recurring purchases).
          const order = orderId
            ? await api<PayPalObject>(`/v2/checkout/orders/${encodeURIComponent(orderId)}`, { method: 'GET', headers: await bearer() })
            : null;
          return {
            ...base,
            gatewayRef: orderId,
            outcome: 'succeeded',
            gatewayTxnId: resource.id,
            amountCents: fromDecimal(resource.amount?.value),
            currency: resource.amount?.currency_code,
            agreementId: order?.payment_source?.paypal?.attributes?.vault?.id ?? null,
          };
        }
        case 'PAYMENT.CAPTURE.DENIED':
          return { ...base, outcome: 'failed' };
        case 'CHECKOUT.ORDER.VOIDED':
          return { ...base, gatewayRef: resource.id, outcome: 'cancelled' };
        case 'PAYMENT.CAPTURE.REFUNDED':
          return { ...base, outcome: 'refunded', amountCents: fromDecimal(resource.amount?.value), currency: resource.amount?.currency_code };
        default:
          return { ...base, outcome: 'pending' };
      }
    },

    async requery(payment) {
      if (!payment.gatewayRef) return null;
      const order = await api<PayPalObject>(`/v2/checkout/orders/${encodeURIComponent(payment.gatewayRef)}`, { method: 'GET', headers: await bearer() });
      return fromOrder(order, `requery:${order.id}:${order.status}`);
    },

    async chargeAgreement(payment, agreementId) {
      const order = await api<PayPalObject>('/v2/checkout/orders', {
        method: 'POST',
        headers: { ...(await bearer()), 'paypal-request-id': payment.id },
        body: JSON.stringify({
          intent: 'CAPTURE',
          purchase_units: purchaseUnits(payment),
          payment_source: {
            paypal: { vault_id: agreementId, stored_credential: { payment_initiator: 'MERCHANT', usage: 'SUBSEQUENT', usage_pattern: 'SUBSCRIPTION_PREPAID' } },
          },
        }),
      });
      if (order.status !== 'COMPLETED') throw new Error(`the saved wallet was not charged (${String(order.status)})`);
      return { gatewayRef: String(order.id), redirectUrl: '' };
    },

    async revokeAgreement(agreementId) {
      const response = await deps.transport(`${settings.baseUrl}/v3/vault/payment-tokens/${encodeURIComponent(agreementId)}`, {
        method: 'DELETE',
        headers: await bearer(),
      });
      if (!response.ok && response.status !== 404) throw new Error(`the gateway kept the saved wallet (HTTP ${response.status})`);
    },

    async onReturn(payment, result) {
      // The customer approved the order on the gateway's page: capturing it is what moves the money.
      if (result !== 'success' || !payment.gatewayRef || payment.status !== 'PENDING') return;
      await api(`/v2/checkout/orders/${encodeURIComponent(payment.gatewayRef)}/capture`, {
        method: 'POST',
        headers: { ...(await bearer()), 'paypal-request-id': `capture-${payment.id}` },
        body: '{}',
      });
    },

    async refund(payment) {
      await api(`/v2/payments/captures/${encodeURIComponent(payment.gatewayTxnId ?? '')}/refund`, {
        method: 'POST',
        headers: { ...(await bearer()), 'paypal-request-id': `refund-${payment.id}` },
        body: JSON.stringify({ custom_id: payment.id, note_to_payer: 'Refund' }),
      });
    },
  };
}

/** The sandbox PayPal: OAuth, Orders v2, capture, refunds, and webhooks it signs and verifies itself (verify endpoint). */
export function simulateWalletGlobal(settings: WalletGlobalSettings, ctx: SimContext): GatewaySimulator {
  const signingKey = `${settings.clientSecret}:${settings.webhookId}`;
  const sign = (id: string, time: string, body: string) =>
    createHmac('sha256', signingKey).update(`${id}|${time}|${settings.webhookId}|${body}`).digest('base64');
  const orderOf = (state: SimState) => ({
    id: state.ref,
    status:
      state.status === 'paid' || state.status === 'refunded' ? 'COMPLETED' : state.status === 'cancelled' ? 'VOIDED' : state.approved ? 'APPROVED' : 'CREATED',
    purchase_units: [
      {
        reference_id: state.paymentId,
        custom_id: state.paymentId,
        amount: { currency_code: state.currency, value: state.value },
        payments: state.captureId
          ? {
              captures: [
                {
                  id: state.captureId,
                  status: state.status === 'refunded' ? 'REFUNDED' : 'COMPLETED',
                  amount: { currency_code: state.currency, value: state.value },
                },
              ],
            }
          : undefined,
      },
    ],
    links: [{ rel: 'approve', href: ctx.pageUrl(state.paymentId), method: 'GET' }],
    ...(state.vaultId ? { payment_source: { paypal: { attributes: { vault: { id: state.vaultId, status: 'VAULTED' } } } } } : {}),
  });
  const webhook = (eventType: string, resource: unknown): CallbackInput => {
    const rawBody = JSON.stringify({
      id: gatewayId('WH-'),
      event_type: eventType,
      resource_type: 'capture',
      create_time: ctx.clock.now().toISOString(),
      resource,
    });
    const id = gatewayId('');
    const time = ctx.clock.now().toISOString();
    return {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'paypal-transmission-id': id,
        'paypal-transmission-time': time,
        'paypal-transmission-sig': sign(id, time, rawBody),
        'paypal-cert-url': 'https://api.paypal.com/v1/notifications/certs/CERT-sandbox',
        'paypal-auth-algo': 'SHA256withRSA',
      },
      rawBody,
      query: {},
    };
  };
  const captureEvent = (state: SimState, type: string) =>
    webhook(type, {
      id: state.captureId,
      status: 'COMPLETED',
      custom_id: state.paymentId,
      amount: { currency_code: state.currency, value: state.value },
      supplementary_data: { related_ids: { order_id: state.ref } },
    });
  const token = `A21AA${settings.clientId.slice(0, 8)}sandbox`;

  return {
    async handle(request) {
      const url = new URL(request.url);
      const path = url.pathname.replace(/^.*?(\/v[123]\/)/, '$1');
      if (path === '/v1/oauth2/token') {
        const expected = `Basic ${Buffer.from(`${settings.clientId}:${settings.clientSecret}`).toString('base64')}`;
        return request.headers.get('authorization') === expected
          ? json({ access_token: token, token_type: 'Bearer', expires_in: 32400 })
          : json({ error: 'invalid_client' }, 401);
      }
      if (request.headers.get('authorization') !== `Bearer ${token}`) return json({ name: 'AUTHENTICATION_FAILURE' }, 401);
      if (request.method === 'POST' && path === '/v2/checkout/orders') {
        const body = (await request.json()) as PayPalObject;
        const unit = body.purchase_units[0];
        const state: SimState = {
          paymentId: unit.custom_id,
          ref: gatewayId('ORDER'),
          status: 'open',
          currency: unit.amount.currency_code,
          value: unit.amount.value,
        };
        const vaultId = body.payment_source?.paypal?.vault_id as string | undefined;
        if (vaultId) {
          // A merchant-initiated charge of a saved wallet: captured at once, no customer present.
          const saved = await ctx.store.findByRef(vaultId.replace(/^VAULT-/, ''));
          if (!saved?.vaultId || saved.vaultId !== vaultId || saved.vaultRevoked)
            return json({ name: 'UNPROCESSABLE_ENTITY', details: [{ issue: 'INVALID_VAULT_ID' }] }, 422);
          Object.assign(state, { status: 'paid', captureId: gatewayId('CAP') });
          await ctx.store.save(state.paymentId, state);
          await ctx.deliver(captureEvent(state, 'PAYMENT.CAPTURE.COMPLETED'));
          return json(orderOf(state), 201);
        }
        if (body.payment_source?.paypal?.attributes?.vault?.store_in_vault === 'ON_SUCCESS') state.vaultRequested = true;
        await ctx.store.save(state.paymentId, state);
        return json(orderOf(state), 201);
      }
      if (request.method === 'POST' && path === '/v1/notifications/verify-webhook-signature') {
        const body = (await request.json()) as PayPalObject;
        const expected = Buffer.from(sign(body.transmission_id, body.transmission_time, JSON.stringify(body.webhook_event)));
        const given = Buffer.from(String(body.transmission_sig));
        const ok = body.webhook_id === settings.webhookId && given.length === expected.length && timingSafeEqual(given, expected);
        return json({ verification_status: ok ? 'SUCCESS' : 'FAILURE' });
      }
      const order = /^\/v2\/checkout\/orders\/([^/]+)(\/capture)?$/.exec(path);
      if (order) {
        const state = await ctx.store.findByRef(decodeURIComponent(order[1]!));
        if (!state) return json({ name: 'RESOURCE_NOT_FOUND' }, 404);
        if (request.method === 'POST' && order[2]) {
          if (state.status === 'open' && state.approved) {
            Object.assign(state, { status: 'paid', captureId: gatewayId('CAP'), ...(state.vaultRequested ? { vaultId: `VAULT-${state.ref}` } : {}) });
            await ctx.store.save(state.paymentId, state);
            await ctx.deliver(captureEvent(state, 'PAYMENT.CAPTURE.COMPLETED'));
          } else if (state.status !== 'paid') return json({ name: 'UNPROCESSABLE_ENTITY', details: [{ issue: 'ORDER_NOT_APPROVED' }] }, 422);
          return json(orderOf(state), 201);
        }
        return json(orderOf(state));
      }
      const vaultToken = /^\/v3\/vault\/payment-tokens\/([^/]+)$/.exec(path);
      if (vaultToken && request.method === 'DELETE') {
        const saved = await ctx.store.findByRef(decodeURIComponent(vaultToken[1]!).replace(/^VAULT-/, ''));
        if (!saved?.vaultId) return json({ name: 'RESOURCE_NOT_FOUND' }, 404);
        saved.vaultRevoked = true;
        await ctx.store.save(saved.paymentId, saved);
        return new Response(null, { status: 204 });
      }
      const refund = /^\/v2\/payments\/captures\/([^/]+)\/refund$/.exec(path);
      if (refund && request.method === 'POST') {
        const body = (await request.json()) as PayPalObject;
        const state = await ctx.store.load(String(body.custom_id ?? ''));
        if (!state || state.status !== 'paid' || state.captureId !== decodeURIComponent(refund[1]!)) return json({ name: 'RESOURCE_NOT_FOUND' }, 404);
        state.status = 'refunded';
        await ctx.store.save(state.paymentId, state);
        await ctx.deliver(captureEvent(state, 'PAYMENT.CAPTURE.REFUNDED'));
        return json({ id: gatewayId('REF'), status: 'COMPLETED' }, 201);
      }
      return json({ name: 'RESOURCE_NOT_FOUND' }, 404);
    },

    async press(paymentId, action) {
      const state = await ctx.store.load(paymentId);
      if (!state || state.status !== 'open') return null;
      if (action === 'pay') {
        // Approval on the gateway's page; the capture (on our return route) moves the money and sends the webhook.
        state.approved = true;
        await ctx.store.save(paymentId, state);
        return null;
      }
      state.status = action === 'cancel' ? 'cancelled' : 'failed';
      await ctx.store.save(paymentId, state);
      return action === 'cancel'
        ? webhook('CHECKOUT.ORDER.VOIDED', { id: state.ref, custom_id: paymentId })
        : captureEvent({ ...state, captureId: null }, 'PAYMENT.CAPTURE.DENIED');
    },
  };
}
