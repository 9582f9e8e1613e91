import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ADMIN_ROUTE, SUPER_ADMIN_ROUTE, auditActorOf } from '../../platform/auth/roles.js';
import { Page, StrictObject, errorResponses } from '../../platform/http/schemas.js';
import { PAYMENT_STATUSES } from '../../db/schema/payments.js';
import { auditWriterFor, type AuditService } from '../audit/service.js';
import { Payment, PaymentParams } from './schemas.js';
import type { PaymentsService } from './service.js';

const AdminPayment = Type.Intersect([Payment, Type.Object({ userId: Type.String({ description: 'The customer who paid' }) })]);

const AdminPaymentsQuery = StrictObject({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: '1-100, default 50' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'The nextCursor of the previous page' })),
  status: Type.Optional(Type.Enum(PAYMENT_STATUSES)),
  channel: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'A payment channel slug, e.g. bkash' })),
  userId: Type.Optional(Type.String({ format: 'uuid' })),
});

const RefundBody = StrictObject({
  reason: Type.String({ minLength: 3, maxLength: 500, description: 'Why the money goes back; kept on the statement and in the audit trail' }),
});

/** Operators' view of payments and refunds (spec B "Payment and top-up order status": refund takes SUCCEEDED to REFUNDED). */
export const adminPaymentRoutes: FastifyPluginAsyncTypebox<{ payments: PaymentsService; audit: AuditService }> = async (app, { payments, audit }) => {
  const tags = ['admin'];

  app.get(
    '/v1/admin/payments',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Payments of every customer, newest first',
        querystring: AdminPaymentsQuery,
        response: { 200: Page(AdminPayment), ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => payments.adminList({ ...request.query, limit: request.query.limit ?? 50 }),
  );

  app.get(
    '/v1/admin/payments/:id',
    {
      config: ADMIN_ROUTE,
      schema: { tags, summary: 'One payment of any customer', params: PaymentParams, response: { 200: AdminPayment, ...errorResponses(401, 403, 404) } },
    },
    async (request) => payments.adminGet(request.params.id),
  );

  app.post(
    '/v1/admin/payments/:id/refund',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Refund a paid payment: the gateway gives the money back where its API can; tokens are taken back as far as the balance allows',
        params: PaymentParams,
        body: RefundBody,
        response: { 200: Payment, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => payments.refund(request.params.id, request.body.reason, auditWriterFor(audit, auditActorOf(request))),
  );
};
