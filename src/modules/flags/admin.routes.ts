import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ADMIN_ROUTE, SUPER_ADMIN_ROUTE, auditActorOf } from '../../platform/auth/roles.js';
import { Ok, errorResponses } from '../../platform/http/schemas.js';
import { CreateFlagBody, Flag, FlagKeyParams, FlagList, UpdateFlagBody } from './schemas.js';
import type { FlagsService } from './service.js';

/** Admin CRUD of feature flags: reads for ADMIN and SUPER_ADMIN, changes for SUPER_ADMIN, each change audited. */
export const flagAdminRoutes: FastifyPluginAsyncTypebox<{ flags: FlagsService }> = async (app, { flags }) => {
  const tags = ['admin'];

  app.get(
    '/v1/admin/flags',
    {
      config: ADMIN_ROUTE,
      schema: { tags, summary: 'Every feature flag with its targeting, by key', response: { 200: FlagList, ...errorResponses(401, 403) } },
    },
    async () => ({ items: await flags.list() }),
  );

  app.get(
    '/v1/admin/flags/:key',
    {
      config: ADMIN_ROUTE,
      schema: { tags, summary: 'One feature flag', params: FlagKeyParams, response: { 200: Flag, ...errorResponses(400, 401, 403, 404) } },
    },
    async (request) => flags.get(request.params.key),
  );

  app.post(
    '/v1/admin/flags',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Create a feature flag (off unless `enabled`)',
        body: CreateFlagBody,
        response: { 201: Flag, ...errorResponses(400, 401, 403, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await flags.create(auditActorOf(request), request.body)),
  );

  app.patch(
    '/v1/admin/flags/:key',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Change a feature flag: its description, switch or targeting rules (rules left out keep their value)',
        params: FlagKeyParams,
        body: UpdateFlagBody,
        response: { 200: Flag, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => flags.update(auditActorOf(request), request.params.key, request.body),
  );

  app.delete(
    '/v1/admin/flags/:key',
    {
      config: SUPER_ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Delete a feature flag (viewers no longer receive it)',
        params: FlagKeyParams,
        response: { 200: Ok, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      await flags.remove(auditActorOf(request), request.params.key);
      return { ok: true as const };
    },
  );
};
