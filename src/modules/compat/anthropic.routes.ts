import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { registerErrorHandling } from '../../platform/http/error-handler.js';
import { openSse } from '../../platform/http/sse.js';
import { anthropicStatusOf, toAnthropicError } from './anthropic.format.js';
import { CountTokensBody, CountTokensResponse, MESSAGES_BODY_LIMIT_BYTES, MessagesBody, Message, anthropicErrors } from './anthropic.schemas.js';
import { IGNORED_HEADER, IdempotencyHeaders } from '../gateway/index.js';
import type { CompatService } from './service.js';

/**
 * `/anthropic/v1/*` (register with that prefix): Anthropic's Messages API for the official `@anthropic-ai/sdk` pointed
 * here with `baseURL`. The API key is accepted as `x-api-key` (what that client sends) or as `Authorization: Bearer`.
 */
export const anthropicRoutes: FastifyPluginAsyncTypebox<{ compat: CompatService }> = async (app, { compat }) => {
  registerErrorHandling(app, toAnthropicError, anthropicStatusOf);

  app.post(
    '/messages',
    {
      // Images travel inline as base64: Anthropic's own request limit rather than the service's default.
      bodyLimit: MESSAGES_BODY_LIMIT_BYTES,
      config: { auth: 'required', scope: 'ai:text', apiKeyHeader: 'x-api-key', openapi: { stream: 'optional' } },
      schema: {
        tags: ['anthropic'],
        summary: "A message in Anthropic's shape (or its named stream events with stream: true), metered like POST /v1/ai/text; the key may come as x-api-key",
        body: MessagesBody,
        headers: IdempotencyHeaders,
        response: { 200: Message, ...anthropicErrors(400, 401, 403, 404, 409, 413, 429, 500, 503) },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const idempotencyKey = request.headers['idempotency-key'];
      if (request.body.stream) {
        await compat.streamMessage(principal, request.body, {
          idempotencyKey,
          timing: request.timing,
          open: (headers) => openSse(request, reply, { headers }),
        });
        return reply;
      }
      const { message, requestId, replayed, ignored } = await compat.message(principal, request.body, { idempotencyKey, timing: request.timing });
      if (replayed) reply.header('idempotent-replayed', 'true');
      reply.header('x-ai-request-id', requestId);
      if (ignored) reply.header(IGNORED_HEADER, ignored.join(', '));
      return message;
    },
  );

  app.post(
    '/messages/count_tokens',
    {
      bodyLimit: MESSAGES_BODY_LIMIT_BYTES,
      config: { auth: 'required', scope: 'ai:text', apiKeyHeader: 'x-api-key' },
      schema: {
        tags: ['anthropic'],
        summary:
          "The input tokens of a Messages request (without max_tokens), counted in the gateway's tokenizer: an estimate, free; the key may come as x-api-key",
        body: CountTokensBody,
        response: { 200: CountTokensResponse, ...anthropicErrors(400, 401, 403, 404, 413, 429, 500) },
      },
    },
    async (request) => compat.countAnthropicTokens(principalOf(request), request.body),
  );
};
