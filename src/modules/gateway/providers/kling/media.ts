import { createHmac } from 'node:crypto';
import { UpstreamError, classifyStatus, type UpstreamCredential, type UpstreamErrorKind } from '../types.js';
import { callUpstream, jsonOf, mergeExtra, type UpstreamResponse } from '../media/http.js';
import { directUpstreamHttp, type UpstreamHttp } from '../upstream-http.js';
import type { ExtraKeys, MediaAdapter, MediaFile, VideoRequest, VideoStatus } from '../media/media-types.js';
import { nearestSize } from '../media/sizes.js';

/**
 * Kling AI's API, built from its developer documentation (https://app.klingai.com/global/dev/document-api:
 * "General Information" with the error-code table, "Video Generation - Text to Video / Image to Video", and the
 * capability map; as published in 2026):
 * - Base https://api-singapore.klingai.com (the global system; api.klingai.com is the former one). Every call carries
 *   `Authorization: Bearer <JWT>`, an HS256 token signed with the secret key: `iss` the access key, `exp` now+1800 s,
 *   `nbf` now-5 s.
 * - `POST /v1/videos/text2video` (`model_name`, `prompt`, `negative_prompt`, `cfg_scale`, `mode` std|pro,
 *   `aspect_ratio` 16:9|9:16|1:1, `duration` "5"|"10", `camera_control`) or `POST /v1/videos/image2video` (`image`,
 *   `image_tail`: base64 without a data: prefix, JPG/PNG up to 10 MB; `static_mask`, `dynamic_masks`); answered
 *   `{ code: 0, message, request_id, data: { task_id, task_status } }`.
 * - `GET /v1/videos/{text2video|image2video}/{task_id}`: `task_status` submitted|processing|succeed|failed,
 *   `task_status_msg`, `task_result.videos[0].{url,duration}`. No cancel endpoint.
 * - Errors: an HTTP status and Kling's `code` (1000-1004 authentication, 1100-1103 account, 1200-1203 request,
 *   1300-1304 policy and limits, 5000-5002 server).
 * kling-v2-1 makes video from a start frame only; kling-v2-1-master also from text.
 */
export const KLING_DEFAULT_BASE_URL = 'https://api-singapore.klingai.com';
export const KLING_IMAGE_MAX_BYTES = 10 * 1024 * 1024;
const KLING_RATIOS = [
  { ratio: '16:9', width: 16, height: 9 },
  { ratio: '9:16', width: 9, height: 16 },
  { ratio: '1:1', width: 1, height: 1 },
];
/** Models that make video from a start frame only (no text2video). */
const IMAGE_ONLY_MODELS = new Set(['kling-v1-5', 'kling-v2-1']);

export interface KlingCredential {
  accessKey: string;
  secretKey: string;
}

/**
 * One Kling account from `KLING_API_KEY`: `<access key>:<secret key>` (accounts comma-separated as for every provider).
 * Throws an Error naming what is missing.
 */
export function parseKlingCredential(apiKey: string | null | undefined): KlingCredential {
  const value = (apiKey ?? '').trim();
  const colon = value.indexOf(':');
  const accessKey = (colon < 0 ? value : value.slice(0, colon)).trim();
  const secretKey = (colon < 0 ? '' : value.slice(colon + 1)).trim();
  const problem = !value ? 'is empty' : !accessKey ? 'has no access key before the colon' : !secretKey ? 'has no secret key after a colon' : null;
  if (problem) throw new Error(`A Kling account in KLING_API_KEY ${problem}: give each account as <access key>:<secret key>, accounts separated by commas.`);
  return { accessKey, secretKey };
}

const base64url = (value: Buffer | string) => Buffer.from(value).toString('base64url');

/** The API token of one call: a JWT (HS256) from the access key, valid from 5 s ago for 30 minutes. */
export function klingToken(credential: KlingCredential, nowMs = Date.now()): string {
  const now = Math.floor(nowMs / 1000);
  const unsigned = `${base64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))}.${base64url(JSON.stringify({ iss: credential.accessKey, exp: now + 1800, nbf: now - 5 }))}`;
  return `${unsigned}.${base64url(createHmac('sha256', credential.secretKey).update(unsigned).digest())}`;
}

/** The accepted aspect ratio nearest to the one asked for (Kling's default, 16:9, on a tie). */
export const klingRatio = (aspectRatio: string): string => {
  const [w, h] = aspectRatio.split(':').map(Number) as [number, number];
  return nearestSize(KLING_RATIOS, w, h).ratio;
};

/** 5 or 10 seconds, whichever is nearer (the shorter on a tie). */
export const klingDuration = (seconds: number): 5 | 10 => (seconds > 7.5 ? 10 : 5);

