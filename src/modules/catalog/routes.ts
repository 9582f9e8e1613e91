import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { errorResponses } from '../../platform/http/schemas.js';
import type { PlansService } from '../plans/service.js';
import { estimateRequestFor } from './estimate.js';
import { createListingCache, matchesEtag, type RenderedListing } from './listing-cache.js';
import { EstimateBody, EstimateResponse, Model, ModelsQuery, MyModel, MyModelsQuery, RatesResponse } from './schemas.js';
import type { CatalogService } from './service.js';

export interface CatalogRoutesOptions {
  catalog: CatalogService;
  plans: PlansService;
  /** The plan the user meters against (their active subscription's), or null. */
  activePlanId: (userId: string) => Promise<string | null>;
}

/** Sends a pre-rendered listing (its models were serialised once per catalog state), or 304 when the client has it. */
function sendListing(ifNoneMatch: string | undefined, reply: FastifyReply, listing: RenderedListing) {
  reply.header('etag', listing.etag).header('cache-control', 'private, no-cache');
  if (matchesEtag(ifNoneMatch, listing.etag)) return reply.code(304).send();
  return reply.type('application/json; charset=utf-8').send(listing.body);
}

export const catalogRoutes: FastifyPluginAsyncTypebox<CatalogRoutesOptions> = async (app, { catalog, plans, activePlanId }) => {
  const tags = ['models'];
  const listings = createListingCache();

  app.get(
    '/v1/models',
    {
      config: { auth: 'optional' },
      schema: {
        tags,
        summary: 'Models that can be served, ordered by type then slug',
        querystring: ModelsQuery,
        response: { 200: Type.Object({ items: Type.Array(Model) }), ...errorResponses(400) },
      },
    },
    async (request, reply) => {
      const principal = request.principal;
      const { type, provider, capability } = request.query;
      const [snapshot, access, planId] = await Promise.all([
        catalog.snapshot(),
        plans.access(),
        principal ? activePlanId(principal.userId) : Promise.resolve(null),
      ]);
      const variant = `${principal ? `plan:${planId ?? 'none'}` : 'anonymous'}|${type ?? ''}|${provider ?? ''}|${capability ?? ''}`;
      const listing = listings.get(snapshot, access, variant, () => {
        const items = catalog
          .filter(snapshot, { type, provider, capability })
          .map(
            (e) =>
              `${e.jsonOpen},"allowed":${principal ? access.allowed(planId, e.row.id) : null},"availableOn":${JSON.stringify(access.availableOn(e.row.id, planId))}}`,
          );
        return `{"items":[${items.join(',')}]}`;
      });
      return sendListing(request.headers['if-none-match'], reply, listing);
    },
  );

  app.get(
    '/v1/models/me',
    {
      config: { auth: 'required' },
      schema: {
        tags,
        summary: "Models the caller's plan grants (empty without a plan)",
        querystring: MyModelsQuery,
        response: { 200: Type.Object({ items: Type.Array(MyModel) }), ...errorResponses(400, 401) },
      },
    },
    async (request, reply) => {
      const planId = await activePlanId(principalOf(request).userId);
      if (!planId) return { items: [] };
      const [snapshot, access] = await Promise.all([catalog.snapshot(), plans.access()]);
      const { type } = request.query;
      const listing = listings.get(snapshot, access, `me|${planId}|${type ?? ''}`, () => {
        const items = catalog
          .filter(snapshot, { type })
          .filter((e) => access.allowed(planId, e.row.id))
          .map((e) => `${e.meJsonOpen},"availableOn":${JSON.stringify(access.availableOn(e.row.id, planId))}}`);
        return `{"items":[${items.join(',')}]}`;
      });
      return sendListing(request.headers['if-none-match'], reply, listing);
    },
  );

  app.get(
    '/v1/credits/rates',
    {
      schema: {
        tags: ['wallet'],
        summary: 'Token price per unit of every listed model',
        querystring: Type.Object({}, { additionalProperties: false }),
        response: { 200: RatesResponse, ...errorResponses(400) },
      },
    },
    async () => {
      const [entries, settings] = await Promise.all([catalog.list(), catalog.pricingSettings()]);
      return {
        currency: settings.currency,
        tokensPerCredit: settings.tokensPerCredit,
        tokenValue: { priceCents: settings.tokenValueCents, tokens: settings.tokenValueTokens },
        items: entries.map((e) => ({
          modelId: e.row.id,
          slug: e.row.slug,
          displayName: e.row.displayName,
          type: e.row.type,
          provider: { slug: e.provider.slug, name: e.provider.name },
          rates: e.rates,
        })),
      };
    },
  );

  app.post(
    '/v1/credits/estimate',
    {
      schema: {
        tags: ['wallet'],
        summary: 'Tokens one generation will reserve (the estimator the gateway reserves with)',
        body: EstimateBody,
        response: { 200: EstimateResponse, ...errorResponses(400, 404, 503) },
      },
    },
    async (request) => {
      const model = await catalog.resolveForGateway(request.body.model);
      const { request: estimate, basis } = estimateRequestFor(model, request.body);
      const [tokens, settings] = await Promise.all([catalog.estimateTokens(model, estimate), catalog.pricingSettings()]);
      return {
        model: model.slug,
        tokens,
        credits: Math.ceil((tokens * 100) / settings.tokensPerCredit) / 100,
        tokensPerCredit: settings.tokensPerCredit,
        basis,
      };
    },
  );
};
