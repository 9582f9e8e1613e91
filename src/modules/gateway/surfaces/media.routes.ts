import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../../platform/auth/plugin.js';
import { errorResponses } from '../../../platform/http/schemas.js';
import {
  AudioBody,
  AudioResponse,
  EnhanceImageBody,
  ExtendBody,
  ImageBody,
  ImageOrJobResponse,
  ImageResponse,
  LipSyncBody,
  VideoBody,
  VideoJobResponse,
} from './media.schemas.js';
import type { MediaCallOptions } from '../media/common.js';
import type { MediaGateway } from '../media/media.js';
import type { GatewayService } from '../service.js';

/** `/v1/ai/image|video|audio|enhance/image`: access tokens, or API keys with `ai:image`, `ai:video`, `ai:audio`. */
export const mediaRoutes: FastifyPluginAsyncTypebox<{ media: MediaGateway; gateway: Pick<GatewayService, 'once'> }> = async (app, { media, gateway }) => {
  const tags = ['ai'];
  const errors = errorResponses(400, 401, 403, 404, 429, 503);

  /** Runs a media call once per Idempotency-Key; a replay answers the stored body with `idempotent-replayed: true`. */
  const once = async <T extends object>(request: FastifyRequest, reply: FastifyReply, run: (options: MediaCallOptions) => Promise<T>): Promise<T> => {
    const principal = principalOf(request);
    const key = request.headers['idempotency-key'];
    const { body, replayed } = await gateway.once(
      principal,
      { idempotencyKey: typeof key === 'string' ? key : undefined },
      request.routeOptions.url ?? request.url,
      request.body,
      async (metered) => (await run({ timing: request.timing, request: metered })) as unknown as Record<string, unknown>,
    );
    if (replayed) reply.header('idempotent-replayed', 'true');
    const requestId = (body as { requestId?: unknown }).requestId;
    if (typeof requestId === 'string') reply.header('x-ai-request-id', requestId);
    return body as unknown as T;
  };

  app.post(
    '/v1/ai/image',
    {
      config: { auth: 'required', scope: 'ai:image' },
      schema: {
        tags,
        summary: 'Generate 1-8 images (charged per image delivered); async: true answers with a job',
        body: ImageBody,
        response: { 200: ImageOrJobResponse, ...errors },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      type Answer = Awaited<ReturnType<typeof media.image.generateSync>> | Awaited<ReturnType<typeof media.image.submit>>;
      return once<Answer>(request, reply, (options) =>
        request.body.async ? media.image.submit(principal, request.body, options) : media.image.generateSync(principal, request.body, options),
      );
    },
  );

  app.post(
    '/v1/ai/video',
    {
      config: { auth: 'required', scope: 'ai:video' },
      schema: {
        tags,
        summary: 'Start a video job (price reserved now; poll or stream GET /v1/jobs/:id)',
        body: VideoBody,
        response: { 200: VideoJobResponse, ...errors },
      },
    },
    async (request, reply) => once(request, reply, (options) => media.video.submit(principalOf(request), request.body, options)),
  );

  app.post(
    '/v1/ai/video/lip-sync',
    {
      config: { auth: 'required', scope: 'ai:video' },
      schema: {
        tags,
        summary: 'Lip-sync a video (videoUrl or jobId) to speech (audioUrl, or text spoken by the provider); an async job',
        body: LipSyncBody,
        response: { 200: VideoJobResponse, ...errors },
      },
    },
    async (request, reply) => once(request, reply, (options) => media.video.lipSync(principalOf(request), request.body, options)),
  );

  app.post(
    '/v1/ai/video/extend',
    {
      config: { auth: 'required', scope: 'ai:video' },
      schema: {
        tags,
        summary: 'Continue a video (jobId or videoUrl) with an optional prompt; an async job',
        body: ExtendBody,
        response: { 200: VideoJobResponse, ...errors },
      },
    },
    async (request, reply) => once(request, reply, (options) => media.video.extend(principalOf(request), request.body, options)),
  );

  app.post(
    '/v1/ai/audio',
    {
      config: { auth: 'required', scope: 'ai:audio' },
      schema: {
        tags,
        summary: 'Speech (text -> WAV) or music (description -> track; no voice, no duration), synchronous',
        body: AudioBody,
        response: { 200: AudioResponse, ...errors },
      },
    },
    async (request, reply) => once(request, reply, (options) => media.audio.generate(principalOf(request), request.body, options)),
  );

  app.post(
    '/v1/ai/enhance/image',
    {
      config: { auth: 'required', scope: 'ai:image' },
      schema: {
        tags,
        summary: 'Enhance an image with an image model; the result is saved tagged "enhanced"',
        body: EnhanceImageBody,
        response: { 200: ImageResponse, ...errors },
      },
    },
    async (request, reply) => once(request, reply, (options) => media.enhance.enhance(principalOf(request), request.body, options)),
  );
};