/** Kling's codes by its documented table; codes it may add later fall back to the HTTP status. */
function kindOfCode(code: number | null, status: number, message: string, model: string): UpstreamErrorKind {
  if (code === null) return classifyStatus(status, null, message, model);
  if (code >= 1000 && code <= 1004) return 'auth';
  // Account exception, or an IP whitelist that excludes us: this account cannot be used from here.
  if (code === 1100 || code === 1304) return 'auth';
  // In arrears, or the resource pack is used up: another account may still have credit.
  if (code === 1101 || code === 1102) return 'rate_limit';
  if (code === 1103) return classifyStatus(403, String(code), message, model);
  if (code === 1200 || code === 1201 || code === 1300 || code === 1301) return 'bad_request';
  if (code === 1203) return model ? 'model_not_found' : 'server';
  if (code === 1302 || code === 1303) return 'rate_limit';
  if (code === 1202 || code >= 5000) return 'server';
  return classifyStatus(status, String(code), message, model);
}

function klingError(response: UpstreamResponse, model: string): UpstreamError {
  const body = jsonOf(response) as { code?: unknown; message?: unknown } | null;
  const code = typeof body?.code === 'number' ? body.code : null;
  const message = (typeof body?.message === 'string' && body.message.trim()) || `Kling answered HTTP ${response.status}.`;
  return new UpstreamError(
    kindOfCode(code, response.status, message, model),
    message,
    response.status,
    code === null ? `http_${response.status}` : `kling_${code}`,
  );
}

function imageOf(file: MediaFile, which: string): string {
  if (file.mimeType !== 'image/png' && file.mimeType !== 'image/jpeg') {
    throw new UpstreamError(
      'bad_request',
      `Kling takes JPG or PNG images; the ${which} is ${file.mimeType}. Convert it and send it again.`,
      400,
      'image_format',
    );
  }
  if (file.bytes.length > KLING_IMAGE_MAX_BYTES) {
    throw new UpstreamError(
      'bad_request',
      `The ${which} is ${Math.ceil(file.bytes.length / 1024 / 1024)} MB; Kling takes images of at most 10 MB.`,
      400,
      'image_too_large',
    );
  }
  return file.bytes.toString('base64');
}

/**
 * The `extra` keys sent to Kling beside ours. `mode` changes Kling's price (pro costs more than std); the motion brush
 * (`static_mask`, `dynamic_masks` with their `trajectories`) is for video from a start frame.
 */
export const KLING_VIDEO_EXTRA: ExtraKeys = {
  cfg_scale: { type: 'number', min: 0, max: 1 },
  mode: { type: 'enum', values: ['std', 'pro'], priced: true },
  camera_control: { type: 'object' },
  static_mask: { type: 'string' },
  dynamic_masks: { type: 'object' },
};

/** The motion brush takes a list; a single `{ mask, trajectories }` object is one brush. */
function extraOf(extra: Record<string, unknown>): Record<string, unknown> {
  // The gateway polls; a caller's callback would receive this account's task data.
  const { callback_url: _ignored, ...rest } = extra;
  const masks = rest.dynamic_masks;
  if (masks && typeof masks === 'object' && !Array.isArray(masks)) rest.dynamic_masks = [masks];
  return rest;
}

type Endpoint = 'text2video' | 'image2video';

