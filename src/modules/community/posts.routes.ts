import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { Ok, errorResponses } from '../../platform/http/schemas.js';
import {
  AnalyticsQuery,
  COMMUNITY_LIMITS,
  CommentBody,
  CommentSchema,
  CommentsList,
  Dashboard,
  PageQuery,
  PostAnalytics,
  PostIdParams,
  PostSchema,
  PostsPage,
  PublishBody,
  Recipe,
  ShareResponse,
} from './schemas.js';
import { viewerOf as viewer, type CommunityRouteOptions } from './routing.js';

/** `/v1/community/posts/*` and `/v1/community/comments/*`: publishing, likes, comments, shares, analytics, remixes. */
export const communityPostRoutes: FastifyPluginAsyncTypebox<CommunityRouteOptions> = async (app, { community, ensureActive }) => {
  app.addHook('preHandler', async (request) => {
    if (request.principal && request.routeOptions.config.auth === 'required') await ensureActive(request.principal.userId);
  });
  const tags = ['community'];
  const required = { auth: 'required' as const };
  const optional = { auth: 'optional' as const };

  app.post(
    '/v1/community/posts',
    {
      config: required,
      schema: {
        tags,
        summary: 'Publish one of your generations (republishing updates the same post); it becomes PUBLIC',
        body: PublishBody,
        response: { 201: PostSchema, ...errorResponses(400, 401, 404) },
      },
    },
    async (request, reply) => reply.code(201).send(await community.posts.publish(principalOf(request).userId, request.body)),
  );

  app.get(
    '/v1/community/posts/:id',
    {
      config: optional,
      schema: {
        tags,
        summary: 'One post (counts a view); optional auth fills likedByMe',
        params: PostIdParams,
        response: { 200: PostSchema, ...errorResponses(404) },
      },
    },
    async (request) => community.posts.get(request.params.id, viewer(request)),
  );

  app.delete(
    '/v1/community/posts/:id',
    {
      config: required,
      schema: {
        tags,
        summary: 'Delete your post (soft); its gallery work is hidden too',
        params: PostIdParams,
        response: { 200: Ok, ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => {
      await community.posts.remove(principalOf(request).userId, request.params.id);
      return { ok: true as const };
    },
  );

  app.post(
    '/v1/community/posts/:id/like',
    { config: required, schema: { tags, summary: 'Like a post (idempotent)', params: PostIdParams, response: { 200: Ok, ...errorResponses(401, 404) } } },
    async (request) => {
      await community.posts.like(principalOf(request).userId, request.params.id);
      return { ok: true as const };
    },
  );

  app.delete(
    '/v1/community/posts/:id/like',
    {
      config: required,
      schema: { tags, summary: 'Take your like back (idempotent)', params: PostIdParams, response: { 200: Ok, ...errorResponses(401, 404) } },
    },
    async (request) => {
      await community.posts.unlike(principalOf(request).userId, request.params.id);
      return { ok: true as const };
    },
  );

  app.get(
    '/v1/community/posts/:id/comments',
    {
      config: optional,
      schema: {
        tags,
        summary: `Comments, oldest first (up to 100), each with its replies; optional auth`,
        params: PostIdParams,
        response: { 200: CommentsList, ...errorResponses(404) },
      },
    },
    async (request) => community.comments.list(request.params.id, viewer(request)),
  );

  app.post(
    '/v1/community/posts/:id/comments',
    {
      config: required,
      schema: {
        tags,
        summary: 'Comment on a post, or reply with parentId; notifies the author',
        params: PostIdParams,
        body: CommentBody,
        response: { 201: CommentSchema, ...errorResponses(400, 401, 404) },
      },
    },
    async (request, reply) => reply.code(201).send(await community.comments.create(principalOf(request).userId, request.params.id, request.body)),
  );

  app.delete(
    '/v1/community/comments/:id',
    {
      config: required,
      schema: {
        tags,
        summary: 'Delete your own comment (soft; its replies go with it)',
        params: PostIdParams,
        response: { 200: Ok, ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => {
      await community.comments.remove(principalOf(request).userId, request.params.id);
      return { ok: true as const };
    },
  );

  app.post(
    '/v1/community/posts/:id/share',
    {
      config: optional,
      schema: {
        tags,
        summary: 'Count a share and get ready-made links per network; optional auth',
        params: PostIdParams,
        response: { 200: ShareResponse, ...errorResponses(404) },
      },
    },
    async (request) => community.posts.share(request.params.id, viewer(request)),
  );

  app.get(
    '/v1/community/posts/:id/analytics',
    {
      config: required,
      schema: {
        tags,
        summary: 'Totals and a daily series of your post (author or admin)',
        params: PostIdParams,
        querystring: AnalyticsQuery,
        response: { 200: PostAnalytics, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => community.analytics.post(request.params.id, principalOf(request).userId, request.query.days ?? COMMUNITY_LIMITS.analyticsDaysDefault),
  );

  app.get(
    '/v1/community/me/analytics',
    {
      config: required,
      schema: {
        tags,
        summary: 'Creator dashboard across all your posts',
        querystring: AnalyticsQuery,
        response: { 200: Dashboard, ...errorResponses(400, 401) },
      },
    },
    async (request) => community.analytics.dashboard(principalOf(request).userId, request.query.days ?? COMMUNITY_LIMITS.analyticsDaysDefault),
  );

  app.get(
    '/v1/community/posts/:id/recipe',
    {
      config: optional,
      schema: {
        tags,
        summary: 'What the post was made with (to prefill the studio); optional auth',
        params: PostIdParams,
        response: { 200: Recipe, ...errorResponses(404) },
      },
    },
    async (request) => community.posts.recipe(request.params.id, viewer(request)),
  );

  app.get(
    '/v1/community/posts/:id/remixes',
    {
      config: optional,
      schema: {
        tags,
        summary: 'Posts made from this one, newest first; optional auth',
        params: PostIdParams,
        querystring: PageQuery,
        response: { 200: PostsPage, ...errorResponses(400, 404) },
      },
    },
    async (request) => {
      const post = await community.posts.visiblePost(request.params.id, viewer(request));
      return community.feeds.remixesOf(post.id, { limit: request.query.limit ?? COMMUNITY_LIMITS.feedDefault, cursor: request.query.cursor }, viewer(request));
    },
  );
};
