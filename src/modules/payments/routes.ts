import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { badRequest } from '../../platform/http/errors.js';
import { errorResponses } from '../../platform/http/schemas.js';
import {
  AgreementCancelled,
  AgreementList,
  ChannelList,
  CheckoutBody,
  CheckoutResponse,
  EmptyQuery,
  Html,
  Payment,
  PaymentParams,
  ProviderParams,
  RecurringCancelled,
  ReturnQuery,
  SandboxForm,
  SandboxQuery,
  VerifyPinBody,
  VerifyPinResponse,
  WebhookAck,
  WebhookQuery,
} from './schemas.js';
import type { PaymentsService } from './service.js';
import type { CallbackInput } from './types.js';

export interface PaymentRoutesOptions {
  payments: PaymentsService;
}

const Redirect = Type.Null({ description: 'A redirect (Location header)' });
const GatewayBody = Type.Record(Type.String(), Type.Unknown(), { description: 'Gateway-defined; verified over its raw bytes' });
const parseRecurring = (value: unknown): boolean | undefined => (value === undefined ? undefined : value === true || value === 1 || value === 'true');

export const paymentRoutes: FastifyPluginAsyncTypebox<PaymentRoutesOptions> = async (app, { payments }) => {
  const tags = ['payments'];
  const auth = { auth: 'required' } as const;

  // Gateway signatures are computed over the exact bytes: this plugin keeps them beside the parsed body.
  const rawBodies = new WeakMap<FastifyRequest, string>();
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    rawBodies.set(request, text);
    try {
      done(null, text.length > 0 ? JSON.parse(text) : {});
    } catch {
      done(badRequest('The body is not valid JSON.'), undefined);
    }
  });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (request, body, done) => {
    rawBodies.set(request, body as string);
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });
  const callbackOf = (request: FastifyRequest, method: 'GET' | 'POST'): CallbackInput => ({
    method,
    headers: Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v.join(',') : v])),
    rawBody: rawBodies.get(request) ?? '',
    query: { ...(request.query as Record<string, string>) },
  });

  app.get(
    '/v1/payments/channels',
    {
      schema: {
        tags,
        summary: 'Payment channels that can take payments now, with the fields checkout needs',
        querystring: EmptyQuery,
        response: { 200: ChannelList },
      },
    },
    async () => payments.listChannels(),
  );

  app.post(
    '/v1/payments/checkout',
    {
      config: auth,
      schema: {
        tags,
        summary: 'Buy or change a plan through a payment channel; answers the hosted redirectUrl (or a branch response)',
        description: 'Reaching successUrl is not proof of payment: poll GET /v1/payments/{id} or GET /v1/subscriptions until the gateway confirms.',
        body: CheckoutBody,
        response: { 200: CheckoutResponse, ...errorResponses(400, 401, 404, 409, 503) },
      },
    },
    async (request) => {
      const { recurring, ...body } = request.body;
      const parsed = parseRecurring(recurring);
      return payments.checkout(principalOf(request).userId, { ...body, ...(parsed !== undefined ? { recurring: parsed } : {}) });
    },
  );

  app.get(
    '/v1/payments/agreements',
    {
      config: auth,
      schema: {
        tags,
        summary: 'Your saved recurring payment authorisations',
        querystring: EmptyQuery,
        response: { 200: AgreementList, ...errorResponses(401) },
      },
    },
    async (request) => payments.listAgreements(principalOf(request).userId),
  );

  app.delete(
    '/v1/payments/agreements/:id',
    {
      config: auth,
      schema: {
        tags,
        summary: 'Stop charging a saved account (renewals on it stop)',
        params: PaymentParams,
        response: { 200: AgreementCancelled, ...errorResponses(401, 404) },
      },
    },
    async (request) => payments.cancelAgreement(principalOf(request).userId, request.params.id),
  );

  app.delete(
    '/v1/payments/recurring/:id',
    {
      config: auth,
      schema: {
        tags,
        summary: 'Cancel an auto-renewing subscription: future cycles stop, the paid cycle runs to its end',
        params: PaymentParams,
        response: { 200: RecurringCancelled, ...errorResponses(400, 401, 404) },
      },
    },
    async (request) => payments.cancelRecurring(principalOf(request).userId, request.params.id),
  );

  app.post(
    '/v1/payments/dcb/verify-pin',
    {
      config: auth,
      schema: {
        tags,
        summary: "Send the carrier's 5-digit PIN for a carrier billing payment",
        body: VerifyPinBody,
        response: { 200: VerifyPinResponse, ...errorResponses(400, 401, 404, 503) },
      },
    },
    async (request) => payments.verifyPin(principalOf(request).userId, request.body),
  );

  app.get(
    '/v1/payments/:id',
    {
      config: auth,
      schema: {
        tags,
        summary: 'One of your payments',
        params: PaymentParams,
        querystring: EmptyQuery,
        response: { 200: Payment, ...errorResponses(401, 404) },
      },
    },
    async (request) => payments.get(principalOf(request).userId, request.params.id),
  );

  const returnSchema = {
    tags,
    summary: 'Where a gateway sends the browser back; redirects to the successUrl or cancelUrl given at checkout',
    description: 'Some gateways append their outcome (query) or post it (form): it is verified like a callback first.',
    params: PaymentParams,
    querystring: ReturnQuery,
    response: { 302: Redirect, ...errorResponses(404) },
  };
  const returnParams = (request: FastifyRequest) => {
    const out: Record<string, string> = {};
    for (const source of [request.query, request.body]) {
      for (const [key, value] of Object.entries((source ?? {}) as Record<string, unknown>)) if (typeof value === 'string') out[key] = value;
    }
    return out;
  };
  app.get('/v1/payments/return/:id', { schema: returnSchema }, async (request, reply) =>
    reply.redirect(await payments.returnTo(request.params.id, request.query.result, returnParams(request)), 302),
  );
  app.post('/v1/payments/return/:id', { schema: { ...returnSchema, body: GatewayBody } }, async (request, reply) =>
    reply.redirect(await payments.returnTo(request.params.id, request.query.result, returnParams(request)), 302),
  );

  app.get(
    '/v1/payments/sandbox/:id',
    {
      schema: {
        tags,
        summary: 'Sandbox checkout page (channels without credentials)',
        params: PaymentParams,
        querystring: SandboxQuery,
        response: { 200: Html, ...errorResponses(404) },
      },
    },
    async (request, reply) =>
      reply
        .type('text/html; charset=utf-8')
        .header('cache-control', 'no-store')
        .send(await payments.sandbox.page(request.params.id, request.query.t)),
  );

  app.post(
    '/v1/payments/sandbox/:id',
    {
      schema: {
        tags,
        summary: 'A sandbox checkout button: the simulated gateway sends its signed callback, then the browser returns',
        params: PaymentParams,
        body: SandboxForm,
        response: { 303: Redirect, ...errorResponses(400, 404) },
      },
    },
    async (request, reply) => reply.redirect(await payments.sandbox.press(request.params.id, request.body.t, request.body.action, request.body.pin), 303),
  );

  app.post(
    '/v1/payments/webhook/:provider',
    {
      schema: {
        tags,
        summary: "Gateway callback (card, wallet and bank-style gateways), verified by the channel's own method",
        params: ProviderParams,
        querystring: WebhookQuery,
        body: GatewayBody,
        response: { 200: WebhookAck, ...errorResponses(400, 404) },
      },
    },
    async (request) => payments.handleCallback(request.params.provider, callbackOf(request, 'POST')),
  );

  app.get(
    '/v1/payments/webhook/:provider',
    {
      schema: {
        tags,
        summary:
          "Carrier billing callback (unsigned GET): whatever it reports is believed only when the carrier's status query for its order_tracking_id says the same",
        params: ProviderParams,
        querystring: WebhookQuery,
        response: { 200: WebhookAck, ...errorResponses(400, 404) },
      },
    },
    async (request) => payments.handleCallback(request.params.provider, callbackOf(request, 'GET')),
  );
};
