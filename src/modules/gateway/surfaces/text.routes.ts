import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../../platform/auth/plugin.js';
import { errorResponses } from '../../../platform/http/schemas.js';
import { openSse } from '../../../platform/http/sse.js';
import { EnhanceBody, EnhanceResponse, IdempotencyHeaders, TEXT_BODY_LIMIT_BYTES, TextBody, TextResponse } from './text.schemas.js';
import type { GatewayService } from '../service.js';
import { fromTextRoute } from './text-body.js';
import { IGNORED_HEADER } from '../text/text.js';

/** `/v1/ai/*` text routes: access tokens or API keys with the route's scope. */
export const gatewayRoutes: FastifyPluginAsyncTypebox<{ gateway: GatewayService }> = async (app, { gateway }) => {
  const tags = ['ai'];
  const errors = errorResponses(400, 401, 403, 404, 409, 429, 503);

  app.post(
    '/v1/ai/text',
    {
      // Inline images make bodies larger than the service's default limit (20 images of at most 5 MB as base64).
      bodyLimit: TEXT_BODY_LIMIT_BYTES,
      config: { auth: 'required', scope: 'ai:text', openapi: { stream: 'optional' } },
      schema: {
        tags,
        summary: 'Generate text (JSON, or server-sent events with stream: true)',
        body: TextBody,
        headers: IdempotencyHeaders,
        response: { 200: TextResponse, ...errors },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const body = fromTextRoute(request.body);
      const idempotencyKey = request.headers['idempotency-key'];
      if (body.stream) {
        await gateway.streamText(principal, body, { idempotencyKey, timing: request.timing, open: (headers) => openSse(request, reply, { headers }) });
        return reply;
      }
      const { body: answer, replayed } = await gateway.text(principal, body, { idempotencyKey, timing: request.timing });
      if (replayed) reply.header('idempotent-replayed', 'true');
      reply.header('x-ai-request-id', answer.requestId);
      if (answer.ignored) reply.header(IGNORED_HEADER, answer.ignored.join(', '));
      return answer;
    },
  );

  app.post(
    '/v1/ai/enhance/prompt',
    {
      config: { auth: 'required', scope: 'ai:text' },
      schema: {
        tags,
        summary: 'Rewrite a prompt for a target (text, image, video, audio.speech, audio.music, audio.sfx) with a multimodal model',
        body: EnhanceBody,
        headers: IdempotencyHeaders,
        response: { 200: EnhanceResponse, ...errors },
      },
    },
    async (request, reply) => {
      const { body, replayed } = await gateway.enhancePrompt(principalOf(request), request.body, {
        idempotencyKey: request.headers['idempotency-key'],
        timing: request.timing,
      });
      if (replayed) reply.header('idempotent-replayed', 'true');
      return body;
    },
  );
};
