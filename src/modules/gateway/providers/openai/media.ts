import type OpenAI from 'openai';
import { loadOpenAiSdk, mapOpenAiError, openAiClients } from '../openai-compatible/adapter.js';
import type { UpstreamHttp } from '../upstream-http.js';
import { UpstreamError, type UpstreamCredential } from '../types.js';
import { wavDurationSeconds } from '../media/audio.js';
import { mediaTypeOf } from '../media/download.js';
import type { ImageRequest, ImageTokenUsage, MediaAdapter, MediaOutput } from '../media/media-types.js';
import { imageSizeRule, snapImageSize } from '../media/sizes.js';

/**
 * OpenAI Images (`POST /v1/images/generations`, `POST /v1/images/edits` for a source image) and text to speech
 * (`POST /v1/audio/speech` with `response_format: wav`) through the official SDK, at a configurable base URL (OpenAI
 * itself or a compatible server). Sizes are snapped to the model's menu; GPT Image models always answer `b64_json`,
 * DALL·E is asked for `b64_json` too, and a server that answers with `url` anyway is handled (the gateway downloads it).
 * The request's `quality` is sent as it is (the gateway checked it against the model's controls). GPT Image answers
 * with the quality and size it used and the tokens it billed (`usage`), which are read back for the charge.
 * OpenAI has no negative prompt, seed or strength: those are ignored.
 */
export interface OpenAiMediaOptions {
  /** Used when an account has no base URL of its own. */
  defaultBaseUrl: string;
  /** The gateway's outbound client (default: every address trusted). */
  http?: UpstreamHttp;
}

/** Images one call may return: DALL·E 3 makes one; the API caps `n` at 10. */
export function openAiMaxPerCall(model: string): number {
  return model.toLowerCase() === 'dall-e-3' ? 1 : 10;
}

const OUTPUT_FORMAT_TYPE: Record<string, string> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' };
const isDallE = (model: string) => model.toLowerCase().startsWith('dall-e');
const SOURCE_EXTENSION: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp', 'image/gif': 'gif' };
const count = (value: unknown): number | null => (typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : null);

/** The answer's `usage` (GPT Image only), or null when it is missing or does not add up. */
export function imageUsageOf(usage: OpenAI.ImagesResponse['usage'] | undefined): ImageTokenUsage | null {
  const input = count(usage?.input_tokens);
  const output = count(usage?.output_tokens);
  if (input === null || output === null) return null;
  const images = count(usage?.input_tokens_details?.image_tokens) ?? 0;
  const text = count(usage?.input_tokens_details?.text_tokens) ?? input - images;
  if (images + text !== input) return null;
  return { inputTokens: input, textInputTokens: text, imageInputTokens: images, outputTokens: output };
}

/** `1536x1024` -> its pixels; anything else (`auto`, absent) -> null. */
const sizeOf = (size: string | null | undefined) => {
  const match = size ? /^(\d{1,5})x(\d{1,5})$/.exec(size) : null;
  return match ? { width: Number(match[1]), height: Number(match[2]) } : null;
};

export function createOpenAiMediaAdapter(options: OpenAiMediaOptions): MediaAdapter {
  const clientFor = openAiClients(options.defaultBaseUrl, options.http);

  async function images(credential: UpstreamCredential, request: ImageRequest, width: number, height: number): Promise<OpenAI.ImagesResponse> {
    const client = await clientFor(credential);
    const n = Math.min(request.count, openAiMaxPerCall(request.model));
    const size = `${width}x${height}`;
    // GPT Image models always return base64 and refuse `response_format`; DALL·E defaults to expiring URLs.
    const format = isDallE(request.model) ? { response_format: 'b64_json' as const } : {};
    // The SDK's types list each endpoint's values; the gateway already checked this one against the model's controls.
    const quality = request.quality ? { quality: request.quality as OpenAI.ImageGenerateParams['quality'] & OpenAI.ImageEditParams['quality'] } : {};
    if (request.initImage) {
      if (request.model.toLowerCase() === 'dall-e-3') {
        throw new UpstreamError('bad_request', 'DALL·E 3 cannot edit images; use a model that takes a source image.', 400, 'edit_not_supported');
      }
      const { toFile } = await loadOpenAiSdk();
      const image = await toFile(request.initImage.bytes, `source.${SOURCE_EXTENSION[request.initImage.mimeType] ?? 'png'}`, {
        type: request.initImage.mimeType,
      });
      return client.images.edit({ model: request.model, prompt: request.prompt, image, n, size, ...quality, ...format }, { signal: request.signal });
    }
    return client.images.generate({ model: request.model, prompt: request.prompt, n, size, ...quality, ...format }, { signal: request.signal });
  }

  return {
    kind: 'openai',
    needsCredential: true,

    async generateImage(credential, request) {
      const { width, height } = snapImageSize(imageSizeRule('openai', request.model), request.width, request.height);
      let response: OpenAI.ImagesResponse;
      try {
        response = await images(credential, request, width, height);
      } catch (err) {
        throw mapOpenAiError(err, request.model);
      }
      const declared = response.output_format ? (OUTPUT_FORMAT_TYPE[response.output_format] ?? null) : null;
      const outputs: MediaOutput[] = [];
      for (const item of response.data ?? []) {
        if (item.b64_json) {
          const bytes = Buffer.from(item.b64_json, 'base64');
          outputs.push({ kind: 'bytes', bytes, mimeType: mediaTypeOf(bytes, declared, 'image/png') });
        } else if (item.url) {
          outputs.push({ kind: 'url', url: item.url, mimeType: declared });
        }
      }
      if (outputs.length === 0) throw new UpstreamError('server', 'The provider returned no images.', null, 'empty_response');
      const made = sizeOf(response.size) ?? { width, height };
      return {
        images: outputs,
        count: outputs.length,
        maxPerCall: openAiMaxPerCall(request.model),
        ...made,
        quality: response.quality ?? null,
        usage: imageUsageOf(response.usage),
      };
    },

    async generateSpeech(credential, request) {
      let bytes: Buffer;
      try {
        const response = await (
          await clientFor(credential)
        ).audio.speech.create(
          {
            model: request.model,
            input: request.text,
            voice: request.voice ?? 'alloy',
            response_format: 'wav',
            ...(request.speed === undefined || request.speed === null ? {} : { speed: request.speed }),
          },
          { signal: request.signal },
        );
        bytes = Buffer.from(await response.arrayBuffer());
      } catch (err) {
        throw mapOpenAiError(err, request.model);
      }
      const durationSeconds = wavDurationSeconds(bytes);
      if (durationSeconds === null) throw new UpstreamError('server', 'The provider did not return WAV audio.', null, 'unexpected_format');
      return { bytes, mimeType: 'audio/wav', durationSeconds };
    },

    async checkCredential(credential) {
      try {
        await (await clientFor(credential)).models.list();
      } catch (err) {
        throw mapOpenAiError(err, '');
      }
    },
  };
}
