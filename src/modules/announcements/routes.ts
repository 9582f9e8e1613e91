import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../platform/http/schemas.js';
import { BannerList } from './schemas.js';
import type { AnnouncementsService } from './service.js';

export const announcementRoutes: FastifyPluginAsyncTypebox<{ announcements: AnnouncementsService }> = async (app, { announcements }) => {
  app.get(
    '/v1/announcements',
    {
      config: { auth: 'optional' },
      schema: {
        tags: ['announcements'],
        summary: 'Banners showing now for the viewer, the most severe first (a Bearer token is decoded when sent, never required)',
        response: { 200: BannerList, ...errorResponses(400) },
      },
    },
    async (request) => announcements.active(request.principal ? { userId: request.principal.userId } : null),
  );
};
