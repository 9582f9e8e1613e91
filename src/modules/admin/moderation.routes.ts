import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ADMIN_ROUTE, auditActorOf } from '../../platform/auth/roles.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { auditWriterFor, type AuditService } from '../audit/service.js';
import type { CommunityService } from '../community/service.js';
import { AdminReport, AdminReportPage, HideBody, HideResult, ReportIdParams, ReportListQuery, ResolveBody } from './moderation.schemas.js';

/**
 * `/v1/admin/reports`: the moderation queue of community reports. Moderation is open to ADMIN and SUPER_ADMIN (spec A
 * "Authentication" rule 9; "SUPER_ADMIN for changes" covers document B's settings). Every change is audited.
 */
export const adminModerationRoutes: FastifyPluginAsyncTypebox<{ community: CommunityService; audit: AuditService }> = async (app, { community, audit }) => {
  const tags = ['admin'];

  app.get(
    '/v1/admin/reports',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'The moderation queue: community reports, newest first, filtered by status and target type, cursor-paged',
        querystring: ReportListQuery,
        response: { 200: AdminReportPage, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => community.moderation.list({ ...request.query, limit: request.query.limit ?? 50 }),
  );

  app.get(
    '/v1/admin/reports/:id',
    {
      config: ADMIN_ROUTE,
      schema: { tags, summary: 'One report', params: ReportIdParams, response: { 200: AdminReport, ...errorResponses(400, 401, 403, 404) } },
    },
    async (request) => community.moderation.get(request.params.id),
  );

  app.post(
    '/v1/admin/reports/:id/resolve',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Resolve an open report: DISMISSED or ACTIONED, with a note (409 when already resolved)',
        params: ReportIdParams,
        body: ResolveBody,
        response: { 200: AdminReport, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => {
      const actor = auditActorOf(request);
      return community.moderation.resolve(request.params.id, request.body, actor.userId, auditWriterFor(audit, actor));
    },
  );

  app.post(
    '/v1/admin/reports/:id/hide-content',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Hide the reported post (feeds, profiles, gallery) or comment (with its replies) and close its open reports as ACTIONED',
        description: 'A reported USER is not content: the answer is 400 naming the suspend route, POST /v1/admin/users/{id}/suspend.',
        params: ReportIdParams,
        body: HideBody,
        response: { 200: HideResult, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const actor = auditActorOf(request);
      return community.moderation.hideReportedContent(request.params.id, request.body.note, actor.userId, auditWriterFor(audit, actor));
    },
  );
};
