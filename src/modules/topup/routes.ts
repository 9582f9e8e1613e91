import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { StrictObject, errorResponses } from '../../platform/http/schemas.js';
import { OrderBody, OrderParams, OrderPlaced, OrdersPage, OrdersQuery, QuoteBody, TopUpOptions, TopUpOrder, TopUpQuote } from './schemas.js';
import type { TopUpService } from './service.js';

export interface TopUpRoutesOptions {
  topup: TopUpService;
}

export const topUpRoutes: FastifyPluginAsyncTypebox<TopUpRoutesOptions> = async (app, { topup }) => {
  const tags = ['topup'];

  app.get(
    '/v1/topup/options',
    {
      schema: {
        tags,
        summary: 'What the top-up builder offers: components, offers, channels and order limits',
        querystring: StrictObject({}),
        response: { 200: TopUpOptions, ...errorResponses(400) },
      },
    },
    async () => topup.options(),
  );

  app.post(
    '/v1/topup/quote',
    {
      config: { auth: 'optional' },
      schema: {
        tags,
        summary: 'Price a top-up selection; an invalid selection answers 200 with valid: false and issues',
        description: 'A bearer token enables first-top-up and new-account offers; `channel` enables channel-only promotions.',
        body: QuoteBody,
        response: { 200: TopUpQuote, ...errorResponses(400, 401) },
      },
    },
    async (request) => topup.quote({ selection: request.body.selection, channel: request.body.channel, userId: request.principal?.userId ?? null }),
  );

  app.post(
    '/v1/topup/orders',
    {
      config: { auth: 'required' },
      schema: {
        tags,
        summary: 'Place a top-up: the server prices it again and opens the checkout',
        description:
          '409 PRICE_CHANGED (details: amountCents, totalTokens) when expectedAmountCents no longer matches; 400 for an invalid selection (details.issues), a channel that cannot take the amount, top-ups switched off or a couponCode.',
        body: OrderBody,
        response: { 200: OrderPlaced, ...errorResponses(400, 401, 409, 503) },
      },
    },
    async (request) => topup.placeOrder(request.principal!.userId, request.body),
  );

  app.get(
    '/v1/topup/orders/:id',
    {
      config: { auth: 'required' },
      schema: {
        tags,
        summary: 'One of your top-up orders (another user’s is 404)',
        params: OrderParams,
        querystring: StrictObject({}),
        response: { 200: TopUpOrder, ...errorResponses(400, 401, 404) },
      },
    },
    async (request) => topup.getOrder(request.principal!.userId, request.params.id),
  );

  app.get(
    '/v1/topup/orders',
    {
      config: { auth: 'required' },
      schema: {
        tags,
        summary: 'Your top-up orders, newest first (cursor-paged)',
        querystring: OrdersQuery,
        response: { 200: OrdersPage, ...errorResponses(400, 401) },
      },
    },
    async (request) => topup.listOrders(request.principal!.userId, { limit: request.query.limit ?? 20, cursor: request.query.cursor }),
  );
};
