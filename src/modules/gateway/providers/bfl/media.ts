import { setTimeout as sleep } from 'node:timers/promises';
import { UpstreamError, type UpstreamCredential } from '../types.js';
import { callUpstream, httpError, jsonOf, type UpstreamResponse } from '../media/http.js';
import { directUpstreamHttp, type UpstreamHttp } from '../upstream-http.js';
import type { ImageRequest, MediaAdapter } from '../media/media-types.js';
import { imageSizeRule, snapImageSize, type SizeRule } from '../media/sizes.js';

/**
 * Black Forest Labs' FLUX API, built from https://docs.bfl.ai (API reference, "Integration guidelines", "Errors") and
 * its OpenAPI document https://api.bfl.ai/openapi.json ("BFL API" 0.0.1, as published in May 2026):
 * - `POST /v1/{model}` with the key in `x-key` answers `{ id, polling_url }`; the task is then read with
 *   `GET polling_url` until `status` is `Ready` (`result.sample`: a signed delivery URL valid for 10 minutes) or a
 *   final failure: `Request Moderated` (the input), `Content Moderated` (the output), `Error`, `Task not found`.
 * - FLUX1.1 [pro] and FLUX.1 [dev] take `width`/`height` (multiples of 32, 256-1440); FLUX1.1 [pro] Ultra and
 *   FLUX.1 Kontext take `aspect_ratio` (21:9 to 9:21). Kontext edits take `input_image`, the others an `image_prompt`
 *   (Redux). Every model takes `seed`, `safety_tolerance` (0-6, default 2) and `output_format`; none a negative prompt.
 * - Errors: 402 out of credits, 403 invalid key (`Not authenticated - Invalid Authentication`), 422 validation
 *   (`detail: [{ loc, msg }]`), 429 too many active tasks. `GET /v1/credits` proves a key.
 * One task makes one image. The gateway waits for it: the call submits, then polls within the account's time limit.
 */
export const BFL_DEFAULT_BASE_URL = 'https://api.bfl.ai';
/** The docs' polling examples wait half a second between reads. */
export const BFL_DEFAULT_POLL_INTERVAL_MS = 500;

export interface BflOptions {
  defaultBaseUrl?: string;
  /** The gateway's outbound client (default: every address trusted). */
  http?: UpstreamHttp;
  /** Wait between two reads of a pending task (0 in tests). */
  pollIntervalMs?: number;
  /** BFL's moderation tolerance, 0 (strict) to 6; BFL's default is 2. */
  safetyTolerance?: number;
}

/** FLUX.1 Kontext renders about one megapixel at the ratio it is given. */
const KONTEXT_RATIOS: SizeRule = {
  kind: 'ratios',
  ratios: [
    { ratio: '1:1', width: 1024, height: 1024 },
    { ratio: '16:9', width: 1360, height: 768 },
    { ratio: '9:16', width: 768, height: 1360 },
    { ratio: '4:3', width: 1184, height: 880 },
    { ratio: '3:4', width: 880, height: 1184 },
    { ratio: '3:2', width: 1248, height: 832 },
    { ratio: '2:3', width: 832, height: 1248 },
    { ratio: '21:9', width: 1568, height: 672 },
    { ratio: '9:21', width: 672, height: 1568 },
  ],
};

type Family = 'sized' | 'ultra' | 'kontext';
const familyOf = (model: string): Family => (model.includes('kontext') ? 'kontext' : model.includes('ultra') ? 'ultra' : 'sized');

/** The task's body and the size it asks for. */
export function bflTask(request: ImageRequest, safetyTolerance: number): { body: Record<string, unknown>; width: number; height: number } {
  const family = familyOf(request.model);
  const body: Record<string, unknown> = { prompt: request.prompt, safety_tolerance: safetyTolerance, output_format: 'png' };
  if (request.seed !== null) body.seed = request.seed;
  const size = snapImageSize(family === 'kontext' ? KONTEXT_RATIOS : imageSizeRule('bfl', request.model), request.width, request.height);
  if (family === 'sized') Object.assign(body, { width: size.width, height: size.height });
  else body.aspect_ratio = size.aspectRatio;
  if (request.initImage) {
    const base64 = request.initImage.bytes.toString('base64');
    if (family === 'kontext') body.input_image = base64;
    else body.image_prompt = base64;
    // Ultra blends the image prompt by `image_prompt_strength` (1: the image); our strength counts the other way.
    if (family === 'ultra' && request.strength !== null) body.image_prompt_strength = Math.round((1 - request.strength) * 100) / 100;
  }
  return { body, width: size.width, height: size.height };
}

/** BFL errors are FastAPI's: `{ detail: "reason" }` or `{ detail: [{ loc, msg }] }`. */
function errorOf(response: UpstreamResponse): { code: string | null; message: string | null } {
  const body = jsonOf(response) as { detail?: unknown } | null;
  if (typeof body?.detail === 'string') return { code: null, message: body.detail };
  if (Array.isArray(body?.detail)) {
    const issues = (body.detail as { loc?: unknown; msg?: unknown }[]).map((issue) => {
      const field = Array.isArray(issue.loc) ? issue.loc.filter((part) => part !== 'body').join('.') : '';
      return [field, typeof issue.msg === 'string' ? issue.msg : ''].filter(Boolean).join(': ');
    });
    return { code: 'validation_error', message: issues.filter(Boolean).join('; ') || null };
  }
  return { code: null, message: response.body.length > 0 && response.body.length < 500 ? response.body.toString('utf8') : null };
}

