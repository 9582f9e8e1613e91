import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ADMIN_ROUTE, SUPER_ADMIN_ROUTE, auditActorOf } from '../../platform/auth/roles.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { auditWriterFor, type AuditService } from '../audit/service.js';
import type { PlanPatch, PlansService } from '../plans/service.js';
import { AdminPlan, AdminPlanList, CreatePlanBody, PlanIdParams, UpdatePlanBody } from './plans.schemas.js';

/** Operators' plans: archived and internal ones included; create, edit, archive (SUPER_ADMIN, audited). */
export const adminPlanRoutes: FastifyPluginAsyncTypebox<{ plans: PlansService; audit: AuditService }> = async (app, { plans, audit }) => {
  const tags = ['admin'];

  app.get(
    '/v1/admin/plans',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Every plan (archived and internal included) with its allow-list and channels',
        response: { 200: AdminPlanList, ...errorResponses(401, 403) },
      },
    },
    async () => plans.admin.list(),
  );

  app.get(
    '/v1/admin/plans/:id',
    {
      config: ADMIN_ROUTE,
      schema: { tags, summary: 'One plan as operators see it', params: PlanIdParams, response: { 200: AdminPlan, ...errorResponses(400, 401, 403, 404) } },
    },
    async (request) => plans.admin.get(request.params.id),
  );

  app.post(
    '/v1/admin/plans',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Create a plan (on sale at once unless archived)',
        body: CreatePlanBody,
        response: { 201: AdminPlan, ...errorResponses(400, 401, 403, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await plans.admin.create(request.body, auditWriterFor(audit, auditActorOf(request)))),
  );

  app.patch(
    '/v1/admin/plans/:id',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Edit a plan: price, allowance, allowed models (modelIds replaces the list) and payment channels; status ARCHIVED archives it',
        params: PlanIdParams,
        body: UpdatePlanBody,
        response: { 200: AdminPlan, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => plans.admin.update(request.params.id, request.body as PlanPatch, auditWriterFor(audit, auditActorOf(request))),
  );
};
