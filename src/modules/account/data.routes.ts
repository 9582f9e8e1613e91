import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { activeAccountHook } from '../../platform/auth/active-account.js';
import { Ok, errorResponses } from '../../platform/http/schemas.js';
import { clientInfo } from '../../platform/http/client-info.js';
import { DataExport, DataExportList, DownloadQuery, ExportParams, PasswordBody } from './schemas.js';
import type { AccountService } from './service.js';

/** Data export and account deletion. */
export const accountDataRoutes: FastifyPluginAsyncTypebox<{ account: AccountService; ensureActive: (userId: string) => Promise<unknown> }> = async (
  app,
  { account, ensureActive },
) => {
  app.addHook('preHandler', activeAccountHook(ensureActive));
  const tags = ['account'];
  const config = { auth: 'required' as const };

  app.post(
    '/v1/account/data-export',
    {
      config,
      schema: {
        tags,
        summary: 'Queue an archive of your data',
        description: 'While an export is queued or running, that request is returned instead of a new one.',
        response: { 202: DataExport, ...errorResponses(401, 503) },
      },
    },
    async (request, reply) => reply.code(202).send(await account.exports.request(principalOf(request).userId)),
  );

  app.get(
    '/v1/account/data-export',
    { config, schema: { tags, summary: 'Your last 10 export requests, newest first', response: { 200: DataExportList, ...errorResponses(401) } } },
    async (request) => account.exports.list(principalOf(request).userId),
  );

  app.get(
    '/v1/account/data-export/:id/download',
    {
      schema: {
        tags,
        summary: 'Download a ready export (the signed link from the export row or the email)',
        params: ExportParams,
        querystring: DownloadQuery,
        response: { 200: Type.Unknown({ description: 'application/zip' }), ...errorResponses(400, 404) },
      },
    },
    async (request, reply) => {
      const file = await account.exports.open(request.params.id, request.query.token);
      return reply
        .header('content-type', 'application/zip')
        .header('content-length', String(file.size))
        .header('content-disposition', `attachment; filename="${file.filename}"`)
        .header('cache-control', 'private, no-store')
        .send(file.stream);
    },
  );

  app.post(
    '/v1/account/delete',
    {
      config,
      schema: {
        tags,
        summary: 'Delete your account (needs the password); signs out everywhere and revokes API keys',
        body: PasswordBody,
        response: { 200: Ok, ...errorResponses(400, 401) },
      },
    },
    async (request) => {
      await account.deletion.deleteAccount(principalOf(request).userId, request.body.password, clientInfo(request));
      return { ok: true as const };
    },
  );
};
