import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { StrictObject, errorResponses } from '../../platform/http/schemas.js';
import { QuoteBody, TopUpOptions, TopUpQuote } from './schemas.js';
import type { TopUpService } from './service.js';

export interface TopUpRoutesOptions {
  topup: TopUpService;
}

export const topUpRoutes: FastifyPluginAsyncTypebox<TopUpRoutesOptions> = async (app, { topup }) => {
  const tags = ['topup'];

  app.get(
    '/v1/topup/options',
    { schema: { tags, summary: 'What the top-up builder offers: components, offers, channels and order limits', querystring: StrictObject({}), response: { 200: TopUpOptions, ...errorResponses(400) } } },
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
};
