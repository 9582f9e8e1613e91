import { UpstreamError, type UpstreamCredential } from '../types.js';
import { wavDurationSeconds } from '../media/audio.js';
import { mediaTypeOf } from '../media/download.js';
import { callUpstream, httpError, jsonOf, mergeExtra, multipartForm, type FormValue, type UpstreamResponse } from '../media/http.js';
import { directUpstreamHttp, type UpstreamHttp } from '../upstream-http.js';
import type { ExtraKeys, MediaAdapter } from '../media/media-types.js';
import { imageSizeRule, snapImageSize } from '../media/sizes.js';

/**
 * Stability AI's REST API, v2beta (https://platform.stability.ai/docs/api-reference; read from the TypeScript types
 * generated from that OpenAPI document, snapshot of 2025-06-24, and the Stable Audio 2.5 text-to-audio reference).
 * - Images: `POST /v2beta/stable-image/generate/{ultra|core|sd3}`, one image per call; `sd3` takes `model`
 *   (sd3.5-large, sd3.5-large-turbo, sd3.5-medium...) and `mode=image-to-image` with `image` and `strength`; ultra
 *   takes `image` and `strength` too; core is text only. `aspect_ratio` is one of nine named ratios (text-to-image only).
 * - Music: `POST /v2beta/audio/stable-audio-2/text-to-audio` (`prompt`, `model`, `duration` 1-190 s, `seed`, `output_format`).
 * Every call is multipart/form-data with `authorization: Bearer <key>`. We ask for the bytes (`accept: image/*` or
 * `audio/*`: `finish-reason` and `seed` come as headers); a JSON answer (`{ image|audio: base64, finish_reason, seed }`)
 * is read too. Errors are `{ id, name, errors: [...] }`; a 403 named `content_moderation` refuses the prompt or image,
 * and `finish_reason: CONTENT_FILTERED` means the output was blurred: both are the caller's request, not the key.
 * `GET /v1/user/account` proves a key.
 * Billing: credits per successful image (1 credit = US$0.01: ultra 8, core 3, SD 3.5 Large 6.5, Large Turbo 4,
 * Medium 3.5) and a flat rate per Stable Audio track whatever its length; refused and failed calls are not charged.
 */
export const STABILITY_DEFAULT_BASE_URL = 'https://api.stability.ai';
/** Seeds run from 0 to 4294967294 (0 asks for a random one). */
const SEED_RANGE = 4_294_967_295;
/** `strength` is required with a source image; the catalog's default for edit models. */
const DEFAULT_STRENGTH = 0.6;

interface StabilityImageService {
  path: string;
  /** The `model` field of the sd3 endpoint; null for ultra and core. */
  sd3Model: string | null;
  imageToImage: boolean;
  negativePrompt: boolean;
}

/** Where an image model is served and what it takes. */
export function stabilityImageService(model: string): StabilityImageService {
  if (model === 'ultra') return { path: '/v2beta/stable-image/generate/ultra', sd3Model: null, imageToImage: true, negativePrompt: true };
  if (model === 'core') return { path: '/v2beta/stable-image/generate/core', sd3Model: null, imageToImage: false, negativePrompt: true };
  // The turbo models do not take a negative prompt.
  if (/^sd3(\.5)?-/.test(model))
    return { path: '/v2beta/stable-image/generate/sd3', sd3Model: model, imageToImage: true, negativePrompt: !model.includes('turbo') };
  throw new UpstreamError(
    'model_not_found',
    `Stability AI has no image model "${model}"; use ultra, core or an SD 3.5 model (sd3.5-large, sd3.5-large-turbo, sd3.5-medium).`,
    null,
    'unknown_model',
  );
}

function errorOf(response: UpstreamResponse): { code: string | null; message: string | null } {
  const body = jsonOf(response) as { name?: unknown; errors?: unknown; message?: unknown } | null;
  const errors = Array.isArray(body?.errors) ? body.errors.filter((e): e is string => typeof e === 'string' && e.length > 0) : [];
  const text = response.body.length > 0 && response.body.length < 500 && !body ? response.body.toString('utf8') : null;
  return {
    code: typeof body?.name === 'string' ? body.name : null,
    message: errors.length > 0 ? errors.join('; ') : typeof body?.message === 'string' ? body.message : text,
  };
}

/** A failed answer; moderation is the request's fault, so it must not fail the account over (403 would read as the key). */
function stabilityError(response: UpstreamResponse, model: string): UpstreamError {
  const found = errorOf(response);
  if (found.code === 'content_moderation') {
    return new UpstreamError(
      'bad_request',
      found.message ?? "Stability AI's content moderation refused the request; change the prompt or the source image.",
      response.status,
      'content_moderation',
    );
  }
  return httpError(response, found, model);
}

