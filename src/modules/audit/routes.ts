import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ADMIN_ROUTE } from '../../platform/auth/roles.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { AuditPage, AuditQuery } from './schemas.js';
import type { AuditService } from './service.js';

export const auditRoutes: FastifyPluginAsyncTypebox<{ audit: AuditService }> = async (app, { audit }) => {
  app.get(
    '/v1/admin/audit',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags: ['admin'],
        summary: 'The admin audit trail: every operator change (who, when, what, before and after), newest first',
        querystring: AuditQuery,
        response: { 200: AuditPage, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => audit.list({ ...request.query, limit: request.query.limit ?? 50 }),
  );
};
