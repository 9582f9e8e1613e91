import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { ADMIN_ROUTE, SUPER_ADMIN_ROUTE, auditActorOf } from '../../platform/auth/roles.js';
import { StrictObject, errorResponses } from '../../platform/http/schemas.js';
import { auditWriterFor, type AuditService } from '../audit/service.js';
import { creditPricingOf, type CatalogService } from '../catalog/service.js';
import type { PaymentsService } from '../payments/service.js';
import {
  AdminComponent,
  AdminComponentList,
  AdminOrdersPage,
  AdminOrdersQuery,
  AdminRule,
  AdminRuleList,
  CarrierAmounts,
  CarrierAmountsBody,
  ComponentParams,
  ComponentPatch,
  CreditPricing,
  CreditPricingBody,
  RuleActiveBody,
  RuleInput,
  RuleParams,
  TopUpSettings,
  TopUpSettingsBody,
} from './admin.schemas.js';
import type { TopUpService } from './service.js';

export interface TopUpAdminRoutesOptions {
  topup: TopUpService;
  catalog: Pick<CatalogService, 'pricingSettings' | 'adminUpdateCreditPricing'>;
  payments: Pick<PaymentsService, 'carrierAmounts' | 'adminSetCarrierAmounts'>;
  audit: Pick<AuditService, 'record'>;
}

const NoQuery = StrictObject({});

/**
 * Operators' top-up routes (spec B "Admin" and "Top-up rule configuration"): reads for ADMIN or SUPER_ADMIN, changes
 * for SUPER_ADMIN, each change audited in its own transaction. Settings apply to the next quote; placed orders keep
 * what they were sold with.
 */
export const topUpAdminRoutes: FastifyPluginAsyncTypebox<TopUpAdminRoutesOptions> = async (app, { topup, catalog, payments, audit }) => {
  const tags = ['admin'];
  const writer = (request: FastifyRequest) => auditWriterFor(audit, auditActorOf(request));
  const admin = topup.admin;

  app.get(
    '/v1/admin/topup/rules',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Top-up rules (bonuses and promotions), switched on or off',
        querystring: NoQuery,
        response: { 200: AdminRuleList, ...errorResponses(400, 401, 403) },
      },
    },
    async () => admin.listRules(),
  );

  app.post(
    '/v1/admin/topup/rules',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Create a top-up rule; it starts switched off',
        description:
          'Switch it on with PATCH /v1/admin/topup/rules/{id} once it reads right. 400 for an unknown component, an empty date range or NEW_ACCOUNT without newAccountDays.',
        body: RuleInput,
        response: { 201: AdminRule, ...errorResponses(400, 401, 403) },
      },
    },
    async (request, reply) => reply.code(201).send(await admin.createRule(request.body, writer(request))),
  );

  app.put(
    '/v1/admin/topup/rules/:id',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Replace a top-up rule’s definition (name, type, priority, group, effect, conditions); `active` is left as it is',
        params: RuleParams,
        body: RuleInput,
        response: { 200: AdminRule, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => admin.replaceRule(request.params.id, request.body, writer(request)),
  );

  app.patch(
    '/v1/admin/topup/rules/:id',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Switch a top-up rule on or off (the next quote applies it)',
        params: RuleParams,
        body: RuleActiveBody,
        response: { 200: AdminRule, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => admin.setRuleActive(request.params.id, request.body.active, writer(request)),
  );

  app.get(
    '/v1/admin/topup/components',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Top-up components: on sale, unit limits and pricing mode',
        querystring: NoQuery,
        response: { 200: AdminComponentList, ...errorResponses(400, 401, 403) },
      },
    },
    async () => admin.listComponents(),
  );

  app.patch(
    '/v1/admin/topup/components/:key',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Change a top-up component: on sale, min/max/step/default units, tokens per unit, pricing (AI cost, fixed, volume tiers)',
        description:
          '400 when minUnits > maxUnits, minUnits or defaultUnits is not a valid choice for the step, tiers are not ascending or tokensPerUnit is set on credits.',
        params: ComponentParams,
        body: ComponentPatch,
        response: { 200: AdminComponent, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => admin.updateComponent(request.params.key, request.body, writer(request)),
  );

  app.get(
    '/v1/admin/topup/settings',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Top-up settings (spec B Limits) and the low-balance threshold',
        querystring: NoQuery,
        response: { 200: TopUpSettings, ...errorResponses(400, 401, 403) },
      },
    },
    async () => admin.settings(),
  );

  app.put(
    '/v1/admin/topup/settings',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Change top-up settings; new quotes use them at once, placed orders keep what they were sold with',
        description:
          'Keys left out keep their value. 400 when gateway + VAT + profit reach 100%, the profit floor exceeds the profit share, minOrderCents > maxOrderCents or the limits are off the rounding step.',
        body: TopUpSettingsBody,
        response: { 200: TopUpSettings, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => admin.updateSettings(request.body, writer(request)),
  );

  app.get(
    '/v1/admin/topup/payment-rules/dcb',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'The amounts carrier billing may take',
        querystring: NoQuery,
        response: { 200: CarrierAmounts, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async () => payments.carrierAmounts(),
  );

  app.put(
    '/v1/admin/topup/payment-rules/dcb',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Set the amounts carrier billing may take (positive minor units, ascending, no repeats)',
        description: 'An empty list takes carrier billing off the top-up builder.',
        body: CarrierAmountsBody,
        response: { 200: CarrierAmounts, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => payments.adminSetCarrierAmounts(request.body.amountsCents, writer(request)),
  );

  app.get(
    '/v1/admin/topup/orders',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Recent top-up orders (selection, applied rules, amount, status), newest first, cursor-paged',
        description: 'Filtered by status, a page may hold fewer than `limit` orders while `nextCursor` leads on.',
        querystring: AdminOrdersQuery,
        response: { 200: AdminOrdersPage, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => admin.listOrders({ ...request.query, limit: request.query.limit ?? 20 }),
  );

  app.get(
    '/v1/admin/credits/pricing',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Credit pricing: token value, tokens per credit and the top-up master switch',
        querystring: NoQuery,
        response: { 200: CreditPricing, ...errorResponses(400, 401, 403) },
      },
    },
    async () => creditPricingOf(await catalog.pricingSettings()),
  );

  app.put(
    '/v1/admin/credits/pricing',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Change credit pricing (token value, tokens per credit) or switch top-ups on or off (topUpEnabled)',
        description: 'Fields left out keep their value. With topUpEnabled false, quotes answer valid: false and orders are refused with 400.',
        body: CreditPricingBody,
        response: { 200: CreditPricing, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const after = await catalog.adminUpdateCreditPricing(request.body, writer(request), request.principal!.userId);
      await topup.termsChanged();
      return after;
    },
  );
};
