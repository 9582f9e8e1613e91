import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ADMIN_ROUTE, SUPER_ADMIN_ROUTE, auditActorOf } from '../../platform/auth/roles.js';
import { Ok, errorResponses } from '../../platform/http/schemas.js';
import { auditWriterFor, type AuditService } from '../audit/service.js';
import type { CatalogService } from '../catalog/service.js';
import type { UpstreamAccounts } from '../gateway/index.js';
import {
  AccountParams,
  AdminProvider,
  AdminProviderList,
  CreateAccountBody,
  ProviderSlugParams,
  ProviderStatusBody,
  UpdateAccountBody,
  UpstreamAccount,
  UpstreamAccountList,
} from './providers.schemas.js';

const NO_ACCOUNTS = { accounts: 0, enabled: 0, failing: 0, overBudget: 0, failures: 0, spendCents: 0, budgetCents: null, lastError: null };

/** Operators' view of the providers and their upstream accounts (reads: ADMIN; changes: SUPER_ADMIN, audited). */
export const adminProviderRoutes: FastifyPluginAsyncTypebox<{ catalog: CatalogService; accounts: UpstreamAccounts; audit: AuditService }> = async (
  app,
  { catalog, accounts, audit },
) => {
  const tags = ['admin'];
  const writer = (request: Parameters<typeof auditActorOf>[0]) => auditWriterFor(audit, auditActorOf(request));

  async function providers() {
    const [list, health] = await Promise.all([catalog.admin.listProviders(), accounts.health()]);
    return list.map((p) => ({ ...p, health: health.get(p.slug) ?? NO_ACCOUNTS }));
  }

  app.get(
    '/v1/admin/providers',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Providers with their status and health: accounts, failures, spend against budget, last error',
        response: { 200: AdminProviderList, ...errorResponses(401, 403) },
      },
    },
    async () => ({ items: await providers() }),
  );

  app.patch(
    '/v1/admin/providers/:slug',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: "Set a provider's status (DISABLED takes its models off the catalog and the gateway until set back)",
        params: ProviderSlugParams,
        body: ProviderStatusBody,
        response: { 200: AdminProvider, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      await catalog.admin.setProviderStatus(request.params.slug, request.body.status, writer(request), request.body.reason ?? null);
      return (await providers()).find((p) => p.slug === request.params.slug)!;
    },
  );

  app.get(
    '/v1/admin/providers/:slug/accounts',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: "A provider's upstream accounts with budgets and health (keys never returned)",
        params: ProviderSlugParams,
        response: { 200: UpstreamAccountList, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => ({ items: await accounts.list(request.params.slug) }),
  );

  app.post(
    '/v1/admin/providers/:slug/accounts',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Add an upstream account; its key is stored encrypted and only its last 4 characters are ever shown',
        params: ProviderSlugParams,
        body: CreateAccountBody,
        response: { 201: UpstreamAccount, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await accounts.add(request.params.slug, request.body, writer(request))),
  );

  app.patch(
    '/v1/admin/providers/:slug/accounts/:id',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary:
          'Change an upstream account: enable or disable it, its budget, label, base URL (with the key again) or key (environment accounts: enabled only)',
        params: AccountParams,
        body: UpdateAccountBody,
        response: { 200: UpstreamAccount, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => accounts.update(request.params.slug, request.params.id, request.body, writer(request)),
  );

  app.delete(
    '/v1/admin/providers/:slug/accounts/:id',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Delete an account added by an operator (an environment account is disabled instead: 409)',
        params: AccountParams,
        response: { 200: Ok, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => {
      await accounts.remove(request.params.slug, request.params.id, writer(request));
      return { ok: true as const };
    },
  );
};
