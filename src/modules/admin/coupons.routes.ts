import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ADMIN_ROUTE, SUPER_ADMIN_ROUTE, auditActorOf } from '../../platform/auth/roles.js';
import { badRequest } from '../../platform/http/errors.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { auditWriterFor, type AuditService } from '../audit/service.js';
import type { PlansService } from '../plans/service.js';
import type { SubscriptionBillingService } from '../subscriptions/index.js';
import { AdminCoupon, AdminCouponPage, CouponIdParams, CouponsQuery, CreateCouponBody, ExpireCouponBody } from './coupons.schemas.js';

/** Operators' coupons: list, create, expire (changes SUPER_ADMIN, audited). */
export const adminCouponRoutes: FastifyPluginAsyncTypebox<{ billing: SubscriptionBillingService; plans: PlansService; audit: AuditService }> = async (
  app,
  { billing, plans, audit },
) => {
  const tags = ['admin'];
  const { coupons } = billing;

  app.get(
    '/v1/admin/coupons',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Coupons, newest first, with the state a customer meets now',
        querystring: CouponsQuery,
        response: { 200: AdminCouponPage, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => coupons.list({ ...request.query, limit: request.query.limit ?? 50 }),
  );

  app.get(
    '/v1/admin/coupons/:id',
    {
      config: ADMIN_ROUTE,
      schema: { tags, summary: 'One coupon', params: CouponIdParams, response: { 200: AdminCoupon, ...errorResponses(400, 401, 403, 404) } },
    },
    async (request) => coupons.get(request.params.id),
  );

  app.post(
    '/v1/admin/coupons',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Create a plan coupon (a percentage or a fixed amount off, optional window, limit and plans)',
        body: CreateCouponBody,
        response: { 201: AdminCoupon, ...errorResponses(400, 401, 403, 409) },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const unknown: string[] = [];
      for (const id of body.planIds ?? []) if (!(await plans.getById(id))) unknown.push(id);
      if (unknown.length > 0) throw badRequest(`Unknown plan ids: ${unknown.join(', ')}. See GET /v1/admin/plans.`, { field: 'planIds', unknown });
      const row = await coupons.create(
        { ...body, startsAt: body.startsAt ? new Date(body.startsAt) : null, endsAt: body.endsAt ? new Date(body.endsAt) : null },
        auditWriterFor(audit, auditActorOf(request)),
      );
      return reply.code(201).send(await coupons.get(row.id));
    },
  );

  app.post(
    '/v1/admin/coupons/:id/expire',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Expire a coupon now (customers get the "expired" answer; uses already reserved are kept)',
        params: CouponIdParams,
        body: ExpireCouponBody,
        response: { 200: AdminCoupon, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => coupons.expire(request.params.id, auditWriterFor(audit, auditActorOf(request)), request.body.reason ?? null),
  );
};
