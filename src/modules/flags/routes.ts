import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../platform/http/schemas.js';
import { ViewerFlags } from './schemas.js';
import type { FlagsService } from './service.js';

export const flagRoutes: FastifyPluginAsyncTypebox<{ flags: FlagsService }> = async (app, { flags }) => {
  app.get(
    '/v1/flags',
    {
      config: { auth: 'optional' },
      schema: {
        tags: ['flags'],
        summary: 'Feature flags for the viewer: each flag evaluated for the caller (a Bearer token is decoded when sent, never required)',
        response: { 200: ViewerFlags, ...errorResponses(400) },
      },
    },
    async (request) => ({ flags: await flags.evaluate(request.principal ? { userId: request.principal.userId } : null) }),
  );
};
