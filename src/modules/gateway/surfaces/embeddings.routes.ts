import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../../platform/auth/plugin.js';
import { errorResponses } from '../../../platform/http/schemas.js';
import { EMBEDDINGS_BODY_LIMIT_BYTES, EmbeddingsBody, EmbeddingsResponse } from './embeddings.schemas.js';
import { IdempotencyHeaders } from './text.schemas.js';
import type { GatewayService } from '../service.js';

/** `POST /v1/ai/embeddings`: access tokens, or API keys with `ai:embed` or `ai:text`. */
export const embeddingsRoutes: FastifyPluginAsyncTypebox<{ gateway: Pick<GatewayService, 'embeddings'> }> = async (app, { gateway }) => {
  app.post(
    '/v1/ai/embeddings',
    {
      bodyLimit: EMBEDDINGS_BODY_LIMIT_BYTES,
      // Either of two scopes: the key is let through by the auth plugin ('*') and checked here, before the body.
      config: { auth: 'required', scope: '*' },
      onRequest: async (request) => gateway.embeddings.requireScope(principalOf(request)),
      schema: {
        tags: ['ai'],
        summary: 'Embed texts: one unit vector per text, metered on the input tokens',
        description:
          "API keys need the `ai:embed` scope (or `ai:text`). Charged like text on the input tokens (the provider's count, or ours when it sends none); `Idempotency-Key` replays the first answer uncharged (vectors over 64 KB are not kept: the replay embeds the texts again on the same model, still uncharged, with `idempotent-recomputed: true`). Vectors are not saved to the library. `local/embed` works offline.",
        body: EmbeddingsBody,
        headers: IdempotencyHeaders,
        response: { 200: EmbeddingsResponse, ...errorResponses(400, 401, 403, 404, 409, 429, 503) },
      },
    },
    async (request, reply) => {
      const { input, encodingFormat, ...rest } = request.body;
      const { body, replayed, recomputed } = await gateway.embeddings.create(
        principalOf(request),
        { ...rest, input: typeof input === 'string' ? [input] : input },
        { idempotencyKey: request.headers['idempotency-key'], encodingFormat, timing: request.timing },
      );
      if (replayed) reply.header('idempotent-replayed', 'true');
      if (recomputed) reply.header('idempotent-recomputed', 'true');
      reply.header('x-ai-request-id', body.requestId);
      return {
        embeddings: body.embeddings.map((embedding, index) => ({ index, embedding })),
        dimensions: body.dimensions,
        usage: body.usage,
        model: body.model,
        requestId: body.requestId,
      };
    },
  );
};
