import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../platform/auth/plugin.js';
import { ADMIN_ROUTE } from '../../platform/auth/roles.js';
import { IdParams, Ok, errorResponses } from '../../platform/http/schemas.js';
import { openSse } from '../../platform/http/sse.js';
import {
  AudioBody,
  AudioResponse,
  EnhanceBodySchema,
  EnhanceImageBody,
  EnhanceResponse,
  ImageBody,
  ImageOrJobResponse,
  ImageResponse,
  TextBodySchema,
  TextResponse,
  VideoBody,
  VideoJobResponse,
} from '../gateway/index.js';
import { fromTextRoute } from '../gateway/index.js';
import { JobSchema } from '../jobs/service.js';
import { GenerationsPage, GenerationsQuery, LIBRARY_LIMITS } from '../library/service.js';
import {
  AnalyticsQuery,
  AnalyticsResponse,
  Conversation,
  ConversationCreate,
  ConversationsPage,
  ConversationsQuery,
  ConversationTurn,
  ConversationTurnResponse,
  HistoryPage,
  HistoryQuery,
  JobIdParams,
  ModelsQuery,
  ModelsResponse,
  UploadBody,
  UploadResponse,
} from './schemas.js';
import type { PlaygroundService } from './service.js';

/** The run's id and, when there is one, its gateway request id, as headers beside the /v1/ai/* answer shape. */
function runHeaders(reply: FastifyReply, runId: string, answer: unknown): void {
  reply.header('x-playground-run-id', runId);
  const requestId = (answer as { requestId?: unknown } | null)?.requestId;
  if (typeof requestId === 'string') reply.header('x-ai-request-id', requestId);
}

/**
 * `/v1/admin/playground/*` (spec B "Admin", ADMIN or SUPER_ADMIN): generation through the real gateway as the internal
 * playground identity, with the bodies and answers of the matching `/v1/ai/*` routes; the run's id is in the
 * `x-playground-run-id` header.
 */
