import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { activeAccountHook } from '../../platform/auth/active-account.js';
import { Ok, errorResponses } from '../../platform/http/schemas.js';
import type { NotificationsService } from '../notifications/service.js';
import { NotificationPrefs, NotificationPrefsPatch } from '../notifications/index.js';
import { Block, BlockBody, BlockPage, BlocksQuery, HandleParams, Preferences, PreferencesPatch, ProfileBody, PublicUser } from './schemas.js';
import type { AccountService } from './service.js';

/** Profile, preferences, notification preferences and blocks: `/v1/account/...`. */
export const accountSettingsRoutes: FastifyPluginAsyncTypebox<{
  account: AccountService;
  notifications: NotificationsService;
  ensureActive: (userId: string) => Promise<unknown>;
}> = async (app, { account, notifications, ensureActive }) => {
  app.addHook('preHandler', activeAccountHook(ensureActive));
  const tags = ['account'];
  const config = { auth: 'required' as const };

  app.patch(
    '/v1/account/profile',
    {
      config,
      schema: { tags, summary: 'Change handle, avatar or bio', body: ProfileBody, response: { 200: PublicUser, ...errorResponses(400, 401, 409) } },
    },
    async (request) => account.profile.updateProfile(principalOf(request).userId, request.body),
  );

  app.get(
    '/v1/account/preferences',
    { config, schema: { tags, summary: 'Account preferences', response: { 200: Preferences, ...errorResponses(401) } } },
    async (request) => account.profile.getPreferences(principalOf(request).userId),
  );

  app.patch(
    '/v1/account/preferences',
    { config, schema: { tags, summary: 'Change some preferences', body: PreferencesPatch, response: { 200: Preferences, ...errorResponses(400, 401) } } },
    async (request) => account.profile.updatePreferences(principalOf(request).userId, request.body),
  );

  app.get(
    '/v1/account/notification-prefs',
    { config, schema: { tags, summary: 'Which notifications you get', response: { 200: NotificationPrefs, ...errorResponses(401) } } },
    async (request) => notifications.getPrefs(principalOf(request).userId),
  );

  app.patch(
    '/v1/account/notification-prefs',
    {
      config,
      schema: {
        tags,
        summary: 'Switch some notifications on or off',
        body: NotificationPrefsPatch,
        response: { 200: NotificationPrefs, ...errorResponses(400, 401) },
      },
    },
    async (request) => notifications.updatePrefs(principalOf(request).userId, request.body),
  );

  app.get(
    '/v1/account/blocks',
    { config, schema: { tags, summary: 'Users you blocked or muted', querystring: BlocksQuery, response: { 200: BlockPage, ...errorResponses(400, 401) } } },
    async (request) => {
      const { limit = 50, cursor } = request.query;
      return account.blocks.list(principalOf(request).userId, { limit, cursor });
    },
  );

  app.post(
    '/v1/account/blocks',
    {
      config,
      schema: {
        tags,
        summary: 'Block (default) or mute a user by handle; again to change the kind or reason',
        body: BlockBody,
        response: { 200: Block, 201: Block, ...errorResponses(400, 401, 404) },
      },
    },
    async (request, reply) => {
      const { created, block } = await account.blocks.create(principalOf(request).userId, request.body);
      return reply.code(created ? 201 : 200).send(block);
    },
  );

  app.delete(
    '/v1/account/blocks/:handle',
    { config, schema: { tags, summary: 'Unblock or unmute a user', params: HandleParams, response: { 200: Ok, ...errorResponses(400, 401, 404) } } },
    async (request) => {
      await account.blocks.remove(principalOf(request).userId, request.params.handle);
      return { ok: true as const };
    },
  );
};
