import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { UsagePage, UsageQuery, UsageSummary, UsageSummaryQuery } from './schemas.js';
import type { UsageService } from './service.js';

export const usageRoutes: FastifyPluginAsyncTypebox<{
  usage: UsageService;
  /** Refuses a caller whose account is no longer active (the auth service's check). */
  ensureActive: (userId: string) => Promise<unknown>;
}> = async (app, { usage, ensureActive }) => {
  app.addHook('preHandler', async (request) => {
    if (request.principal) await ensureActive(request.principal.userId);
  });
  const tags = ['usage'];
  const config = { auth: 'required' as const };

  app.get(
    '/v1/usage',
    {
      config,
      schema: {
        tags,
        summary: 'Your usage records, newest first (nextCursor is the id of the last row returned)',
        querystring: UsageQuery,
        response: { 200: UsagePage, ...errorResponses(400, 401) },
      },
    },
    async (request) => {
      const { limit = 20, cursor, operation, status, apiKeyId } = request.query;
      return usage.list(principalOf(request).userId, { limit, cursor, operation, status, apiKeyId });
    },
  );

  app.get(
    '/v1/usage/summary',
    {
      config,
      schema: {
        tags,
        summary: 'Counts and sums of your usage over the last day, week (7 days) or month (30 days)',
        querystring: UsageSummaryQuery,
        response: { 200: UsageSummary, ...errorResponses(400, 401) },
      },
    },
    async (request) => usage.summary(principalOf(request).userId, request.query.window ?? 'month'),
  );
};