export function createKlingAdapter(options: { defaultBaseUrl?: string; http?: UpstreamHttp; now?: () => number } = {}): MediaAdapter {
  const defaultBaseUrl = options.defaultBaseUrl ?? KLING_DEFAULT_BASE_URL;
  const http = options.http ?? directUpstreamHttp;
  const now = options.now ?? Date.now;
  const urlOf = (credential: UpstreamCredential, path: string) => `${(credential.baseUrl ?? defaultBaseUrl).replace(/\/+$/, '')}${path}`;

  function headers(credential: UpstreamCredential) {
    let parsed: KlingCredential;
    try {
      parsed = parseKlingCredential(credential.apiKey);
    } catch (err) {
      throw new UpstreamError('auth', (err as Error).message, null, 'credential_format');
    }
    return { authorization: `Bearer ${klingToken(parsed, now())}`, accept: 'application/json' };
  }

  async function call(credential: UpstreamCredential, method: 'GET' | 'POST', path: string, body?: unknown, signal?: AbortSignal) {
    return callUpstream(http, urlOf(credential, path), { method, headers: headers(credential), body, timeoutMs: credential.timeoutMs, signal });
  }

  function submission(request: VideoRequest): { endpoint: Endpoint; body: Record<string, unknown>; duration: 5 | 10 } {
    const duration = klingDuration(request.durationSeconds);
    const own: Record<string, unknown> = {
      model_name: request.model,
      prompt: request.prompt,
      negative_prompt: request.negativePrompt ?? undefined,
      duration: String(duration),
    };
    if (request.endImage && !request.seedImage) {
      throw new UpstreamError('bad_request', 'An end frame needs a start frame too: send seedImageUrl with endImageUrl.', 400, 'start_frame_required');
    }
    if (request.seedImage) {
      own.image = imageOf(request.seedImage, 'start frame');
      if (request.endImage) own.image_tail = imageOf(request.endImage, 'end frame');
      return { endpoint: 'image2video', body: mergeExtra(extraOf(request.extra), own), duration };
    }
    if (request.extra.static_mask !== undefined || request.extra.dynamic_masks !== undefined) {
      throw new UpstreamError(
        'bad_request',
        'The motion brush (static_mask, dynamic_masks) paints over a start frame: send seedImageUrl with it.',
        400,
        'start_frame_required',
      );
    }
    if (IMAGE_ONLY_MODELS.has(request.model)) {
      throw new UpstreamError(
        'bad_request',
        `Kling ${request.model} makes video from a start frame: send seedImageUrl, or choose kling-v2-1-master for video from text.`,
        400,
        'start_frame_required',
      );
    }
    own.aspect_ratio = klingRatio(request.aspectRatio);
    return { endpoint: 'text2video', body: mergeExtra(extraOf(request.extra), own), duration };
  }

  return {
    kind: 'kling',
    needsCredential: true,
    extraKeys: { video: KLING_VIDEO_EXTRA },
    checkKeyShape: (apiKey) => void parseKlingCredential(apiKey),

    async submitVideo(credential, request) {
      const { endpoint, body, duration } = submission(request);
      const response = await call(credential, 'POST', `/v1/videos/${endpoint}`, body, request.signal);
      const answer = jsonOf(response) as { code?: unknown; data?: { task_id?: unknown } } | null;
      if (response.status < 200 || response.status >= 300 || (typeof answer?.code === 'number' && answer.code !== 0)) throw klingError(response, request.model);
      const taskId = answer?.data?.task_id;
      if (typeof taskId !== 'string' || !taskId)
        throw new UpstreamError('server', 'Kling accepted the video but sent no task id.', response.status, 'malformed_response');
      // The task's endpoint is part of its address: polls read it from the external id.
      return { externalId: `${endpoint}:${taskId}`, estimatedSeconds: duration * 30, durationSeconds: duration };
    },

    async pollVideo(credential, externalId, signal): Promise<VideoStatus> {
      const [endpoint, taskId] = externalId.split(':', 2) as [string, string | undefined];
      if ((endpoint !== 'text2video' && endpoint !== 'image2video') || !taskId) {
        return { status: 'FAILED', progress: null, error: { code: 'not_found', message: `"${externalId}" is not a Kling task of this service.` } };
      }
      const response = await call(credential, 'GET', `/v1/videos/${endpoint}/${encodeURIComponent(taskId)}`, undefined, signal);
      if (response.status === 404) return { status: 'FAILED', progress: null, error: { code: 'not_found', message: klingError(response, '').message } };
      const answer = jsonOf(response) as {
        code?: unknown;
        data?: { task_status?: unknown; task_status_msg?: unknown; task_result?: { videos?: unknown } };
      } | null;
      if (response.status < 200 || response.status >= 300 || (typeof answer?.code === 'number' && answer.code !== 0)) throw klingError(response, '');
      const task = answer?.data;
      switch (task?.task_status) {
        case 'submitted':
          return { status: 'QUEUED', progress: null };
        case 'processing':
          return { status: 'RUNNING', progress: null };
        case 'succeed': {
          const videos = task.task_result?.videos;
          const video = Array.isArray(videos) ? (videos[0] as { url?: unknown; duration?: unknown } | undefined) : undefined;
          if (typeof video?.url !== 'string' || !video.url)
            return { status: 'FAILED', progress: null, error: { code: 'empty_output', message: 'Kling finished the task but returned no video.' } };
          const seconds = Number(video.duration);
          return {
            status: 'SUCCEEDED',
            progress: 1,
            video: { kind: 'url', url: video.url, mimeType: 'video/mp4' },
            durationSeconds: Number.isFinite(seconds) && seconds > 0 ? seconds : null,
          };
        }
        case 'failed': {
          const message = typeof task.task_status_msg === 'string' && task.task_status_msg ? task.task_status_msg : 'Kling could not make the video.';
          // Kling's risk control speaks of risk, sensitive content or violations; the gateway refunds those as refusals.
          const refused = /risk|sensitive|violat|content|moderat|safety|policy/i.test(message);
          return { status: 'FAILED', progress: null, error: { code: refused ? 'content_moderated' : 'failed', message } };
        }
        default:
          throw new UpstreamError(
            'server',
            `Kling reported an unknown task status (${JSON.stringify(task?.task_status ?? null)}).`,
            response.status,
            'malformed_response',
          );
      }
    },

    // No cancelVideo: Kling has no endpoint to stop a task, so a cancelled job's task runs to its end and is billed.

    async checkCredential(credential) {
      const response = await call(credential, 'GET', '/v1/videos/image2video?pageNum=1&pageSize=1');
      const answer = jsonOf(response) as { code?: unknown } | null;
      if (response.status < 200 || response.status >= 300 || (typeof answer?.code === 'number' && answer.code !== 0)) throw klingError(response, '');
    },
  };
}