/** The media of a successful answer: the bytes themselves, or the base64 field of a JSON answer. */
function mediaOf(response: UpstreamResponse, field: 'image' | 'audio'): { bytes: Buffer; declared: string | null } {
  const type = response.headers.get('content-type') ?? '';
  let bytes = response.body;
  let finishReason = response.headers.get('finish-reason');
  let declared: string | null = type || null;
  if (type.startsWith('application/json')) {
    const body = jsonOf(response) as Record<string, unknown> | null;
    const data = body?.[field];
    bytes = typeof data === 'string' ? Buffer.from(data, 'base64') : Buffer.alloc(0);
    finishReason = typeof body?.finish_reason === 'string' ? body.finish_reason : null;
    // `application/json; type=image/png` names the encoded format.
    declared = /type=([\w.+-]+\/[\w.+-]+)/.exec(type)?.[1] ?? null;
  }
  if (finishReason === 'CONTENT_FILTERED') {
    throw new UpstreamError(
      'bad_request',
      `Stability AI's content moderation filtered the ${field === 'image' ? 'image' : 'audio'} it made (finish_reason CONTENT_FILTERED); change the prompt.`,
      response.status,
      'content_filtered',
    );
  }
  if (bytes.length === 0)
    throw new UpstreamError('server', `The provider answered without ${field === 'image' ? 'an image' : 'audio'}.`, response.status, 'empty_response');
  return { bytes, declared };
}

/** The `extra` keys of Stable Audio (a flat price per generation); `duration` is not taken: the model decides the length. */
export const STABLE_AUDIO_EXTRA: ExtraKeys = {
  output_format: { type: 'enum', values: ['mp3', 'wav'] },
  steps: { type: 'integer', min: 4, max: 8 },
  cfg_scale: { type: 'number', min: 1, max: 25 },
};

/** `extra` values as form fields: numbers and strings as they are, anything else as JSON. */
function formFields(values: Record<string, unknown>): Record<string, FormValue> {
  const fields: Record<string, FormValue> = {};
  for (const [key, value] of Object.entries(values)) {
    fields[key] = value === null || value === undefined || typeof value !== 'object' ? (value as FormValue) : JSON.stringify(value);
  }
  return fields;
}

const seedOf = (seed: number | null | undefined) => (seed === null || seed === undefined ? null : Math.abs(Math.trunc(seed)) % SEED_RANGE);

export function createStabilityAdapter(options: { defaultBaseUrl?: string; http?: UpstreamHttp } = {}): MediaAdapter {
  const defaultBaseUrl = options.defaultBaseUrl ?? STABILITY_DEFAULT_BASE_URL;
  const http = options.http ?? directUpstreamHttp;
  const urlOf = (credential: UpstreamCredential, path: string) => `${(credential.baseUrl ?? defaultBaseUrl).replace(/\/+$/, '')}${path}`;
  const headers = (credential: UpstreamCredential, accept: string) => ({ authorization: `Bearer ${credential.apiKey ?? ''}`, accept });

  return {
    kind: 'stability',
    needsCredential: true,
    extraKeys: { music: STABLE_AUDIO_EXTRA },

    async generateImage(credential, request) {
      const service = stabilityImageService(request.model);
      const size = snapImageSize(imageSizeRule('stability', request.model), request.width, request.height);
      const source = request.initImage;
      if (source && !service.imageToImage) {
        throw new UpstreamError(
          'bad_request',
          `Stable Image ${request.model} makes images from text only; leave initImageUrl out, or use ultra or an SD 3.5 model to start from an image.`,
          400,
          'image_to_image_not_supported',
        );
      }
      const form = multipartForm({
        prompt: request.prompt,
        negative_prompt: service.negativePrompt ? request.negativePrompt : null,
        model: service.sd3Model,
        mode: service.sd3Model ? (source ? 'image-to-image' : 'text-to-image') : null,
        // The output of image-to-image follows the source image's proportions.
        aspect_ratio: source ? null : size.aspectRatio,
        image: source,
        strength: source ? (request.strength ?? DEFAULT_STRENGTH) : null,
        seed: seedOf(request.seed),
        output_format: 'png',
      });
      const response = await callUpstream(http, urlOf(credential, service.path), {
        method: 'POST',
        headers: headers(credential, 'image/*'),
        form,
        timeoutMs: credential.timeoutMs,
        signal: request.signal,
      });
      if (response.status < 200 || response.status >= 300) throw stabilityError(response, request.model);
      const { bytes, declared } = mediaOf(response, 'image');
      return {
        images: [{ kind: 'bytes', bytes, mimeType: mediaTypeOf(bytes, declared, 'image/png') }],
        count: 1,
        maxPerCall: 1,
        width: size.width,
        height: size.height,
      };
    },

    async generateMusic(credential, request) {
      const format = request.extra?.output_format === 'wav' ? 'wav' : 'mp3';
      const fields = mergeExtra(request.extra, {
        prompt: request.description,
        model: request.model,
        seed: seedOf(request.seed) ?? undefined,
        output_format: format,
      });
      const response = await callUpstream(http, urlOf(credential, '/v2beta/audio/stable-audio-2/text-to-audio'), {
        method: 'POST',
        headers: headers(credential, 'audio/*'),
        form: multipartForm(formFields(fields)),
        timeoutMs: credential.timeoutMs,
        signal: request.signal,
      });
      if (response.status < 200 || response.status >= 300) throw stabilityError(response, request.model);
      const { bytes, declared } = mediaOf(response, 'audio');
      const mimeType = mediaTypeOf(bytes, declared, format === 'wav' ? 'audio/wav' : 'audio/mpeg');
      return { bytes, mimeType, durationSeconds: mimeType === 'audio/wav' ? wavDurationSeconds(bytes) : null };
    },

    async checkCredential(credential) {
      const response = await callUpstream(http, urlOf(credential, '/v1/user/account'), {
        method: 'GET',
        headers: headers(credential, 'application/json'),
        timeoutMs: credential.timeoutMs,
      });
      if (response.status < 200 || response.status >= 300) throw stabilityError(response, '');
    },
  };
}
