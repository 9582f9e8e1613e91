import { UpstreamError, type UpstreamCredential } from '../types.js';
import { callUpstream, dataUri, httpError, jsonOf, mergeExtra, type UpstreamResponse } from '../media/http.js';
import { directUpstreamHttp, type UpstreamHttp } from '../upstream-http.js';
import type { ExtraKeys, MediaAdapter, MediaFile, VideoRequest, VideoStatus } from '../media/media-types.js';
import { nearestSize } from '../media/sizes.js';

/**
 * Runway's developer API (https://docs.dev.runwayml.com): `POST /v1/image_to_video` (a start frame, plus an end frame
 * on models that take one) or `POST /v1/text_to_video`, answered `{ id }`; then `GET /v1/tasks/{id}` until
 * `SUCCEEDED` (`output`: expiring URLs) or `FAILED` (`failure`, `failureCode`); `DELETE /v1/tasks/{id}` cancels.
 * Every call carries `Authorization: Bearer <key>` and `X-Runway-Version`. Images go inline as data URIs.
 */
export const RUNWAY_API_VERSION = '2024-11-06';
export const RUNWAY_DEFAULT_BASE_URL = 'https://api.dev.runwayml.com';
/** Runway's limit for an image sent as a data URI. */
export const RUNWAY_DATA_URI_MAX_BYTES = 5 * 1024 * 1024;

/** The `extra` keys sent to Runway beside ours: its moderation setting (`{ publicFigureThreshold: "auto" | "low" }`). */
export const RUNWAY_VIDEO_EXTRA: ExtraKeys = { contentModeration: { type: 'object' } };

/** Task states in which Runway has not started the work: a task stopped then is not billed. */
const WAITING = new Set(['PENDING', 'THROTTLED']);

interface RunwayModel {
  /** Output resolutions (`width:height`) the model accepts. */
  ratios: string[];
  /** Durations it accepts; null: any whole number of seconds. */
  durations: number[] | null;
  /** Image-to-video only. */
  needsImage: boolean;
  /** Takes an end frame (`position: "last"`). */
  endFrame: boolean;
}

const RUNWAY_MODELS: Record<string, RunwayModel> = {
  gen4_turbo: { ratios: ['1280:720', '720:1280', '1104:832', '832:1104', '960:960', '1584:672'], durations: [5, 10], needsImage: true, endFrame: false },
  gen3a_turbo: { ratios: ['1280:768', '768:1280'], durations: [5, 10], needsImage: true, endFrame: true },
  'gen4.5': { ratios: ['1280:720', '720:1280'], durations: [2, 3, 4, 5, 6, 7, 8, 9, 10], needsImage: false, endFrame: false },
  veo3: { ratios: ['1280:720', '720:1280', '1080:1920', '1920:1080'], durations: [8], needsImage: false, endFrame: false },
  'veo3.1': { ratios: ['1280:720', '720:1280', '1080:1920', '1920:1080'], durations: [4, 6, 8], needsImage: false, endFrame: false },
  'veo3.1_fast': { ratios: ['1280:720', '720:1280', '1080:1920', '1920:1080'], durations: [4, 6, 8], needsImage: false, endFrame: false },
};
const DEFAULT_MODEL: RunwayModel = { ratios: ['1280:720', '720:1280'], durations: null, needsImage: false, endFrame: false };

export const runwayModel = (model: string): RunwayModel => RUNWAY_MODELS[model] ?? DEFAULT_MODEL;

/** The model's resolution nearest to an aspect ratio such as `16:9`. */
export function runwayRatio(model: string, aspectRatio: string): string {
  const [w, h] = aspectRatio.split(':').map(Number) as [number, number];
  const candidates = runwayModel(model).ratios.map((ratio) => {
    const [width, height] = ratio.split(':').map(Number) as [number, number];
    return { ratio, width, height };
  });
  return nearestSize(candidates, w, h).ratio;
}

