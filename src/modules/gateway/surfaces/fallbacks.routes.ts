import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ADMIN_ROUTE, SUPER_ADMIN_ROUTE, auditActorOf } from '../../../platform/auth/roles.js';
import { errorResponses } from '../../../platform/http/schemas.js';
import { auditWriterFor, type AuditService } from '../../audit/service.js';
import type { Fallbacks } from '../routing/fallback-models.js';
import { ModelFallbacks, ModelIdParams, SetFallbacksBody } from './fallbacks.schemas.js';

/** Operator routes of model fallbacks: read by admins, changed by super admins, every change audited. */
export const fallbackAdminRoutes: FastifyPluginAsyncTypebox<{ fallbacks: Fallbacks; audit: Pick<AuditService, 'record'> }> = async (
  app,
  { fallbacks, audit },
) => {
  const tags = ['admin'];
  app.get(
    '/v1/admin/models/:id/fallbacks',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: "A model's fallback models, in the order they are tried",
        params: ModelIdParams,
        response: { 200: ModelFallbacks, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => fallbacks.view(request.params.id),
  );
  app.put(
    '/v1/admin/models/:id/fallbacks',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: "Replace a model's fallbacks: tried in order when every upstream account of its provider fails (audited)",
        params: ModelIdParams,
        body: SetFallbacksBody,
        response: { 200: ModelFallbacks, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => fallbacks.set(request.params.id, request.body.fallbacks, auditWriterFor(audit, auditActorOf(request)), request.body.reason ?? null),
  );
};
