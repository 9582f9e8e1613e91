import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyError } from 'fastify';
import { principalOf } from '../../platform/auth/plugin.js';
import { describeError } from '../../platform/http/error-handler.js';
import { badRequest, type AppError } from '../../platform/http/errors.js';
import { openSse } from '../../platform/http/sse.js';
import { IGNORED_HEADER, IdempotencyHeaders, TEXT_BODY_LIMIT_BYTES } from '../gateway/index.js';
import { toOpenAiError } from './openai.errors.js';
import { openAiErrors } from './openai.schemas.js';
import {
  includeOf,
  InputItemList,
  InputItemsQuery,
  ResponseCreateBody,
  ResponseDeleted,
  ResponseIdParams,
  ResponseObject,
  RetrieveQuery,
} from './responses.schemas.js';
import type { ResponsesService } from './responses.service.js';

/**
 * OpenAI's Responses API under `/openai/v1` (register with that prefix, beside openai.routes.ts): create, retrieve,
 * delete and list input items, errors in OpenAI's shape.
 */
export const openAiResponsesRoutes: FastifyPluginAsyncTypebox<{ responses: ResponsesService }> = async (app, { responses }) => {
  const tags = ['openai'];
  // Unknown paths under the prefix are openai.routes.ts's (one not-found handler per prefix).
  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
    const described = describeError(error, request);
    return reply.code(described.status).headers(described.headers).send(toOpenAiError(described));
  });

  app.post(
    '/responses',
    {
      bodyLimit: TEXT_BODY_LIMIT_BYTES,
      config: { auth: 'required', scope: 'ai:text', openapi: { stream: 'optional' } },
      schema: {
        tags,
        summary:
          "A model response in OpenAI's Responses shape (or its streaming events with stream: true), metered like POST /v1/ai/text and kept 30 days unless store: false",
        body: ResponseCreateBody,
        headers: IdempotencyHeaders,
        response: { 200: ResponseObject, ...openAiErrors(400, 401, 403, 404, 409, 429, 500, 503) },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const idempotencyKey = request.headers['idempotency-key'];
      if (request.body.stream) {
        await responses.stream(principal, request.body, { idempotencyKey, timing: request.timing, open: (headers) => openSse(request, reply, { headers }) });
        return reply;
      }
      const { response, requestId, replayed, ignored } = await responses.create(principal, request.body, { idempotencyKey, timing: request.timing });
      if (replayed) reply.header('idempotent-replayed', 'true');
      reply.header('x-ai-request-id', requestId);
      if (ignored) reply.header(IGNORED_HEADER, ignored.join(', '));
      return response;
    },
  );

  app.get(
    '/responses/:id',
    {
      config: { auth: 'required', scope: 'ai:text' },
      schema: {
        tags,
        summary: 'A stored response of the caller (or of their workspace), for 30 days after it was made',
        params: ResponseIdParams,
        querystring: RetrieveQuery,
        response: { 200: ResponseObject, ...openAiErrors(400, 401, 403, 404, 429, 500) },
      },
    },
    async (request) => {
      if (request.query.stream)
        throw badRequest('stream=true replays background responses, which this gateway does not run; retrieve the response without it.', [
          { field: 'query.stream', message: 'is not supported' },
        ]);
      return responses.retrieve(principalOf(request), request.params.id, includeOf(request.query));
    },
  );

  app.delete(
    '/responses/:id',
    {
      config: { auth: 'required', scope: 'ai:text' },
      schema: {
        tags,
        summary: 'Deletes a stored response',
        params: ResponseIdParams,
        response: { 200: ResponseDeleted, ...openAiErrors(401, 403, 404, 429, 500) },
      },
    },
    async (request) => responses.remove(principalOf(request), request.params.id),
  );

  app.get(
    '/responses/:id/input_items',
    {
      config: { auth: 'required', scope: 'ai:text' },
      schema: {
        tags,
        summary: "A stored response's own input items (the last first unless order=asc), in OpenAI's list shape",
        params: ResponseIdParams,
        querystring: InputItemsQuery,
        response: { 200: InputItemList, ...openAiErrors(400, 401, 403, 404, 429, 500) },
      },
    },
    async (request) => responses.inputItems(principalOf(request), request.params.id, { ...request.query, include: includeOf(request.query) }),
  );
};
