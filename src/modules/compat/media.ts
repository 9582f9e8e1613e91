import type { Static } from 'typebox';
import type { Principal } from '../../platform/auth/plugin.js';
import type { FilesService } from '../files/service.js';
import type { CallOptions, GatewayService, MediaGateway } from '../gateway/index.js';
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

const FORMAT_OF: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/webp': 'webp' };

/**
 * What OpenAI's answer adds for GPT Image models: the quality and size used, the format, and `usage` in its names
 * (the tokens the images were charged for) beside our `tokens_charged`. Per-image models answer without them, as
 * DALL-E does at OpenAI.
 */
function gptImageFields(images: ImageAnswer) {
  const { usage } = images;
  if (usage.quality === undefined || usage.inputTokens === undefined || usage.outputTokens === undefined) return { fields: {}, usage: {} };
  const format = FORMAT_OF[images.images[0]?.mimeType ?? ''];
  return {
    fields: { quality: usage.quality, ...(usage.size ? { size: usage.size } : {}), ...(format ? { output_format: format } : {}) },
    usage: {
      input_tokens: usage.inputTokens,
      input_tokens_details: { text_tokens: usage.inputTokensDetails?.textTokens ?? 0, image_tokens: usage.inputTokensDetails?.imageTokens ?? 0 },
      output_tokens: usage.outputTokens,
      total_tokens: usage.totalTokens ?? usage.inputTokens + usage.outputTokens,
    },
  };
}

/**
 * OpenAI's image and speech routes over the media gateway (`/v1/ai/image` and `/v1/ai/audio`'s code, so the same
 * reservation, settlement, usage record and history), once per Idempotency-Key.
 */
export function createCompatMedia(deps: CompatMediaDeps) {
  const { gateway, media, files } = deps;
  const bytesOf = async (url: string) => (await files.readSource(url, { what: 'the generated file' })).bytes;

  return {
    async images(principal: Principal, body: Static<typeof ImageGenerationBody>, options: CallOptions) {
      const { body: answer, replayed } = await gateway.once(
        principal,
        options,
        IMAGES_ROUTE,
        body,
        async (request) =>
          (await media.image.generateSync(
            principal,
            {
              model: body.model,
              prompt: body.prompt,
              count: body.n ?? 1,
              ...sizeOf(body.size),
              ...(body.quality ? { quality: body.quality } : {}),
            },
            { timing: options.timing, request },
          )) as unknown as Record<string, unknown>,
      );
      const images = answer as unknown as ImageAnswer;
      const data =
        body.response_format === 'b64_json'
          ? await Promise.all(images.images.map(async (image) => ({ b64_json: (await bytesOf(image.url)).toString('base64') })))
          : images.images.map((image) => ({ url: image.url }));
      const gpt = gptImageFields(images);
      const created = Math.floor(deps.now().getTime() / 1000);
      return {
        response: { created, data, ...gpt.fields, usage: { tokens_charged: images.usage.creditsConsumed, ...gpt.usage } },
        requestId: images.requestId,
        replayed,
      };
    },

    /** The spoken audio's bytes, with what they cost. */
    async speech(principal: Principal, body: Static<typeof SpeechBody>, options: CallOptions) {
      const { body: answer, replayed } = await gateway.once(
        principal,
        options,
        SPEECH_ROUTE,
        body,
        async (request) =>
          (await media.audio.generate(
            principal,
            { model: body.model, text: body.input, voice: body.voice, speed: body.speed ?? undefined },
            { timing: options.timing, request },
          )) as unknown as Record<string, unknown>,
      );
      const audio = answer as unknown as AudioAnswer;
      return {
        bytes: await bytesOf(audio.audio.url),
        contentType: audio.audio.mimeType,
        requestId: audio.requestId,
        tokensCharged: audio.usage.creditsConsumed,
        replayed,
      };
    },
  };
}