export const playgroundRoutes: FastifyPluginAsyncTypebox<{ playground: PlaygroundService }> = async (app, { playground }) => {
  const tags = ['admin'];
  const generation = errorResponses(400, 401, 403, 404, 409, 429, 503);
  const adminOf = (request: Parameters<typeof principalOf>[0]) => principalOf(request).userId;

  app.get(
    '/v1/admin/playground/models',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Playground model picker: the servable models (not DISABLED, provider neither INACTIVE nor DISABLED)',
        querystring: ModelsQuery,
        response: { 200: ModelsResponse, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => playground.models(request.query),
  );

  app.post(
    '/v1/admin/playground/text',
    {
      config: { ...ADMIN_ROUTE, openapi: { stream: 'optional' } },
      schema: {
        tags,
        summary: 'Generate text as the playground identity (body of POST /v1/ai/text; stream: true answers with server-sent events)',
        body: TextBodySchema,
        response: { 200: TextResponse, ...generation },
      },
    },
    async (request, reply) => {
      const body = fromTextRoute(request.body);
      if (body.stream) {
        await playground.streamText(adminOf(request), body, (headers) => openSse(request, reply, { headers }));
        return reply;
      }
      const { answer, runId } = await playground.text(adminOf(request), body);
      runHeaders(reply, runId, answer);
      return answer;
    },
  );

  app.post(
    '/v1/admin/playground/text/stream',
    {
      config: { ...ADMIN_ROUTE, openapi: { stream: 'always' } },
      schema: {
        tags,
        summary: 'Stream text as the playground identity: server-sent events text {delta}, usage, finish, error, as POST /v1/ai/text with stream: true',
        body: TextBodySchema,
        response: { 200: Type.String({ description: 'text/event-stream' }), ...generation },
      },
    },
    async (request, reply) => {
      await playground.streamText(adminOf(request), fromTextRoute(request.body), (headers) => openSse(request, reply, { headers }));
      return reply;
    },
  );

  app.post(
    '/v1/admin/playground/image',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Generate images as the playground identity (body of POST /v1/ai/image; async: true answers with a job)',
        body: ImageBody,
        response: { 200: ImageOrJobResponse, ...generation },
      },
    },
    async (request, reply) => {
      const { answer, runId } = await playground.image(adminOf(request), request.body);
      runHeaders(reply, runId, answer);
      return answer;
    },
  );

  app.post(
    '/v1/admin/playground/audio',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Speech or music as the playground identity (body of POST /v1/ai/audio)',
        body: AudioBody,
        response: { 200: AudioResponse, ...generation },
      },
    },
    async (request, reply) => {
      const { answer, runId } = await playground.audio(adminOf(request), request.body);
      runHeaders(reply, runId, answer);
      return answer;
    },
  );

  app.post(
    '/v1/admin/playground/video',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Start a video job as the playground identity (body of POST /v1/ai/video); poll GET /v1/admin/playground/video/:jobId',
        body: VideoBody,
        response: { 200: VideoJobResponse, ...generation },
      },
    },
    async (request, reply) => {
      const { answer, runId } = await playground.video(adminOf(request), request.body);
      runHeaders(reply, runId, answer);
      return answer;
    },
  );

  app.get(
    '/v1/admin/playground/video/:jobId',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Poll a playground job (the Job resource of GET /v1/jobs/:id)',
        params: JobIdParams,
        response: { 200: JobSchema, ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => playground.job(request.params.jobId),
  );

  app.post(
    '/v1/admin/playground/upload',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Store a source image (PNG, JPEG or WebP, base64) for image-to-image or enhance-image',
        body: UploadBody,
        response: { 201: UploadResponse, ...errorResponses(400, 401, 403) },
      },
    },
    async (request, reply) => reply.code(201).send(await playground.upload(request.body)),
  );

  app.post(
    '/v1/admin/playground/enhance-prompt',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Rewrite a prompt with a multimodal model (body of POST /v1/ai/enhance/prompt)',
        body: EnhanceBodySchema,
        response: { 200: EnhanceResponse, ...generation },
      },
    },
    async (request, reply) => {
      const { answer, runId } = await playground.enhancePrompt(adminOf(request), request.body);
      runHeaders(reply, runId, answer);
      return answer;
    },
  );

  app.post(
    '/v1/admin/playground/enhance-image',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Enhance an image with an image model (body of POST /v1/ai/enhance/image)',
        body: EnhanceImageBody,
        response: { 200: ImageResponse, ...generation },
      },
    },
    async (request, reply) => {
      const { answer, runId } = await playground.enhanceImage(adminOf(request), request.body);
      runHeaders(reply, runId, answer);
      return answer;
    },
  );

  app.get(
    '/v1/admin/playground/history',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Playground runs of every operator (who, what, model, outcome), newest first',
        querystring: HistoryQuery,
        response: { 200: HistoryPage, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => playground.history({ ...request.query, limit: request.query.limit ?? 50 }),
  );

  app.get(
    '/v1/admin/playground/generations',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: "The playground identity's generations (library items), newest first; TEXT only with kind=TEXT",
        querystring: GenerationsQuery,
        response: { 200: GenerationsPage, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const { kind, favoritesOnly = false, search, tag, limit = LIBRARY_LIMITS.generationsDefault, cursor } = request.query;
      return playground.generations({ kind, favoritesOnly, search: search?.trim() || undefined, tag: tag?.trim() || undefined, limit, cursor });
    },
  );

  app.get(
    '/v1/admin/playground/analytics',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Playground runs per UTC day (failed runs and tokens charged beside them)',
        querystring: AnalyticsQuery,
        response: { 200: AnalyticsResponse, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => playground.analytics(request.query.days ?? 30),
  );

  app.post(
    '/v1/admin/playground/conversations',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Save a multi-turn conversation (yours alone); POST .../:id/turns continues it',
        body: ConversationCreate,
        response: { 201: Conversation, ...errorResponses(400, 401, 403) },
      },
    },
    async (request, reply) => reply.code(201).send(await playground.conversations.create(adminOf(request), request.body)),
  );

  app.get(
    '/v1/admin/playground/conversations',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: 'Your saved conversations, most recently changed first',
        querystring: ConversationsQuery,
        response: { 200: ConversationsPage, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => playground.conversations.list(adminOf(request), { limit: request.query.limit ?? 20, cursor: request.query.cursor }),
  );

  app.get(
    '/v1/admin/playground/conversations/:id',
    {
      config: ADMIN_ROUTE,
      schema: { tags, summary: 'One of your saved conversations', params: IdParams, response: { 200: Conversation, ...errorResponses(401, 403, 404) } },
    },
    async (request) => playground.conversations.get(adminOf(request), request.params.id),
  );

  app.post(
    '/v1/admin/playground/conversations/:id/turns',
    {
      config: ADMIN_ROUTE,
      schema: {
        tags,
        summary: "Continue a conversation: the message and the saved ones go through the gateway on the conversation's model; both and the reply are saved",
        params: IdParams,
        body: ConversationTurn,
        response: { 200: ConversationTurnResponse, ...generation },
      },
    },
    async (request, reply) => {
      const result = await playground.conversations.turn(adminOf(request), request.params.id, request.body);
      reply.header('x-ai-request-id', result.reply.requestId);
      return result;
    },
  );

  app.delete(
    '/v1/admin/playground/conversations/:id',
    {
      config: ADMIN_ROUTE,
      schema: { tags, summary: 'Delete one of your saved conversations', params: IdParams, response: { 200: Ok, ...errorResponses(401, 403, 404) } },
    },
    async (request) => {
      await playground.conversations.remove(adminOf(request), request.params.id);
      return { ok: true as const };
    },
  );
};