/** The model's accepted duration nearest to the one asked for (the shorter on a tie). */
export function runwayDuration(model: string, seconds: number): number {
  const allowed = runwayModel(model).durations;
  if (!allowed) return Math.max(1, Math.round(seconds));
  return allowed.reduce((best, d) => (Math.abs(d - seconds) < Math.abs(best - seconds) ? d : best), allowed[0]!);
}

function imageUri(file: MediaFile, which: string): string {
  if (file.bytes.length > RUNWAY_DATA_URI_MAX_BYTES) {
    throw new UpstreamError(
      'bad_request',
      `The ${which} is ${Math.ceil(file.bytes.length / 1024 / 1024)} MB; Runway takes images of at most 5 MB.`,
      400,
      'image_too_large',
    );
  }
  return dataUri(file.bytes, file.mimeType);
}

/** Runway answers errors as `{ "error": "<human-readable reason>" }` (400s may add `issues`). */
function errorOf(response: UpstreamResponse): { code: string | null; message: string | null } {
  const body = jsonOf(response) as { error?: unknown; code?: unknown; issues?: unknown } | null;
  const issues = Array.isArray(body?.issues)
    ? (body.issues as { message?: unknown; path?: unknown }[])
        .map((i) => [Array.isArray(i.path) ? i.path.join('.') : '', typeof i.message === 'string' ? i.message : ''].filter(Boolean).join(': '))
        .filter(Boolean)
    : [];
  const base = typeof body?.error === 'string' ? body.error : response.body.length > 0 && response.body.length < 500 ? response.body.toString('utf8') : null;
  return { code: typeof body?.code === 'string' ? body.code : null, message: base && issues.length > 0 ? `${base} (${issues.join('; ')})` : base };
}

