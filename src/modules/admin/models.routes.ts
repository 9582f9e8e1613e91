import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ADMIN_ROUTE, SUPER_ADMIN_ROUTE, auditActorOf } from '../../platform/auth/roles.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { auditWriterFor, type AuditService } from '../audit/service.js';
import type { CatalogService } from '../catalog/service.js';
import { AdminModel, AdminModelPage, AdminModelsQuery, ModelIdParams, UpdateModelBody } from './models.schemas.js';

/** Operators' model catalog: every model whatever its status; edits reach GET /v1/models at once on every instance. */
export const adminModelRoutes: FastifyPluginAsyncTypebox<{ catalog: CatalogService; audit: AuditService }> = async (app, { catalog, audit }) => {
  const tags = ['admin'];

  app.get(
    '/v1/admin/models',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Every model (DISABLED, RETIRING and RETIRED included), by slug, with why an unlisted one is not served',
        querystring: AdminModelsQuery,
        response: { 200: AdminModelPage, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => catalog.admin.listModels({ ...request.query, limit: request.query.limit ?? 50 }),
  );

  app.get(
    '/v1/admin/models/:id',
    {
      config: ADMIN_ROUTE,
      schema: { tags, summary: 'One model as operators see it', params: ModelIdParams, response: { 200: AdminModel, ...errorResponses(400, 401, 403, 404) } },
    },
    async (request) => catalog.admin.getModel(request.params.id),
  );

  app.patch(
    '/v1/admin/models/:id',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Change a model: status, availability (RETIRING), pricing, capability override (deep-merged over the defaults), display fields',
        params: ModelIdParams,
        body: UpdateModelBody,
        response: { 200: AdminModel, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const { reason, ...patch } = request.body;
      return catalog.admin.updateModel(request.params.id, patch, auditWriterFor(audit, auditActorOf(request)), reason ?? null);
    },
  );
};
