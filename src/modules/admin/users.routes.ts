import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ADMIN_ROUTE, SUPER_ADMIN_ROUTE, auditActorOf } from '../../platform/auth/roles.js';
import { clientInfo } from '../../platform/http/client-info.js';
import { notFound } from '../../platform/http/errors.js';
import { errorResponses } from '../../platform/http/schemas.js';
import type { ApiKeysService } from '../apikeys/service.js';
import { auditWriterFor, type AuditService } from '../audit/service.js';
import { toSecurityEvent, type AuthService, type UserRow } from '../auth/index.js';
import type { SubscriptionsService } from '../subscriptions/service.js';
import type { WalletService } from '../wallet/service.js';
import {
  AdminUser,
  AdminUserDetail,
  AdminUserPage,
  GrantBody,
  GrantResult,
  ImpersonationToken,
  ReasonBody,
  RoleBody,
  UserIdParams,
  UserSearchQuery,
} from './users.schemas.js';

export interface AdminUsersOptions {
  auth: AuthService;
  audit: AuditService;
  wallet: WalletService;
  subscriptions: Pick<SubscriptionsService, 'activeSubscriptionView'>;
  apiKeys: Pick<ApiKeysService, 'ownerChanged'>;
}

const RECENT_SECURITY_EVENTS = 20;

const toAdminUser = (u: UserRow) => ({
  id: u.id,
  email: u.email,
  emailVerified: u.emailVerified,
  name: u.name,
  handle: u.handle,
  avatarUrl: u.avatarUrl,
  role: u.role,
  status: u.status,
  createdAt: u.createdAt.toISOString(),
  updatedAt: u.updatedAt.toISOString(),
  deletedAt: u.deletedAt?.toISOString() ?? null,
});

/**
 * `/v1/admin/users`: search, one account's admin view, role changes (SUPER_ADMIN), suspension and its lifting (ADMIN:
 * an ADMIN acts on USERs, a SUPER_ADMIN also on ADMINs), impersonation and support grants (SUPER_ADMIN). Every change is audited.
 */
export const adminUserRoutes: FastifyPluginAsyncTypebox<AdminUsersOptions> = async (app, { auth, audit, wallet, subscriptions, apiKeys }) => {
  const tags = ['admin'];
  const writer = (request: Parameters<typeof auditActorOf>[0]) => auditWriterFor(audit, auditActorOf(request));
  /** A change may only target an account that is not deleted. */
  const existing = async (userId: string) => {
    const user = await auth.admin.get(userId);
    if (user.status === 'DELETED') throw notFound('This account was deleted.');
    return user;
  };

  app.get(
    '/v1/admin/users',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Search accounts by email, name or handle substring, role and status; newest first, cursor-paged',
        querystring: UserSearchQuery,
        response: { 200: AdminUserPage, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const page = await auth.admin.search({ ...request.query, limit: request.query.limit ?? 50 });
      return { items: page.items.map(toAdminUser), nextCursor: page.nextCursor };
    },
  );

  app.get(
    '/v1/admin/users/:id',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: "One account's admin view: profile, role, status, active subscription, wallet balance and recent security events",
        params: UserIdParams,
        response: { 200: AdminUserDetail, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const user = await auth.admin.get(request.params.id);
      const [subscription, balance, events] = await Promise.all([
        user.status === 'DELETED' ? null : subscriptions.activeSubscriptionView(user.id),
        wallet.balance({ userId: user.id }),
        auth.data.securityEvents.page(user.id, { limit: RECENT_SECURITY_EVENTS }),
      ]);
      return {
        user: toAdminUser(user),
        bio: user.bio,
        subscription,
        wallet: { tokens: balance.tokens, credits: balance.credits, unpaidOverrunTokens: balance.unpaidOverrunTokens, totals: balance.totals },
        recentSecurityEvents: events.items.map(toSecurityEvent),
      };
    },
  );

  app.put(
    '/v1/admin/users/:id/role',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: "Change an account's role (SUPER_ADMIN only); the last SUPER_ADMIN cannot be demoted (409)",
        params: UserIdParams,
        body: RoleBody,
        response: { 200: AdminUser, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => toAdminUser(await auth.admin.setRole(request.params.id, request.body.role, request.body.reason ?? null, writer(request))),
  );

  app.post(
    '/v1/admin/users/:id/suspend',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Suspend an account: no sign-in, every session and API key stops at once (ADMIN suspends USERs; SUPER_ADMIN also ADMINs)',
        params: UserIdParams,
        body: ReasonBody,
        response: { 200: AdminUser, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => {
      const actor = auditActorOf(request);
      const user = await auth.admin.suspend(actor, request.params.id, request.body.reason, clientInfo(request), auditWriterFor(audit, actor));
      await apiKeys.ownerChanged(user.id);
      return toAdminUser(user);
    },
  );

  app.post(
    '/v1/admin/users/:id/unsuspend',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Lift a suspension: the account can sign in again and its API keys work again (ADMIN lifts USERs; SUPER_ADMIN also ADMINs)',
        params: UserIdParams,
        body: ReasonBody,
        response: { 200: AdminUser, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => {
      const actor = auditActorOf(request);
      const user = await auth.admin.unsuspend(actor, request.params.id, request.body.reason, auditWriterFor(audit, actor));
      await apiKeys.ownerChanged(user.id);
      return toAdminUser(user);
    },
  );

  app.post(
    '/v1/admin/users/:id/impersonate',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: "Act as a USER for 10 minutes: a token marked with you (act claim), recorded as IMPERSONATED_BY_ADMIN in the user's security events",
        description:
          "The token only reads the user's profile, settings, notifications, catalog, credits, plan, library, jobs, files, usage and creator analytics; every other route refuses it (403 IMPERSONATION_NOT_ALLOWED). Operator accounts cannot be impersonated (409).",
        params: UserIdParams,
        body: ReasonBody,
        response: { 200: ImpersonationToken, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => {
      const actor = auditActorOf(request);
      const issued = await auth.admin.impersonate(actor.userId, request.params.id, request.body.reason, clientInfo(request), auditWriterFor(audit, actor));
      return { ...issued, expiresAt: issued.expiresAt.toISOString(), user: toAdminUser(issued.user) };
    },
  );

  app.post(
    '/v1/admin/users/:id/grants',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: "Grant tokens to a user's wallet (a GRANT ledger row with the reason); the same idempotencyKey grants once",
        params: UserIdParams,
        body: GrantBody,
        response: { 200: GrantResult, 201: GrantResult, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      const user = await existing(request.params.id);
      const idempotencyKey = request.body.idempotencyKey ?? randomUUID();
      const result = await wallet.supportGrant(
        { userId: user.id, tokens: request.body.tokens, reason: request.body.reason.trim(), idempotencyKey },
        writer(request),
      );
      return reply.code(result.applied ? 201 : 200).send({ ...result, idempotencyKey });
    },
  );
};
