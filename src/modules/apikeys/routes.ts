import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { Ok, errorResponses } from '../../platform/http/schemas.js';
import { ApiKeyCreated, ApiKeyIdParams, ApiKeyList, ApiKeyListed, CreateApiKeyBody, UpdateApiKeyBody } from './schemas.js';
import type { ApiKeysService } from './service.js';

/** Key management needs a user access token (API keys are refused here by the auth plugin: these routes have no scope). */
export const apiKeyRoutes: FastifyPluginAsyncTypebox<{ apiKeys: ApiKeysService }> = async (app, { apiKeys }) => {
  const tags = ['api-keys'];

  app.get(
    '/v1/account/api-keys',
    {
      config: { auth: 'required' },
      schema: { tags, summary: 'Your API keys (without the secrets)', response: { 200: ApiKeyList, ...errorResponses(401, 403) } },
    },
    async (request) => apiKeys.list(principalOf(request).userId),
  );

  app.post(
    '/v1/account/api-keys',
    {
      config: { auth: 'required' },
      schema: {
        tags,
        summary: 'Create an API key; the raw key is returned only once',
        body: CreateApiKeyBody,
        response: { 201: ApiKeyCreated, ...errorResponses(400, 401, 403) },
      },
    },
    async (request, reply) => reply.code(201).send(await apiKeys.create(principalOf(request).userId, request.body)),
  );

  app.patch(
    '/v1/account/api-keys/:id',
    {
      config: { auth: 'required' },
      schema: {
        tags,
        summary: "Change an API key's label or controls (budget, rateLimit, allowedModels; null removes one)",
        params: ApiKeyIdParams,
        body: UpdateApiKeyBody,
        response: { 200: ApiKeyListed, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => apiKeys.update(principalOf(request).userId, request.params.id, request.body),
  );
  app.delete(
    '/v1/account/api-keys/:id',
    {
      config: { auth: 'required' },
      schema: { tags, summary: 'Revoke an API key', params: ApiKeyIdParams, response: { 200: Ok, ...errorResponses(400, 401, 403, 404) } },
    },
    async (request) => apiKeys.revoke(principalOf(request).userId, request.params.id),
  );
};
