import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { viewerOf, type CommunityRouteOptions } from './routing.js';
import { COMMUNITY_LIMITS, WorkEnvelope, WorkIdParams, WorkLikeResponse, WorkViewResponse, WorksPage, WorksQuery } from './schemas.js';

/** `/v1/community/works/*`: the gallery of imported and native works. */
export const communityWorkRoutes: FastifyPluginAsyncTypebox<CommunityRouteOptions> = async (app, { community, ensureActive }) => {
  const tags = ['community'];

  app.get(
    '/v1/community/works',
    {
      config: { auth: 'optional' },
      schema: {
        tags,
        summary: 'The gallery: imported and native works; optional auth fills favored/starred',
        querystring: WorksQuery,
        response: { 200: WorksPage, ...errorResponses(400) },
      },
    },
    async (request) => {
      const { limit = COMMUNITY_LIMITS.worksDefault, cursor, contentType, source, sort = 'recent' } = request.query;
      return community.works.list({ limit, cursor, contentType, source, sort }, viewerOf(request));
    },
  );

  app.get(
    '/v1/community/works/:id',
    {
      config: { auth: 'optional' },
      schema: {
        tags,
        summary: 'One work by _platform.id or externalId (does not count a view); optional auth',
        params: WorkIdParams,
        response: { 200: WorkEnvelope, ...errorResponses(404) },
      },
    },
    async (request) => community.works.get(request.params.id, viewerOf(request)),
  );

  app.post(
    '/v1/community/works/:id/view',
    {
      config: { auth: 'optional' },
      schema: {
        tags,
        summary: 'Count a view (best-effort, not deduplicated); optional auth',
        params: WorkIdParams,
        response: { 200: WorkViewResponse, ...errorResponses(404) },
      },
    },
    async (request) => community.works.view(request.params.id, viewerOf(request)),
  );

  app.post(
    '/v1/community/works/:id/like',
    {
      config: { auth: 'required' },
      schema: {
        tags,
        summary: "Like a work (idempotent; separate from its post's likes)",
        params: WorkIdParams,
        response: { 200: WorkLikeResponse, ...errorResponses(401, 404) },
      },
    },
    async (request) => {
      const { userId } = principalOf(request);
      await ensureActive(userId);
      return community.works.like(userId, request.params.id);
    },
  );

  app.delete(
    '/v1/community/works/:id/like',
    {
      config: { auth: 'required' },
      schema: {
        tags,
        summary: 'Take your like of a work back (idempotent)',
        params: WorkIdParams,
        response: { 200: WorkLikeResponse, ...errorResponses(401, 404) },
      },
    },
    async (request) => {
      const { userId } = principalOf(request);
      await ensureActive(userId);
      return community.works.unlike(userId, request.params.id);
    },
  );
};
