import type { Static } from 'typebox';
import type { Principal } from '../../platform/auth/plugin.js';
import type { FilesService } from '../files/service.js';
import type { GatewayService, MediaGateway } from '../gateway/index.js';
import type { ImageGenerationBody, SpeechBody } from './openai.schemas.js';

export interface CompatMediaDeps {
  gateway: Pick<GatewayService, 'once'>;
  media: { image: Pick<MediaGateway['image'], 'generateSync'>; audio: Pick<MediaGateway['audio'], 'generate'> };
  files: Pick<FilesService, 'readSource'>;
  now: () => Date;
}

const IMAGES_ROUTE = 'POST /openai/v1/images/generations';
const SPEECH_ROUTE = 'POST /openai/v1/audio/speech';

type ImageAnswer = Awaited<ReturnType<MediaGateway['image']['generateSync']>>;
type AudioAnswer = Awaited<ReturnType<MediaGateway['audio']['generate']>>;

function sizeOf(size: string | null | undefined): { width?: number; height?: number } {
  const match = size ? /^(\d+)x(\d+)$/.exec(size) : null;
  return match ? { width: Number(match[1]), height: Number(match[2]) } : {};
}

/**
 * OpenAI's image and speech routes over the media gateway (`/v1/ai/image` and `/v1/ai/audio`'s code, so the same
 * reservation, settlement, usage record and history), once per Idempotency-Key.
 */
export function createCompatMedia(deps: CompatMediaDeps) {
  const { gateway, media, files } = deps;
  const bytesOf = async (url: string) => (await files.readSource(url, { what: 'the generated file' })).bytes;

  return {
    async images(principal: Principal, body: Static<typeof ImageGenerationBody>, options: { idempotencyKey?: string }) {
      const { body: answer, replayed } = await gateway.once(principal, options, IMAGES_ROUTE, body, async () =>
        (await media.image.generateSync(principal, { model: body.model, prompt: body.prompt, count: body.n ?? 1, ...sizeOf(body.size) })) as unknown as Record<string, unknown>,
      );
      const images = answer as unknown as ImageAnswer;
      const data =
        body.response_format === 'b64_json'
          ? await Promise.all(images.images.map(async (image) => ({ b64_json: (await bytesOf(image.url)).toString('base64') })))
          : images.images.map((image) => ({ url: image.url }));
      return { response: { created: Math.floor(deps.now().getTime() / 1000), data, usage: { tokens_charged: images.usage.creditsConsumed } }, requestId: images.requestId, replayed };
    },

    /** The spoken audio's bytes, with what they cost. */
    async speech(principal: Principal, body: Static<typeof SpeechBody>, options: { idempotencyKey?: string }) {
      const { body: answer, replayed } = await gateway.once(principal, options, SPEECH_ROUTE, body, async () =>
        (await media.audio.generate(principal, { model: body.model, text: body.input, voice: body.voice, speed: body.speed ?? undefined })) as unknown as Record<string, unknown>,
      );
      const audio = answer as unknown as AudioAnswer;
      return { bytes: await bytesOf(audio.audio.url), contentType: audio.audio.mimeType, requestId: audio.requestId, tokensCharged: audio.usage.creditsConsumed, replayed };
    },
  };
}
