import { createHash } from 'node:crypto';
import type { Clock } from '../../../../platform/clock/clock.js';
import { generatePng, MAX_GENERATED_SIDE } from '../../../../platform/media/image.js';
import { generateMusicWav } from '../../../../platform/media/music.js';
import { generateSpeechWav } from '../../../../platform/media/speech.js';
import { generateMp4, VIDEO_LIMITS } from '../../../../platform/media/video.js';
import { UpstreamError } from '../types.js';
import { wavDurationSeconds } from '../media/audio.js';
import { VIDEO_ASPECT_RATIOS, type MediaAdapter, type MediaFile, type VideoAspectRatio, type VideoStatus } from '../media/media-types.js';

/**
 * The built-in media provider: real files made offline and deterministically from the prompt and seed, so the whole
 * product works with no credentials. PNG images of the requested size (some models deliver fewer per call than asked,
 * like real providers do), WAV speech and music, and H.264 MP4 video through submit/poll.
 *
 * A video task is stateless: its id carries the request and the submission time, and it is ready `videoDelayMs` after
 * submission by the injected clock. Polling therefore works after a restart and on any instance; the finished clip is
 * rendered on the first poll that finds it ready (and kept briefly for repeated polls).
 */
export interface LocalMediaOptions {
  clock: Clock;
  /** Simulated render time of a video (default 6 s). */
  videoDelayMs?: number;
  /** Images one call returns at most, per upstream model name (merged over LOCAL_IMAGE_MAX_PER_CALL). */
  maxPerCall?: Record<string, number>;
  /** Longer side of a local video in pixels (default 480) and its frame rate (default 15). */
  videoLongSide?: number;
  videoFps?: number;
}

/**
 * Images per call of the local image models; a model not listed returns every image asked for. `local-image` makes
 * at most 4 per call (a count of 5-8 makes the gateway top up); `local-image-mini` at most 2.
 */
export const LOCAL_IMAGE_MAX_PER_CALL: Record<string, number> = { 'local-image': 4, 'local-image-mini': 2 };

const TASK_PREFIX = 'local-video-';
const QUEUED_SHARE = 0.2;

interface VideoTask {
  v: 1;
  model: string;
  prompt: string;
  seed: number;
  durationSeconds: number;
  aspectRatio: VideoAspectRatio;
  /** Submission time (ms since the epoch, by the injected clock). */
  at: number;
}

/** A 32-bit seed from text (and optional bytes), for calls that came without one. */
export function seedFrom(...parts: (string | Buffer | number | null | undefined)[]): number {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part === null || part === undefined ? '\u0000' : typeof part === 'number' ? String(part) : part).update('\u0001');
  return hash.digest().readUInt32LE(0);
}

const u32 = (value: number) => ((value % 0x1_0000_0000) + 0x1_0000_0000) % 0x1_0000_0000;

function videoSize(aspectRatio: VideoAspectRatio, longSide: number): { width: number; height: number } {
  const [w, h] = aspectRatio.split(':').map(Number) as [number, number];
  const even = (n: number) => Math.max(VIDEO_LIMITS.minSide, Math.round(n / 2) * 2);
  return w >= h ? { width: even(longSide), height: even((longSide * h) / w) } : { width: even((longSide * w) / h), height: even(longSide) };
}

const encodeTask = (task: VideoTask) => TASK_PREFIX + Buffer.from(JSON.stringify(task)).toString('base64url');

function decodeTask(externalId: string): VideoTask | null {
  if (!externalId.startsWith(TASK_PREFIX)) return null;
  try {
    const task = JSON.parse(Buffer.from(externalId.slice(TASK_PREFIX.length), 'base64url').toString('utf8')) as VideoTask;
    const valid =
      task.v === 1 &&
      typeof task.prompt === 'string' &&
      Number.isInteger(task.seed) &&
      typeof task.durationSeconds === 'number' &&
      task.durationSeconds > 0 &&
      task.durationSeconds <= VIDEO_LIMITS.maxSeconds &&
      (VIDEO_ASPECT_RATIOS as readonly string[]).includes(task.aspectRatio) &&
      Number.isFinite(task.at);
    return valid ? task : null;
  } catch {
    return null;
  }
}

/** Mixes source images into the seed, so different start frames give different clips and pictures. */
const withSources = (seed: number, ...sources: (MediaFile | undefined)[]) =>
  sources.some(Boolean) ? seedFrom(seed, ...sources.map((s) => s?.bytes ?? null)) : seed;

