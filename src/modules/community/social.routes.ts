import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { Ok, errorResponses } from '../../platform/http/schemas.js';
import { viewerOf, type CommunityRouteOptions } from './routing.js';
import { COMMUNITY_LIMITS, HandleParams, PageQuery, PostsPage, PublicProfile, ReportBody, ReportSchema } from './schemas.js';

/** `/v1/community/users/*` and `/v1/community/reports`: profiles, a user's posts, follows, reports. */
export const communitySocialRoutes: FastifyPluginAsyncTypebox<CommunityRouteOptions> = async (app, { community, ensureActive }) => {
  app.addHook('preHandler', async (request) => {
    if (request.principal && request.routeOptions.config.auth === 'required') await ensureActive(request.principal.userId);
  });
  const tags = ['community'];

  app.get(
    '/v1/community/users/:handle',
    {
      config: { auth: 'optional' },
      schema: {
        tags,
        summary: 'A public profile; optional auth fills followingThem',
        params: HandleParams,
        response: { 200: PublicProfile, ...errorResponses(404) },
      },
    },
    async (request) => community.social.profile(request.params.handle, viewerOf(request)),
  );

  app.get(
    '/v1/community/users/:handle/posts',
    {
      config: { auth: 'optional' },
      schema: {
        tags,
        summary: "A user's posts, newest first; optional auth fills likedByMe",
        params: HandleParams,
        querystring: PageQuery,
        response: { 200: PostsPage, ...errorResponses(400, 404) },
      },
    },
    async (request) => {
      const user = await community.social.userByHandle(request.params.handle, viewerOf(request));
      return community.feeds.byAuthor(user, { limit: request.query.limit ?? COMMUNITY_LIMITS.feedDefault, cursor: request.query.cursor }, viewerOf(request));
    },
  );

  app.post(
    '/v1/community/users/:handle/follow',
    {
      config: { auth: 'required' },
      schema: {
        tags,
        summary: 'Follow a user (idempotent); notifies them',
        params: HandleParams,
        response: { 200: Ok, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      await community.social.follow(principalOf(request).userId, request.params.handle);
      return { ok: true as const };
    },
  );

  app.delete(
    '/v1/community/users/:handle/follow',
    {
      config: { auth: 'required' },
      schema: { tags, summary: 'Unfollow a user (idempotent)', params: HandleParams, response: { 200: Ok, ...errorResponses(401, 404) } },
    },
    async (request) => {
      await community.social.unfollow(principalOf(request).userId, request.params.handle);
      return { ok: true as const };
    },
  );

  app.post(
    '/v1/community/reports',
    {
      config: { auth: 'required' },
      schema: {
        tags,
        summary: 'Report a post, comment or user to the moderators',
        body: ReportBody,
        response: { 201: ReportSchema, ...errorResponses(400, 401, 404) },
      },
    },
    async (request, reply) => reply.code(201).send(await community.social.report(principalOf(request).userId, request.body)),
  );
};