/**
 * The polling URL BFL handed back, when it may carry our key: https on bfl.ai (its regional API hosts), or the
 * configured base URL's own origin (a proxy or a test double). Anything else is refused without calling it.
 */
export function trustedPollingUrl(raw: unknown, baseUrl: string): string {
  const url = typeof raw === 'string' && URL.canParse(raw) ? new URL(raw) : null;
  if (!url) throw new UpstreamError('server', 'BFL accepted the image task but sent no usable polling URL.', null, 'malformed_response');
  const onBfl = url.protocol === 'https:' && (url.hostname === 'bfl.ai' || url.hostname.endsWith('.bfl.ai'));
  if ((onBfl || url.origin === new URL(baseUrl).origin) && !url.username && !url.password) return url.href;
  throw new UpstreamError(
    'server',
    `BFL answered with a polling URL outside bfl.ai (${url.protocol}//${url.host}); it was not called, so the API key did not leave. Check the account's base URL.`,
    null,
    'untrusted_polling_url',
  );
}

const MODERATED: Record<string, string> = {
  'Request Moderated':
    "BFL's moderation refused the prompt or the source image before generating (Request Moderated). Change the prompt or the image and try again.",
  'Content Moderated': "BFL's moderation withheld the generated image (Content Moderated). Change the prompt and try again.",
};

export function createBflAdapter(options: BflOptions = {}): MediaAdapter {
  const defaultBaseUrl = options.defaultBaseUrl ?? BFL_DEFAULT_BASE_URL;
  const http = options.http ?? directUpstreamHttp;
  const pollIntervalMs = options.pollIntervalMs ?? BFL_DEFAULT_POLL_INTERVAL_MS;
  const safetyTolerance = options.safetyTolerance ?? 2;
  const baseOf = (credential: UpstreamCredential) => (credential.baseUrl ?? defaultBaseUrl).replace(/\/+$/, '');
  const headers = (credential: UpstreamCredential) => ({ 'x-key': credential.apiKey ?? '', accept: 'application/json' });

  return {
    kind: 'bfl',
    needsCredential: true,

    async generateImage(credential, request) {
      const deadline = Date.now() + credential.timeoutMs;
      const timedOut = () =>
        new UpstreamError('timeout', `BFL did not finish the image within ${Math.round(credential.timeoutMs / 100) / 10} s.`, null, 'timeout');
      const base = baseOf(credential);
      const { body, width, height } = bflTask(request, safetyTolerance);
      const submitted = await callUpstream(http, `${base}/v1/${encodeURIComponent(request.model)}`, {
        method: 'POST',
        headers: headers(credential),
        body,
        timeoutMs: credential.timeoutMs,
        signal: request.signal,
      });
      if (submitted.status < 200 || submitted.status >= 300) throw httpError(submitted, errorOf(submitted), request.model);
      const task = jsonOf(submitted) as { id?: unknown; polling_url?: unknown } | null;
      if (typeof task?.id !== 'string' || !task.id)
        throw new UpstreamError('server', 'BFL accepted the image task but sent no task id.', submitted.status, 'malformed_response');
      const pollingUrl = task.polling_url === undefined ? `${base}/v1/get_result?id=${encodeURIComponent(task.id)}` : trustedPollingUrl(task.polling_url, base);

      for (;;) {
        const left = deadline - Date.now();
        if (left <= 0) throw timedOut();
        const response = await callUpstream(http, pollingUrl, { method: 'GET', headers: headers(credential), timeoutMs: left, signal: request.signal });
        const result = jsonOf(response) as { status?: unknown; result?: { sample?: unknown } | null } | null;
        if (result?.status === 'Task not found')
          throw new UpstreamError('server', `BFL no longer knows the image task ${task.id}.`, response.status, 'task_not_found');
        if (response.status < 200 || response.status >= 300) throw httpError(response, errorOf(response), request.model);
        switch (result?.status) {
          case 'Ready': {
            const sample = result.result?.sample;
            if (typeof sample !== 'string' || !sample)
              throw new UpstreamError('server', 'BFL finished the image task but sent no image.', response.status, 'empty_output');
            return { images: [{ kind: 'url', url: sample, mimeType: 'image/png' }], count: 1, maxPerCall: 1, width, height };
          }
          case 'Pending':
            break;
          case 'Request Moderated':
          case 'Content Moderated':
            throw new UpstreamError(
              'bad_request',
              MODERATED[result.status]!,
              400,
              result.status === 'Request Moderated' ? 'request_moderated' : 'content_moderated',
            );
          case 'Error':
            throw new UpstreamError('server', 'BFL failed to generate the image (status Error).', response.status, 'generation_error');
          default:
            throw new UpstreamError(
              'server',
              `BFL reported an unknown task status (${JSON.stringify(result?.status ?? null)}).`,
              response.status,
              'malformed_response',
            );
        }
        const wait = Math.min(pollIntervalMs, deadline - Date.now());
        if (wait > 0) {
          try {
            await sleep(wait, undefined, { signal: request.signal });
          } catch {
            throw new UpstreamError('aborted', 'The call was cancelled.');
          }
        }
      }
    },

    async checkCredential(credential) {
      const response = await callUpstream(http, `${baseOf(credential)}/v1/credits`, {
        method: 'GET',
        headers: headers(credential),
        timeoutMs: credential.timeoutMs,
      });
      if (response.status < 200 || response.status >= 300) throw httpError(response, errorOf(response), '');
    },
  };
}
