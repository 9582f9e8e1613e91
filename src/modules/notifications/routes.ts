import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { Ok, errorResponses } from '../../platform/http/schemas.js';
import type { NotificationsService } from './service.js';
import { NotificationIdParams, NotificationsPage, NotificationsQuery, ReadAllResult } from './schemas.js';

export const notificationRoutes: FastifyPluginAsyncTypebox<{
  notifications: NotificationsService;
  /** Refuses a caller whose account is no longer active (the auth service's check). */
  ensureActive: (userId: string) => Promise<unknown>;
}> = async (app, { notifications, ensureActive }) => {
  app.addHook('preHandler', async (request) => {
    if (request.principal) await ensureActive(request.principal.userId);
  });
  const tags = ['notifications'];
  const config = { auth: 'required' as const };

  app.get(
    '/v1/notifications',
    {
      config,
      schema: {
        tags,
        summary: 'Your notifications, newest first',
        querystring: NotificationsQuery,
        response: { 200: NotificationsPage, ...errorResponses(400, 401) },
      },
    },
    async (request) => {
      const { limit = 30, cursor, unreadOnly = false } = request.query;
      return notifications.list(principalOf(request).userId, { limit, cursor, unreadOnly });
    },
  );

  app.post(
    '/v1/notifications/:id/read',
    {
      config,
      schema: {
        tags,
        summary: 'Mark one notification read (a missing, foreign or already read id is a no-op)',
        params: NotificationIdParams,
        response: { 200: Ok, ...errorResponses(400, 401) },
      },
    },
    async (request) => {
      await notifications.markRead(principalOf(request).userId, request.params.id);
      return { ok: true as const };
    },
  );

  app.post(
    '/v1/notifications/read-all',
    { config, schema: { tags, summary: 'Mark every notification read', response: { 200: ReadAllResult, ...errorResponses(401) } } },
    async (request) => ({ ok: true as const, updated: await notifications.markAllRead(principalOf(request).userId) }),
  );
};
