import { UpstreamError, type UpstreamCredential } from '../types.js';
import { GOOGLE_INLINE_MAX_BYTES, googleError, isOk, rpcCodeName, type GoogleClient } from './api.js';
import { jsonOf, mergeExtra, type UpstreamResponse } from '../media/http.js';
import type { MediaFile, MediaOutput, VideoRequest, VideoStatus, VideoSubmission } from '../media/media-types.js';
import { nearestSize } from '../media/sizes.js';
import type { UpstreamHttp } from '../upstream-http.js';

/**
 * Veo on the Gemini API (see media.ts for the documentation): `POST /v1beta/models/{model}:predictLongRunning`
 * answers a long-running operation `{ name: "models/{model}/operations/{id}" }`; `GET /v1beta/{name}` until
 * `done: true`, then `response.generateVideoResponse.generatedSamples[0].video.uri` (a Files API download that needs the
 * key) or `error`. The operation name alone is enough to poll, on any instance. The Gemini API takes no seed for Veo
 * (only Vertex AI does) and has no cancel method for these operations: cancelling is a no-op.
 */
interface VeoModel {
  /** Clip lengths (seconds) the model accepts. */
  durations: readonly number[];
  /** Takes `lastFrame` (first-and-last-frame video). */
  endFrame: boolean;
}

const VEO_FAMILIES: ReadonlyArray<readonly [prefix: string, model: VeoModel]> = [
  ['veo-2.', { durations: [5, 6, 7, 8], endFrame: false }],
  ['veo-3.1', { durations: [4, 6, 8], endFrame: true }],
  ['veo-3.', { durations: [8], endFrame: false }],
];
const VEO_ASPECT_RATIOS = [
  { ratio: '16:9', width: 16, height: 9 },
  { ratio: '9:16', width: 9, height: 16 },
] as const;
/** Google quotes 11 seconds to 6 minutes; a minute is the usual wait. */
const VEO_ESTIMATED_SECONDS = 60;

export const veoModel = (model: string): VeoModel => VEO_FAMILIES.find(([prefix]) => model.startsWith(prefix))?.[1] ?? VEO_FAMILIES[2]![1];

/** The model's accepted clip length nearest to the one asked for (the shorter on a tie). */
export function veoDuration(model: string, seconds: number): number {
  const allowed = veoModel(model).durations;
  return allowed.reduce((best, d) => (Math.abs(d - seconds) < Math.abs(best - seconds) ? d : best), allowed[0]!);
}

/** Veo makes landscape (16:9) or portrait (9:16) video: other ratios go to the nearer one (square: landscape). */
export function veoAspectRatio(aspectRatio: string): '16:9' | '9:16' {
  const [w, h] = aspectRatio.split(':').map(Number) as [number, number];
  return nearestSize(VEO_ASPECT_RATIOS, w || 16, h || 9).ratio;
}

/** Operation names as the Gemini API hands them out; anything else never reaches a URL. */
const OPERATION_NAME = /^(models\/[\w.-]+\/)?operations\/[\w.-]+$/;

function inlineImage(file: MediaFile, what: string): { bytesBase64Encoded: string; mimeType: string } {
  if (file.bytes.length > GOOGLE_INLINE_MAX_BYTES) {
    throw new UpstreamError(
      'bad_request',
      `The ${what} is ${Math.ceil(file.bytes.length / 1024 / 1024)} MB; the Gemini API takes inline images of at most 20 MB.`,
      400,
      'image_too_large',
    );
  }
  return { bytesBase64Encoded: file.bytes.toString('base64'), mimeType: file.mimeType };
}

export async function submitVeo(client: GoogleClient, credential: UpstreamCredential, request: VideoRequest): Promise<VideoSubmission> {
  const spec = veoModel(request.model);
  if (request.endImage && !spec.endFrame) {
    throw new UpstreamError(
      'bad_request',
      `${request.model} does not take an end frame on the Gemini API; leave endImageUrl out.`,
      400,
      'end_frame_not_supported',
    );
  }
  const duration = veoDuration(request.model, request.durationSeconds);
  const instance: Record<string, unknown> = { prompt: request.prompt };
  if (request.seedImage) instance.image = inlineImage(request.seedImage, 'start frame');
  if (request.endImage) instance.lastFrame = inlineImage(request.endImage, 'end frame');
  const parameters = mergeExtra(request.extra, {
    aspectRatio: veoAspectRatio(request.aspectRatio),
    durationSeconds: duration,
    negativePrompt: request.negativePrompt ?? undefined,
  });
  const path = `/v1beta/models/${encodeURIComponent(request.model)}:predictLongRunning`;
  const response = await client.call(credential, 'POST', path, { instances: [instance], parameters }, request.signal);
  if (!isOk(response)) throw googleError(response, request.model);
  const name = (jsonOf(response) as { name?: unknown } | null)?.name;
  if (typeof name !== 'string' || !OPERATION_NAME.test(name)) {
    throw new UpstreamError('server', 'Google accepted the video but sent no operation name.', response.status, 'malformed_response');
  }
  return { externalId: name, estimatedSeconds: VEO_ESTIMATED_SECONDS, durationSeconds: duration };
}

