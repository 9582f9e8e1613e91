import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { registerErrorHandling } from '../../platform/http/error-handler.js';
import { StrictObject } from '../../platform/http/schemas.js';
import { openSse } from '../../platform/http/sse.js';
import { toOpenAiError } from './openai.errors.js';
import { IGNORED_HEADER, IdempotencyHeaders, TEXT_BODY_LIMIT_BYTES } from '../gateway/index.js';
import {
  ChatCompletion,
  ChatCompletionBody,
  ImageGenerationBody,
  ImagesResponse,
  KeyInfo,
  OpenAiModel,
  OpenAiModelList,
  SpeechAudio,
  SpeechBody,
  openAiErrors,
} from './openai.schemas.js';
import type { CompatService } from './service.js';

/**
 * `/openai/v1/*` (register with that prefix): OpenAI's routes and shapes, errors included, for the official `openai`
 * client pointed here with `baseURL`. API keys are sent as `Authorization: Bearer sk_sf_…`, as that client does.
 */
export const openAiRoutes: FastifyPluginAsyncTypebox<{ compat: CompatService }> = async (app, { compat }) => {
  const tags = ['openai'];
  registerErrorHandling(app, toOpenAiError);

  app.post(
    '/chat/completions',
    {
      bodyLimit: TEXT_BODY_LIMIT_BYTES,
      config: { auth: 'required', scope: 'ai:text', openapi: { stream: 'optional' } },
      schema: {
        tags,
        summary: "Chat completion in OpenAI's shape (chat.completion, or chat.completion.chunk events with stream: true), metered like POST /v1/ai/text",
        body: ChatCompletionBody,
        headers: IdempotencyHeaders,
        response: { 200: ChatCompletion, ...openAiErrors(400, 401, 403, 404, 409, 429, 500, 503) },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const idempotencyKey = request.headers['idempotency-key'];
      if (request.body.stream) {
        await compat.streamChatCompletion(principal, request.body, {
          idempotencyKey,
          timing: request.timing,
          open: (headers) => openSse(request, reply, { headers }),
        });
        return reply;
      }
      const { completion, requestId, replayed, ignored } = await compat.chatCompletion(principal, request.body, { idempotencyKey, timing: request.timing });
      if (replayed) reply.header('idempotent-replayed', 'true');
      reply.header('x-ai-request-id', requestId);
      if (ignored) reply.header(IGNORED_HEADER, ignored.join(', '));
      return completion;
    },
  );

  app.get(
    '/models',
    {
      config: { auth: 'required', scope: '*' },
      schema: {
        tags,
        summary: "The models the caller's plan allows that can be served now, in OpenAI's list shape",
        response: { 200: OpenAiModelList, ...openAiErrors(401, 429, 500) },
      },
    },
    async (request) => compat.listModels(principalOf(request)),
  );

  // A model id holds a slash (`local/text`), so the id is the rest of the path.
  app.get(
    '/models/*',
    {
      config: { auth: 'required', scope: '*' },
      schema: {
        tags,
        summary: "One model the caller's plan allows, in OpenAI's shape",
        params: StrictObject({ '*': Type.String({ minLength: 1, maxLength: 200, description: 'The model id, e.g. local/text' }) }),
        response: { 200: OpenAiModel, ...openAiErrors(400, 401, 404, 429, 500) },
      },
    },
    async (request) => compat.getModel(principalOf(request), request.params['*']),
  );

  app.get(
    '/key',
    {
      config: { auth: 'required', scope: '*' },
      schema: {
        tags,
        summary: 'The calling API key: label, scopes, expiry, the balance of the wallet it spends from, and its spend today and this month',
        response: { 200: KeyInfo, ...openAiErrors(400, 401, 404, 429, 500) },
      },
    },
    async (request) => compat.keyInfo(principalOf(request)),
  );

  app.post(
    '/images/generations',
    {
      config: { auth: 'required', scope: 'ai:image' },
      schema: {
        tags,
        summary: "Generate images in OpenAI's shape (url or b64_json), metered like POST /v1/ai/image",
        body: ImageGenerationBody,
        headers: IdempotencyHeaders,
        response: { 200: ImagesResponse, ...openAiErrors(400, 401, 403, 404, 409, 429, 500, 503) },
      },
    },
    async (request, reply) => {
      const { response, requestId, replayed } = await compat.images(principalOf(request), request.body, {
        idempotencyKey: request.headers['idempotency-key'],
        timing: request.timing,
      });
      if (replayed) reply.header('idempotent-replayed', 'true');
      reply.header('x-ai-request-id', requestId);
      return response;
    },
  );

  app.post(
    '/audio/speech',
    {
      config: { auth: 'required', scope: 'ai:audio' },
      schema: {
        tags,
        summary: 'Speak text: answers the audio bytes (x-ai-tokens-charged says what it cost), metered like POST /v1/ai/audio',
        body: SpeechBody,
        headers: IdempotencyHeaders,
        response: {
          200: { description: 'The audio file', content: { 'audio/wav': { schema: SpeechAudio } } },
          ...openAiErrors(400, 401, 403, 404, 409, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const speech = await compat.speech(principalOf(request), request.body, { idempotencyKey: request.headers['idempotency-key'], timing: request.timing });
      if (speech.replayed) reply.header('idempotent-replayed', 'true');
      return reply
        .header('x-ai-request-id', speech.requestId)
        .header('x-ai-tokens-charged', String(speech.tokensCharged))
        .type(speech.contentType)
        .send(speech.bytes);
    },
  );
};