export function createLocalMediaProvider(options: LocalMediaOptions): MediaAdapter {
  const { clock } = options;
  const delayMs = options.videoDelayMs ?? 6_000;
  const maxPerCall = { ...LOCAL_IMAGE_MAX_PER_CALL, ...options.maxPerCall };
  const longSide = options.videoLongSide ?? 480;
  const fps = options.videoFps ?? 15;
  /** Recently rendered clips by task id, so repeated polls of a finished task do not render it again. */
  const rendered = new Map<string, Promise<Buffer>>();

  const aborted = (signal?: AbortSignal) => {
    if (signal?.aborted) throw new UpstreamError('aborted', 'The call was cancelled.');
  };

  function render(externalId: string, task: VideoTask): Promise<Buffer> {
    let clip = rendered.get(externalId);
    if (!clip) {
      const size = videoSize(task.aspectRatio, longSide);
      clip = generateMp4({ prompt: task.prompt, seed: task.seed, ...size, durationSeconds: task.durationSeconds, fps }).catch((err: unknown) => {
        rendered.delete(externalId);
        throw new UpstreamError('server', `The local video could not be rendered: ${err instanceof Error ? err.message : String(err)}`, null, 'render_failed');
      });
      rendered.set(externalId, clip);
      while (rendered.size > 4) rendered.delete(rendered.keys().next().value!);
    }
    return clip;
  }

  return {
    kind: 'local',
    needsCredential: false,

    async generateImage(_credential, request) {
      aborted(request.signal);
      const { width, height } = request;
      if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width > MAX_GENERATED_SIDE || height > MAX_GENERATED_SIDE) {
        throw new UpstreamError(
          'bad_request',
          `The local image model draws 1 to ${MAX_GENERATED_SIDE} pixels a side (asked for ${width}x${height}).`,
          400,
          'invalid_size',
        );
      }
      if (!Number.isInteger(request.count) || request.count < 1) throw new UpstreamError('bad_request', 'Ask for at least one image.', 400, 'invalid_count');
      const limit = maxPerCall[request.model] ?? null;
      const count = Math.min(request.count, limit ?? request.count);
      const base = withSources(request.seed ?? seedFrom(request.prompt), request.initImage);
      const images = [];
      for (let i = 0; i < count; i++) {
        images.push({ kind: 'bytes' as const, bytes: generatePng({ prompt: request.prompt, seed: u32(base + i), width, height }), mimeType: 'image/png' });
        // Drawing is CPU work: let other requests run between images.
        await new Promise<void>((resolve) => setImmediate(resolve));
        aborted(request.signal);
      }
      return { images, count, maxPerCall: limit, width, height };
    },

    async submitVideo(_credential, request) {
      aborted(request.signal);
      const durationSeconds = request.durationSeconds;
      if (!(durationSeconds > 0 && durationSeconds <= VIDEO_LIMITS.maxSeconds)) {
        throw new UpstreamError(
          'bad_request',
          `The local video model makes clips of up to ${VIDEO_LIMITS.maxSeconds} seconds (asked for ${durationSeconds}).`,
          400,
          'invalid_duration',
        );
      }
      if (!(VIDEO_ASPECT_RATIOS as readonly string[]).includes(request.aspectRatio)) {
        throw new UpstreamError('bad_request', `The aspect ratio must be one of ${VIDEO_ASPECT_RATIOS.join(', ')}.`, 400, 'invalid_aspect_ratio');
      }
      const seed = withSources(request.seed ?? seedFrom(request.prompt), request.seedImage, request.endImage);
      const task: VideoTask = {
        v: 1,
        model: request.model,
        prompt: request.prompt,
        seed,
        durationSeconds,
        aspectRatio: request.aspectRatio,
        at: clock.now().getTime(),
      };
      return { externalId: encodeTask(task), estimatedSeconds: Math.ceil(delayMs / 1000), durationSeconds };
    },

    async pollVideo(_credential, externalId, signal): Promise<VideoStatus> {
      aborted(signal);
      const task = decodeTask(externalId);
      if (!task) return { status: 'FAILED', progress: null, error: { code: 'not_found', message: 'The local provider has no such video task.' } };
      const elapsed = clock.now().getTime() - task.at;
      if (elapsed < delayMs * QUEUED_SHARE) return { status: 'QUEUED', progress: 0 };
      if (elapsed < delayMs)
        return { status: 'RUNNING', progress: Math.round(((elapsed - delayMs * QUEUED_SHARE) / (delayMs * (1 - QUEUED_SHARE))) * 100) / 100 };
      const bytes = await render(externalId, task);
      return { status: 'SUCCEEDED', progress: 1, video: { kind: 'bytes', bytes, mimeType: 'video/mp4' }, durationSeconds: task.durationSeconds };
    },

    async cancelVideo() {
      // Nothing runs in the background and nothing is billed: a cancelled task is simply never polled again.
      return true;
    },

    async generateSpeech(_credential, request) {
      aborted(request.signal);
      if (!request.text.trim()) throw new UpstreamError('bad_request', 'There is no text to speak.', 400, 'empty_text');
      const speed = request.speed ?? 1;
      if (!(speed >= 0.5 && speed <= 2))
        throw new UpstreamError('bad_request', `The local speech model speaks at 0.5 to 2 times normal speed (asked for ${speed}).`, 400, 'invalid_speed');
      const bytes = generateSpeechWav({ text: request.text, seed: seedFrom(request.text, request.voice), voice: request.voice ?? undefined, speed });
      return { bytes, mimeType: 'audio/wav', durationSeconds: wavDurationSeconds(bytes) };
    },

    async generateMusic(_credential, request) {
      aborted(request.signal);
      if (!request.description.trim()) throw new UpstreamError('bad_request', 'Describe the music to make.', 400, 'empty_description');
      const bytes = generateMusicWav({ prompt: request.description, seed: request.seed ?? seedFrom(request.description) });
      return { bytes, mimeType: 'audio/wav', durationSeconds: wavDurationSeconds(bytes) };
    },

    async checkCredential() {
      // needs none
    },
  };
}
