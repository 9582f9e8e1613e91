import { UpstreamError, type UpstreamCredential, type UpstreamErrorKind } from '../types.js';
import { callUpstream, dataUri, httpError, jsonOf, mergeExtra, type UpstreamResponse } from '../media/http.js';
import { directUpstreamHttp, type UpstreamHttp } from '../upstream-http.js';
import type { ExtraKeys, MediaAdapter, MediaFile, VideoRequest, VideoStatus } from '../media/media-types.js';

/**
 * MiniMax's video API, built from https://platform.minimax.io/docs (API reference "Video Generation": text to video,
 * image to video, first & last frame, "Query Video Generation Task", "Video Download", "List Files", "Error Codes";
 * as published in 2026):
 * - `POST /v1/video_generation` with `Authorization: Bearer <key>`: `model`, `prompt` (up to 2000 characters),
 *   `duration` 6|10, `resolution`, `first_frame_image` / `last_frame_image` (public URL or data: URL; JPG, PNG or
 *   WebP under 20 MB), `prompt_optimizer`, `fast_pretreatment`; answered `{ task_id, base_resp }`.
 * - MiniMax-Hailuo-02: 768P (default) or 1080P from text; 512P, 768P or 1080P from a start frame; 768P or 1080P with
 *   an end frame. 1080P clips are 6 s; 512P and 768P 6 or 10 s.
 * - `GET /v1/query/video_generation?task_id=`: `status` Preparing|Queueing|Processing|Success|Fail and `file_id`;
 *   `GET /v1/files/retrieve?file_id=`: `file.download_url` (valid 9 hours). No cancel endpoint.
 * - Errors come as HTTP 200 with a non-zero `base_resp.status_code` (the table below).
 */
export const MINIMAX_DEFAULT_BASE_URL = 'https://api.minimax.io';
export const MINIMAX_IMAGE_MAX_BYTES = 20 * 1024 * 1024;
const RESOLUTIONS = ['512P', '768P', '1080P'] as const;
type Resolution = (typeof RESOLUTIONS)[number];

/**
 * The `extra` keys sent to MiniMax beside ours. `resolution` changes MiniMax's price (1080P costs more than 768P, 512P
 * less), so only the values a model's catalog row prices are taken.
 */
export const MINIMAX_VIDEO_EXTRA: ExtraKeys = {
  resolution: { type: 'enum', values: RESOLUTIONS, priced: true },
  prompt_optimizer: { type: 'boolean' },
  fast_pretreatment: { type: 'boolean' },
};

/** MiniMax's documented status codes. 1001 is its own timeout; 1008 an empty balance another account may not have. */
const CODE_KINDS: Record<number, UpstreamErrorKind> = {
  1000: 'server',
  1001: 'timeout',
  1002: 'rate_limit',
  1004: 'auth',
  1008: 'rate_limit',
  1013: 'server',
  1024: 'server',
  1026: 'bad_request',
  1027: 'bad_request',
  1033: 'server',
  1039: 'rate_limit',
  1041: 'rate_limit',
  1042: 'bad_request',
  2013: 'bad_request',
  2045: 'rate_limit',
  2049: 'auth',
};
const SENSITIVE = new Set([1026, 1027]);

interface BaseResp {
  status_code?: unknown;
  status_msg?: unknown;
}

/** The code and message of a non-zero `base_resp`, or null for a success. */
function failureOf(body: { base_resp?: BaseResp } | null): { code: number; message: string } | null {
  const code = body?.base_resp?.status_code;
  if (code === 0) return null;
  const status = typeof body?.base_resp?.status_msg === 'string' ? body.base_resp.status_msg : '';
  if (typeof code !== 'number') return { code: -1, message: 'MiniMax answered without a status.' };
  const message = SENSITIVE.has(code)
    ? `${status || 'new_sensitive'}: MiniMax flagged the ${code === 1026 ? 'prompt or image' : 'generated video'} as sensitive content. Change the prompt or the image and try again.`
    : status || `MiniMax refused the request (status ${code}).`;
  return { code, message };
}

const errorOf = (failure: { code: number; message: string }, status: number) =>
  new UpstreamError(CODE_KINDS[failure.code] ?? 'server', failure.message, status, failure.code < 0 ? 'malformed_response' : `minimax_${failure.code}`);

/** 6 or 10 seconds, whichever is nearer (the shorter on a tie). */
export const minimaxDuration = (seconds: number): 6 | 10 => (seconds > 8 ? 10 : 6);

function resolutionOf(value: unknown): Resolution {
  if (value === undefined || value === null) return '768P';
  const resolution = typeof value === 'string' ? value.toUpperCase() : '';
  if ((RESOLUTIONS as readonly string[]).includes(resolution)) return resolution as Resolution;
  throw new UpstreamError('bad_request', `extra.resolution must be one of ${RESOLUTIONS.join(', ')} (got ${JSON.stringify(value)}).`, 400, 'resolution');
}

function imageOf(file: MediaFile, which: string): string {
  if (file.bytes.length >= MINIMAX_IMAGE_MAX_BYTES) {
    throw new UpstreamError(
      'bad_request',
      `The ${which} is ${Math.ceil(file.bytes.length / 1024 / 1024)} MB; MiniMax takes images under 20 MB.`,
      400,
      'image_too_large',
    );
  }
  return dataUri(file.bytes, file.mimeType);
}

