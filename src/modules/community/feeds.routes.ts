import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { errorResponses } from '../../platform/http/schemas.js';
import type { CommunityRouteOptions } from './routing.js';
import { COMMUNITY_LIMITS, FeedQuery, PageQuery, PostsPage } from './schemas.js';

/** `/v1/community/feed/*`: recent, trending and following, keyset-paged. */
export const communityFeedRoutes: FastifyPluginAsyncTypebox<CommunityRouteOptions> = async (app, { community, ensureActive }) => {
  const tags = ['community'];
  const page = (query: { limit?: number; cursor?: string }) => ({ limit: query.limit ?? COMMUNITY_LIMITS.feedDefault, cursor: query.cursor });

  app.get(
    '/v1/community/feed/recent',
    {
      config: { auth: 'optional' },
      schema: {
        tags,
        summary: 'Newest posts, optionally of one hashtag; optional auth fills likedByMe',
        querystring: FeedQuery,
        response: { 200: PostsPage, ...errorResponses(400) },
      },
    },
    async (request) => community.feeds.recent({ ...page(request.query), tag: request.query.tag }, request.principal?.userId ?? null),
  );

  app.get(
    '/v1/community/feed/trending',
    {
      config: { auth: 'optional' },
      schema: {
        tags,
        summary: 'Posts by trending score (recomputed every 15 minutes); optional auth fills likedByMe',
        querystring: PageQuery,
        response: { 200: PostsPage, ...errorResponses(400) },
      },
    },
    async (request) => community.feeds.trending(page(request.query), request.principal?.userId ?? null),
  );

  app.get(
    '/v1/community/feed/following',
    {
      config: { auth: 'required' },
      schema: {
        tags,
        summary: 'Posts of the accounts you follow, newest first',
        querystring: PageQuery,
        response: { 200: PostsPage, ...errorResponses(400, 401) },
      },
    },
    async (request) => {
      const { userId } = principalOf(request);
      await ensureActive(userId);
      return community.feeds.following(page(request.query), userId);
    },
  );
};
