import { UpstreamError, type UpstreamCredential } from '../types.js';
import { callUpstream, httpError, jsonOf, multipartForm, type UpstreamResponse } from '../media/http.js';
import { directUpstreamHttp, type UpstreamHttp } from '../upstream-http.js';
import type { MediaAdapter, MediaOutput } from '../media/media-types.js';
import { imageSizeRule, snapImageSize } from '../media/sizes.js';

/**
 * Ideogram 3.0 (https://developer.ideogram.ai/api-reference; built from Ideogram's OpenAPI document
 * https://api.ideogram.ai/openapi.json, version of 2026-06): `POST /v1/ideogram-v3/generate`, or from a source image
 * `POST /v1/ideogram-v3/remix` (`image`, `image_weight` 1-100), multipart/form-data with the `Api-Key` header.
 * Fields: prompt, negative_prompt, seed (0-2147483647), rendering_speed (the catalog's upstream name: V_3_TURBO is
 * TURBO, V_3 DEFAULT, V_3_QUALITY QUALITY), num_images (1-8) and aspect_ratio (written `16x9`). The answer is
 * `{ created, data: [{ url, resolution, is_image_safe, seed, ... }] }`; the URLs expire, so they go back as URL outputs
 * the gateway downloads at once. An image with `is_image_safe: false` has no URL and is not delivered. A prompt or
 * source image that fails the safety check is a 422 `{ error }`. Ideogram's edit endpoint needs a mask, so a source
 * image without one is remixed.
 * Billing: per image, priced by rendering speed (Turbo, Default, Quality).
 */
export const IDEOGRAM_DEFAULT_BASE_URL = 'https://api.ideogram.ai';
export const IDEOGRAM_MAX_IMAGES = 8;
/** Seeds run from 0 to 2147483647. */
const SEED_RANGE = 2_147_483_648;

const RENDERING_SPEEDS: Record<string, string> = {
  V_3_FLASH: 'FLASH',
  V_3_TURBO: 'TURBO',
  V_3_BALANCED: 'BALANCED',
  V_3: 'DEFAULT',
  V_3_DEFAULT: 'DEFAULT',
  V_3_QUALITY: 'QUALITY',
};

/** The `rendering_speed` an upstream model name stands for. */
export function ideogramRenderingSpeed(model: string): string {
  const speed = RENDERING_SPEEDS[model.toUpperCase()];
  if (!speed) throw new UpstreamError('model_not_found', `Ideogram 3.0 has no model "${model}"; use V_3_TURBO, V_3 or V_3_QUALITY.`, null, 'unknown_model');
  return speed;
}

/** Strength 0 keeps the source, 1 ignores it; Ideogram's `image_weight` runs the other way, from 1 to 100. */
export const imageWeightOf = (strength: number) => Math.min(100, Math.max(1, Math.round((1 - strength) * 100)));

/**
 * Ideogram documents the body only for the safety refusal (`{ error }`); its other errors come from its OpenAPI server
 * as problem details (`{ detail, title }`), or plain text.
 */
function errorOf(response: UpstreamResponse): { code: string | null; message: string | null } {
  const body = jsonOf(response) as { error?: unknown; detail?: unknown; message?: unknown; messages?: unknown; title?: unknown } | null;
  const first = [body?.error, body?.detail, body?.message, Array.isArray(body?.messages) ? body.messages.join('; ') : null, body?.title].find(
    (value): value is string => typeof value === 'string' && value.length > 0,
  );
  const text = !body && response.body.length > 0 && response.body.length < 500 ? response.body.toString('utf8') : null;
  return { code: response.status === 422 ? 'safety_check_failed' : null, message: first ?? text };
}

export function createIdeogramAdapter(options: { defaultBaseUrl?: string; http?: UpstreamHttp } = {}): MediaAdapter {
  const defaultBaseUrl = options.defaultBaseUrl ?? IDEOGRAM_DEFAULT_BASE_URL;
  const http = options.http ?? directUpstreamHttp;
  const urlOf = (credential: UpstreamCredential, path: string) => `${(credential.baseUrl ?? defaultBaseUrl).replace(/\/+$/, '')}${path}`;
  const headers = (credential: UpstreamCredential) => ({ 'api-key': credential.apiKey ?? '', accept: 'application/json' });

  return {
    kind: 'ideogram',
    needsCredential: true,

    async generateImage(credential, request) {
      const renderingSpeed = ideogramRenderingSpeed(request.model);
      const size = snapImageSize(imageSizeRule('ideogram', request.model), request.width, request.height);
      const source = request.initImage;
      const form = multipartForm({
        prompt: request.prompt,
        negative_prompt: request.negativePrompt,
        seed: request.seed === null ? null : Math.abs(Math.trunc(request.seed)) % SEED_RANGE,
        rendering_speed: renderingSpeed,
        num_images: Math.min(Math.max(1, request.count), IDEOGRAM_MAX_IMAGES),
        aspect_ratio: size.aspectRatio.replace(':', 'x'),
        image: source,
        image_weight: source && request.strength !== null ? imageWeightOf(request.strength) : null,
      });
      const path = source ? '/v1/ideogram-v3/remix' : '/v1/ideogram-v3/generate';
      const response = await callUpstream(http, urlOf(credential, path), {
        method: 'POST',
        headers: headers(credential),
        form,
        timeoutMs: credential.timeoutMs,
        signal: request.signal,
      });
      if (response.status < 200 || response.status >= 300) throw httpError(response, errorOf(response), request.model);

      const items = (jsonOf(response) as { data?: unknown } | null)?.data;
      const made = Array.isArray(items) ? (items as Array<{ url?: unknown; is_image_safe?: unknown }>) : [];
      const images: MediaOutput[] = made
        .filter((item) => item.is_image_safe !== false && typeof item.url === 'string' && item.url.length > 0)
        .map((item) => ({ kind: 'url', url: item.url as string, mimeType: null }));
      if (images.length === 0 && made.length > 0) {
        throw new UpstreamError(
          'bad_request',
          "Ideogram's safety check withheld every image it made (is_image_safe: false); change the prompt or the source image.",
          response.status,
          'image_unsafe',
        );
      }
      if (images.length === 0) throw new UpstreamError('server', 'The provider returned no images.', response.status, 'empty_response');
      return { images, count: images.length, maxPerCall: IDEOGRAM_MAX_IMAGES, width: size.width, height: size.height };
    },

    // Ideogram has no key or balance endpoint for API keys; listing the account's custom models is a documented,
    // authenticated read that generates nothing and is not billed.
    async checkCredential(credential) {
      const response = await callUpstream(http, urlOf(credential, '/models'), { method: 'GET', headers: headers(credential), timeoutMs: credential.timeoutMs });
      if (response.status < 200 || response.status >= 300) throw httpError(response, errorOf(response), '');
    },
  };
}