interface VeoOperation {
  done?: unknown;
  error?: { code?: unknown; message?: unknown };
  response?: {
    generateVideoResponse?: {
      generatedSamples?: { video?: { uri?: unknown; encodedVideo?: unknown; encoding?: unknown } }[];
      raiMediaFilteredCount?: unknown;
      raiMediaFilteredReasons?: unknown;
    };
  };
}

const failed = (code: string, message: string): VideoStatus => ({ status: 'FAILED', progress: null, error: { code, message } });

export async function pollVeo(client: GoogleClient, credential: UpstreamCredential, externalId: string, signal?: AbortSignal): Promise<VideoStatus> {
  if (!OPERATION_NAME.test(externalId)) return failed('not_found', `"${externalId}" is not a Gemini API operation name.`);
  const response = await client.call(credential, 'GET', `/v1beta/${externalId}`, undefined, signal);
  if (response.status === 404) return failed('not_found', googleError(response, '').message || 'Google no longer knows this operation.');
  if (!isOk(response)) throw googleError(response, '');
  const operation = (jsonOf(response) ?? {}) as VeoOperation;
  if (operation.done !== true) return { status: 'RUNNING', progress: null };
  if (operation.error) {
    const message = typeof operation.error.message === 'string' && operation.error.message ? operation.error.message : 'Google could not make the video.';
    return failed(rpcCodeName(operation.error.code), message);
  }
  const result = operation.response?.generateVideoResponse;
  const video = (Array.isArray(result?.generatedSamples) ? result.generatedSamples : []).map((s) => s?.video).find((v) => v && (v.uri || v.encodedVideo));
  if (!video) {
    const reasons = Array.isArray(result?.raiMediaFilteredReasons) ? result.raiMediaFilteredReasons.filter((r): r is string => typeof r === 'string') : [];
    if (reasons.length > 0 || (typeof result?.raiMediaFilteredCount === 'number' && result.raiMediaFilteredCount > 0)) {
      return failed('content_filtered', reasons.join(' ') || "Google's safety filters removed the video. Rephrase the prompt.");
    }
    return failed('empty_output', 'Google finished the operation but returned no video.');
  }
  if (typeof video.encodedVideo === 'string' && video.encodedVideo) {
    const mimeType = typeof video.encoding === 'string' ? video.encoding : 'video/mp4';
    return { status: 'SUCCEEDED', progress: 1, video: { kind: 'bytes', bytes: Buffer.from(video.encodedVideo, 'base64'), mimeType }, durationSeconds: null };
  }
  const output = await downloadOutput(client, credential, String(video.uri), signal);
  if ('error' in output) return failed(output.error.code, output.error.message);
  return { status: 'SUCCEEDED', progress: 1, video: output, durationSeconds: null };
}

/**
 * The video behind a Files API URI. The download is asked for with the key on the account's own API root (never on a
 * host named in an answer); Google answers with a redirect to a signed link that needs no key, handed to the gateway
 * as a URL (it downloads it with its size cap, and records it without the signature), or with the bytes themselves.
 */
async function downloadOutput(
  client: GoogleClient,
  credential: UpstreamCredential,
  uri: string,
  signal?: AbortSignal,
): Promise<MediaOutput | { error: { code: string; message: string } }> {
  const file = /(?:^|\/)files\/([\w-]+)/.exec(uri)?.[1];
  if (!file)
    return { error: { code: 'malformed_response', message: `Google returned a video location that is not a file of the Gemini API (${uri.slice(0, 200)}).` } };
  const url = `${client.root(credential)}/v1beta/files/${file}:download?alt=media`;
  const response = await fetchNoRedirect(client.http, url, { 'x-goog-api-key': credential.apiKey ?? '' }, credential.timeoutMs, signal);
  const location = response.headers.get('location');
  if (response.status >= 300 && response.status < 400 && location) return { kind: 'url', url: new URL(location, url).href, mimeType: 'video/mp4' };
  if (response.status === 404)
    return { error: { code: 'not_found', message: 'The video is no longer stored at Google (generated files are kept for two days).' } };
  if (!isOk(response)) throw googleError(response, '');
  if (response.body.length === 0) throw new UpstreamError('server', "Google's video download was empty.", response.status, 'empty_result');
  return { kind: 'bytes', bytes: response.body, mimeType: response.headers.get('content-type') ?? 'video/mp4' };
}

/** `callUpstream`, but a redirect is returned rather than followed: following it would carry the key to another host. */
async function fetchNoRedirect(
  http: UpstreamHttp,
  url: string,
  headers: Record<string, string>,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<UpstreamResponse> {
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    const response = await http.fetch(url, { headers, redirect: 'manual', signal: signal ? AbortSignal.any([timeout, signal]) : timeout });
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel().catch(() => undefined);
      return { status: response.status, headers: response.headers, body: Buffer.alloc(0) };
    }
    return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
  } catch (err) {
    if (signal?.aborted) throw new UpstreamError('aborted', 'The call was cancelled.');
    if (timeout.aborted)
      throw new UpstreamError('timeout', `Google did not answer the video download within ${Math.round(timeoutMs / 100) / 10} s.`, null, 'timeout');
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : err instanceof Error ? err.message : String(err);
    throw new UpstreamError('network', `Could not reach Google to download the video: ${cause}`, null, 'connection_error');
  }
}
