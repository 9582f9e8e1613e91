import { UpstreamError, type UpstreamCredential } from '../types.js';
import { mediaTypeOf } from '../media/download.js';
import { callUpstream, httpError, jsonOf, multipartForm, type UpstreamResponse } from '../media/http.js';
import { directUpstreamHttp, type UpstreamHttp } from '../upstream-http.js';
import type { MediaAdapter, MediaOutput } from '../media/media-types.js';
import { imageSizeRule, snapImageSize } from '../media/sizes.js';

/**
 * Recraft (https://www.recraft.ai/docs/api-reference/endpoints; built from Recraft's OpenAPI document
 * https://external.api.recraft.ai/doc/spec/internal/externalapi/api.yaml as of 2026-08, and its Errors and Appendix
 * pages): `POST /v1/images/generations`, JSON and OpenAI-like (prompt, n 1-6, size from the model's menu, model,
 * style, negative_prompt, random_seed, response_format), and from a source image `POST /v1/images/imageToImage`,
 * multipart (image, strength, and the same fields but size). `authorization: Bearer <token>`.
 * V3 draws raster images in a raster style (`realistic_image`, its default) and SVG files in `vector_illustration`:
 * the catalog's `recraftv3-vector` is `recraftv3` with that style, and its images come back as `image/svg+xml`.
 * Recraft's own vector model names (`recraftv3_vector`...) are sent as they are. The answer is
 * `{ created, credits, data: [{ image_id, url | b64_json }] }`; URLs are kept about 24 hours, and the gateway copies
 * them at once. A 401 is `text/plain` "request unauthorized"; other error bodies are JSON or text. `GET /v1/users/me`
 * proves a token.
 * Billing: per image, a vector image twice a raster one (V3: US$0.04 raster, 0.08 vector).
 */
export const RECRAFT_DEFAULT_BASE_URL = 'https://external.api.recraft.ai';
export const RECRAFT_MAX_IMAGES = 6;
export const SVG_MIME_TYPE = 'image/svg+xml';
const SEED_RANGE = 4_294_967_296;
/** Image-to-image requires a strength; the middle of 0-1 when the caller gave none. */
const DEFAULT_STRENGTH = 0.5;
/** The models that take `style` and `negative_prompt`. */
const STYLED_MODELS = ['recraftv3', 'recraftv2'];

export interface RecraftModel {
  /** Recraft's `model`. */
  model: string;
  style: string | null;
  vector: boolean;
  negativePrompt: boolean;
}

export function recraftModel(name: string): RecraftModel {
  const lower = name.toLowerCase();
  if (lower.endsWith('-vector')) {
    const model = lower.slice(0, -'-vector'.length);
    return { model, style: 'vector_illustration', vector: true, negativePrompt: STYLED_MODELS.includes(model) };
  }
  const styled = STYLED_MODELS.includes(lower);
  return { model: lower, style: styled ? 'realistic_image' : null, vector: lower.endsWith('_vector'), negativePrompt: styled };
}

function errorOf(response: UpstreamResponse): { code: string | null; message: string | null } {
  const body = jsonOf(response) as { code?: unknown; message?: unknown; error?: unknown; detail?: unknown } | null;
  if (!body) return { code: null, message: response.body.length > 0 && response.body.length < 500 ? response.body.toString('utf8').trim() : null };
  const nested = body.error && typeof body.error === 'object' ? (body.error as { message?: unknown; code?: unknown }) : null;
  const message =
    [body.message, nested?.message, body.error, body.detail].find((value): value is string => typeof value === 'string' && value.length > 0) ?? null;
  const code = [body.code, nested?.code].find((value): value is string => typeof value === 'string' && value.length > 0) ?? null;
  return { code, message };
}

export function createRecraftAdapter(options: { defaultBaseUrl?: string; http?: UpstreamHttp } = {}): MediaAdapter {
  const defaultBaseUrl = options.defaultBaseUrl ?? RECRAFT_DEFAULT_BASE_URL;
  const http = options.http ?? directUpstreamHttp;
  const urlOf = (credential: UpstreamCredential, path: string) => `${(credential.baseUrl ?? defaultBaseUrl).replace(/\/+$/, '')}${path}`;
  const headers = (credential: UpstreamCredential) => ({ authorization: `Bearer ${credential.apiKey ?? ''}`, accept: 'application/json' });

  return {
    kind: 'recraft',
    needsCredential: true,

    async generateImage(credential, request) {
      const spec = recraftModel(request.model);
      const size = snapImageSize(imageSizeRule('recraft', request.model), request.width, request.height);
      const fields = {
        prompt: request.prompt,
        model: spec.model,
        style: spec.style ?? undefined,
        negative_prompt: spec.negativePrompt ? (request.negativePrompt ?? undefined) : undefined,
        n: Math.min(Math.max(1, request.count), RECRAFT_MAX_IMAGES),
        random_seed: request.seed === null ? undefined : Math.abs(Math.trunc(request.seed)) % SEED_RANGE,
        response_format: 'url',
      };
      const source = request.initImage;
      const response = source
        ? await callUpstream(http, urlOf(credential, '/v1/images/imageToImage'), {
            method: 'POST',
            headers: headers(credential),
            form: multipartForm({ ...fields, image: source, strength: request.strength ?? DEFAULT_STRENGTH }),
            timeoutMs: credential.timeoutMs,
            signal: request.signal,
          })
        : await callUpstream(http, urlOf(credential, '/v1/images/generations'), {
            method: 'POST',
            headers: headers(credential),
            body: { ...fields, size: `${size.width}x${size.height}` },
            timeoutMs: credential.timeoutMs,
            signal: request.signal,
          });
      if (response.status < 200 || response.status >= 300) throw httpError(response, errorOf(response), request.model);

      const data = (jsonOf(response) as { data?: unknown } | null)?.data;
      const images: MediaOutput[] = [];
      for (const item of Array.isArray(data) ? (data as Array<{ url?: unknown; b64_json?: unknown }>) : []) {
        if (typeof item.b64_json === 'string' && item.b64_json) {
          const bytes = Buffer.from(item.b64_json, 'base64');
          images.push({ kind: 'bytes', bytes, mimeType: spec.vector ? SVG_MIME_TYPE : mediaTypeOf(bytes, null, 'image/webp') });
        } else if (typeof item.url === 'string' && item.url) {
          images.push({ kind: 'url', url: item.url, mimeType: spec.vector ? SVG_MIME_TYPE : null });
        }
      }
      if (images.length === 0) throw new UpstreamError('server', 'The provider returned no images.', response.status, 'empty_response');
      return { images, count: images.length, maxPerCall: RECRAFT_MAX_IMAGES, width: size.width, height: size.height };
    },

    async checkCredential(credential) {
      const response = await callUpstream(http, urlOf(credential, '/v1/users/me'), {
        method: 'GET',
        headers: headers(credential),
        timeoutMs: credential.timeoutMs,
      });
      if (response.status < 200 || response.status >= 300) throw httpError(response, errorOf(response), '');
    },
  };
}