/** The request body; combinations MiniMax refuses are refused here with what to change. */
export function minimaxTask(request: VideoRequest): { body: Record<string, unknown>; duration: 6 | 10 } {
  // The gateway polls; a caller's callback would receive this account's task data.
  const { callback_url: _ignored, resolution: asked, ...extra } = request.extra;
  const resolution = resolutionOf(asked);
  const duration = minimaxDuration(request.durationSeconds);
  const refuse = (message: string) => new UpstreamError('bad_request', message, 400, 'resolution_duration');
  if (resolution === '1080P' && duration === 10)
    throw refuse('MiniMax makes 1080P clips of 6 seconds: ask for durationSeconds 6, or extra.resolution 768P for 10 seconds.');
  if (resolution === '512P' && !request.seedImage)
    throw refuse('512P is for video from a start frame: send seedImageUrl, or ask for extra.resolution 768P or 1080P.');
  if (resolution === '512P' && request.endImage) throw refuse('Videos with an end frame are 768P or 1080P: ask for one of those in extra.resolution.');
  const own: Record<string, unknown> = { model: request.model, prompt: request.prompt, duration, resolution };
  if (request.seedImage) own.first_frame_image = imageOf(request.seedImage, 'start frame');
  if (request.endImage) own.last_frame_image = imageOf(request.endImage, 'end frame');
  return { body: mergeExtra(extra, own), duration };
}

export function createMinimaxAdapter(options: { defaultBaseUrl?: string; http?: UpstreamHttp } = {}): MediaAdapter {
  const defaultBaseUrl = options.defaultBaseUrl ?? MINIMAX_DEFAULT_BASE_URL;
  const http = options.http ?? directUpstreamHttp;
  const urlOf = (credential: UpstreamCredential, path: string) => `${(credential.baseUrl ?? defaultBaseUrl).replace(/\/+$/, '')}${path}`;
  const headers = (credential: UpstreamCredential) => ({ authorization: `Bearer ${credential.apiKey ?? ''}`, accept: 'application/json' });

  /** One call; HTTP failures are thrown, the JSON (with its `base_resp`) is returned for the caller to read. */
  async function call<T>(credential: UpstreamCredential, method: 'GET' | 'POST', path: string, body?: unknown, signal?: AbortSignal, model = '') {
    const response: UpstreamResponse = await callUpstream(http, urlOf(credential, path), {
      method,
      headers: headers(credential),
      body,
      timeoutMs: credential.timeoutMs,
      signal,
    });
    const json = jsonOf(response) as (T & { base_resp?: BaseResp }) | null;
    if (response.status < 200 || response.status >= 300) {
      const failure = failureOf(json);
      throw httpError(response, { code: failure ? `minimax_${failure.code}` : null, message: failure?.message ?? null }, model);
    }
    return { status: response.status, json };
  }

  async function downloadUrl(credential: UpstreamCredential, fileId: string, signal?: AbortSignal): Promise<string | null> {
    const { status, json } = await call<{ file?: { download_url?: unknown } }>(
      credential,
      'GET',
      `/v1/files/retrieve?file_id=${encodeURIComponent(fileId)}`,
      undefined,
      signal,
    );
    const failure = failureOf(json);
    if (failure) throw errorOf(failure, status);
    const url = json?.file?.download_url;
    return typeof url === 'string' && url ? url : null;
  }

  return {
    kind: 'minimax',
    needsCredential: true,
    extraKeys: { video: MINIMAX_VIDEO_EXTRA },

    async submitVideo(credential, request) {
      const { body, duration } = minimaxTask(request);
      const { status, json } = await call<{ task_id?: unknown }>(credential, 'POST', '/v1/video_generation', body, request.signal, request.model);
      const failure = failureOf(json);
      if (failure) throw errorOf(failure, status);
      const taskId = json?.task_id;
      if (typeof taskId !== 'string' || !taskId)
        throw new UpstreamError('server', 'MiniMax accepted the video but sent no task id.', status, 'malformed_response');
      return { externalId: taskId, estimatedSeconds: duration * 30, durationSeconds: duration };
    },

    async pollVideo(credential, externalId, signal): Promise<VideoStatus> {
      const { status, json } = await call<{ status?: unknown; file_id?: unknown }>(
        credential,
        'GET',
        `/v1/query/video_generation?task_id=${encodeURIComponent(externalId)}`,
        undefined,
        signal,
      );
      const failure = failureOf(json);
      if (json?.status === 'Fail') {
        const error = failure ?? { code: 0, message: 'MiniMax could not make the video.' };
        return { status: 'FAILED', progress: null, error: { code: SENSITIVE.has(error.code) ? 'content_moderated' : 'failed', message: error.message } };
      }
      // Invalid parameters on a read: MiniMax does not know this task id.
      if (failure?.code === 2013) return { status: 'FAILED', progress: null, error: { code: 'not_found', message: failure.message } };
      if (failure) throw errorOf(failure, status);
      switch (json?.status) {
        case 'Preparing':
        case 'Queueing':
          return { status: 'QUEUED', progress: null };
        case 'Processing':
          return { status: 'RUNNING', progress: null };
        case 'Success': {
          const url = typeof json.file_id === 'string' || typeof json.file_id === 'number' ? await downloadUrl(credential, String(json.file_id), signal) : null;
          if (!url) return { status: 'FAILED', progress: null, error: { code: 'empty_output', message: 'MiniMax finished the task but returned no video.' } };
          return { status: 'SUCCEEDED', progress: 1, video: { kind: 'url', url, mimeType: 'video/mp4' }, durationSeconds: null };
        }
        default:
          throw new UpstreamError('server', `MiniMax reported an unknown task status (${JSON.stringify(json?.status ?? null)}).`, status, 'malformed_response');
      }
    },

    // No cancelVideo: MiniMax has no endpoint to stop a task, so a cancelled job's task runs to its end and is billed.

    async checkCredential(credential) {
      const { status, json } = await call(credential, 'GET', '/v1/files/list?purpose=t2a_async_input');
      const failure = failureOf(json);
      if (failure) throw errorOf(failure, status);
    },
  };
}
