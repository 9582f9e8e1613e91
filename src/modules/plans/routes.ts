import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../platform/http/schemas.js';
import { EmptyQuery, Plan, PlanList, PlanModels, SlugParams } from './schemas.js';
import type { PlansService } from './service.js';

export interface PlansRoutesOptions {
  plans: PlansService;
}

export const plansRoutes: FastifyPluginAsyncTypebox<PlansRoutesOptions> = async (app, { plans }) => {
  const tags = ['plans'];

  app.get(
    '/v1/plans',
    { schema: { tags, summary: 'Plans on sale, by sortOrder then price', querystring: EmptyQuery, response: { 200: PlanList, ...errorResponses(400) } } },
    async () => ({ items: await plans.list() }),
  );

  app.get(
    '/v1/plans/:slug',
    {
      schema: {
        tags,
        summary: 'One plan on sale (404 for unknown, archived and internal plans)',
        params: SlugParams,
        querystring: EmptyQuery,
        response: { 200: Plan, ...errorResponses(400, 404) },
      },
    },
    async (request) => plans.getPublic(request.params.slug),
  );

  app.get(
    '/v1/plans/:slug/models',
    {
      schema: {
        tags,
        summary: 'Every model the plan includes, grouped by kind, with its token cost per unit',
        params: SlugParams,
        querystring: EmptyQuery,
        response: { 200: PlanModels, ...errorResponses(400, 404) },
      },
    },
    async (request) => plans.modelsOf(request.params.slug),
  );
};