export function createRunwayAdapter(options: { defaultBaseUrl?: string; http?: UpstreamHttp } = {}): MediaAdapter {
  const defaultBaseUrl = options.defaultBaseUrl ?? RUNWAY_DEFAULT_BASE_URL;
  const http = options.http ?? directUpstreamHttp;
  const urlOf = (credential: UpstreamCredential, path: string) => `${(credential.baseUrl ?? defaultBaseUrl).replace(/\/+$/, '')}${path}`;
  const headers = (credential: UpstreamCredential) => ({
    authorization: `Bearer ${credential.apiKey ?? ''}`,
    'x-runway-version': RUNWAY_API_VERSION,
    accept: 'application/json',
  });

  function submission(request: VideoRequest): { path: string; body: Record<string, unknown>; duration: number } {
    const spec = runwayModel(request.model);
    const duration = runwayDuration(request.model, request.durationSeconds);
    const own: Record<string, unknown> = {
      model: request.model,
      promptText: request.prompt,
      ratio: runwayRatio(request.model, request.aspectRatio),
      duration,
      seed: request.seed ?? undefined,
    };
    if (request.endImage && !spec.endFrame) {
      throw new UpstreamError(
        'bad_request',
        `Runway ${request.model} does not take an end frame; leave endImageUrl out or choose a model that does.`,
        400,
        'end_frame_not_supported',
      );
    }
    if (request.endImage && !request.seedImage) {
      throw new UpstreamError('bad_request', 'An end frame needs a start frame too: send seedImageUrl with endImageUrl.', 400, 'start_frame_required');
    }
    if (request.seedImage) {
      own.promptImage = request.endImage
        ? [
            { uri: imageUri(request.seedImage, 'start frame'), position: 'first' },
            { uri: imageUri(request.endImage, 'end frame'), position: 'last' },
          ]
        : imageUri(request.seedImage, 'start frame');
      return { path: '/v1/image_to_video', body: mergeExtra(request.extra, own), duration };
    }
    if (spec.needsImage) {
      throw new UpstreamError('bad_request', `Runway ${request.model} makes video from a start frame: send seedImageUrl.`, 400, 'start_frame_required');
    }
    return { path: '/v1/text_to_video', body: mergeExtra(request.extra, own), duration };
  }

  return {
    kind: 'runway',
    needsCredential: true,
    extraKeys: { video: RUNWAY_VIDEO_EXTRA },

    async submitVideo(credential, request) {
      const { path, body, duration } = submission(request);
      const response = await callUpstream(http, urlOf(credential, path), {
        method: 'POST',
        headers: headers(credential),
        body,
        timeoutMs: credential.timeoutMs,
        signal: request.signal,
      });
      if (response.status < 200 || response.status >= 300) throw httpError(response, errorOf(response), request.model);
      const id = (jsonOf(response) as { id?: unknown } | null)?.id;
      if (typeof id !== 'string' || !id)
        throw new UpstreamError('server', 'The provider accepted the video but sent no task id.', response.status, 'malformed_response');
      return { externalId: id, estimatedSeconds: Math.max(30, duration * 8), durationSeconds: duration };
    },

    async pollVideo(credential, externalId, signal): Promise<VideoStatus> {
      const response = await callUpstream(http, urlOf(credential, `/v1/tasks/${encodeURIComponent(externalId)}`), {
        method: 'GET',
        headers: headers(credential),
        timeoutMs: credential.timeoutMs,
        signal,
      });
      if (response.status === 404)
        return {
          status: 'FAILED',
          progress: null,
          error: { code: 'not_found', message: errorOf(response).message ?? 'The provider no longer knows this task.' },
        };
      if (response.status < 200 || response.status >= 300) throw httpError(response, errorOf(response), '');
      const task = jsonOf(response) as { status?: unknown; progress?: unknown; output?: unknown; failure?: unknown; failureCode?: unknown } | null;
      const progress = typeof task?.progress === 'number' ? Math.min(1, Math.max(0, task.progress)) : null;
      switch (task?.status) {
        case 'PENDING':
        case 'THROTTLED':
          return { status: 'QUEUED', progress };
        case 'RUNNING':
          return { status: 'RUNNING', progress };
        case 'SUCCEEDED': {
          const url = Array.isArray(task.output) ? task.output.find((u): u is string => typeof u === 'string' && u.length > 0) : undefined;
          if (!url)
            return { status: 'FAILED', progress: null, error: { code: 'empty_output', message: 'The provider finished the task but returned no video.' } };
          return { status: 'SUCCEEDED', progress: 1, video: { kind: 'url', url, mimeType: 'video/mp4' }, durationSeconds: null };
        }
        case 'FAILED':
          return {
            status: 'FAILED',
            progress,
            error: {
              code: typeof task.failureCode === 'string' && task.failureCode ? task.failureCode : 'FAILED',
              message: typeof task.failure === 'string' && task.failure ? task.failure : 'The provider could not make the video.',
            },
          };
        case 'CANCELLED':
          return { status: 'FAILED', progress, error: { code: 'CANCELLED', message: 'The task was cancelled at the provider.' } };
        default:
          throw new UpstreamError(
            'server',
            `The provider reported an unknown task status (${JSON.stringify(task?.status ?? null)}).`,
            response.status,
            'malformed_response',
          );
      }
    },

    /** Deletes the task; confirmed unbilled only when it was still waiting (a running task is counted as billed). */
    async cancelVideo(credential, externalId) {
      const url = urlOf(credential, `/v1/tasks/${encodeURIComponent(externalId)}`);
      const read = await callUpstream(http, url, { method: 'GET', headers: headers(credential), timeoutMs: credential.timeoutMs });
      const waiting = read.status === 200 && WAITING.has(String((jsonOf(read) as { status?: unknown } | null)?.status));
      const response = await callUpstream(http, url, { method: 'DELETE', headers: { ...headers(credential), accept: '*/*' }, timeoutMs: credential.timeoutMs });
      if (response.status >= 200 && response.status < 300) return waiting;
      if (response.status === 404) return false;
      throw httpError(response, errorOf(response), '');
    },

    async checkCredential(credential) {
      const response = await callUpstream(http, urlOf(credential, '/v1/organization'), {
        method: 'GET',
        headers: headers(credential),
        timeoutMs: credential.timeoutMs,
      });
      if (response.status < 200 || response.status >= 300) throw httpError(response, errorOf(response), '');
    },
  };
}
