import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyError } from 'fastify';
import type { AppError } from '../../platform/http/errors.js';
import { principalOf } from '../../platform/auth/plugin.js';
import { describeError } from '../../platform/http/error-handler.js';
import { IdempotencyHeaders, type GatewayService } from '../gateway/index.js';
import { CreateEmbeddingResponse, EmbeddingCreateBody, createEmbedding } from './openai-embeddings.js';
import { toOpenAiError } from './openai.errors.js';
import { openAiErrors } from './openai.schemas.js';

/** Up to 2048 texts of up to 200,000 characters. */
const BODY_LIMIT_BYTES = 16 * 1024 * 1024;

/** `/openai/v1/embeddings` (register with the `/openai/v1` prefix, beside openai.routes.ts), errors in OpenAI's shape. */
export const openAiEmbeddingsRoutes: FastifyPluginAsyncTypebox<{ gateway: Pick<GatewayService, 'embeddings'> }> = async (app, { gateway }) => {
  // Errors in OpenAI's shape; unknown paths under the prefix are openai.routes.ts's (one not-found handler per prefix).
  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
    const described = describeError(error, request);
    return reply.code(described.status).headers(described.headers).send(toOpenAiError(described));
  });

  app.post(
    '/embeddings',
    {
      bodyLimit: BODY_LIMIT_BYTES,
      // Either of two scopes (`ai:embed` or `ai:text`): the gateway checks them before the body is read.
      config: { auth: 'required', scope: '*' },
      onRequest: async (request) => gateway.embeddings.requireScope(principalOf(request)),
      schema: {
        tags: ['openai'],
        summary: "Embeddings in OpenAI's shape (float or base64), metered like POST /v1/ai/embeddings; API keys need ai:embed or ai:text",
        body: EmbeddingCreateBody,
        headers: IdempotencyHeaders,
        response: { 200: CreateEmbeddingResponse, ...openAiErrors(400, 401, 403, 404, 409, 429, 500, 503) },
      },
    },
    async (request, reply) => {
      const { response, requestId, replayed, recomputed } = await createEmbedding(gateway, principalOf(request), request.body, {
        idempotencyKey: request.headers['idempotency-key'],
        timing: request.timing,
      });
      if (replayed) reply.header('idempotent-replayed', 'true');
      if (recomputed) reply.header('idempotent-recomputed', 'true');
      reply.header('x-ai-request-id', requestId);
      return response;
    },
  );
};
