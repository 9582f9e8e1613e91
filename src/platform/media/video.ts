import { randomUUID } from 'node:crypto';
import type HMEModule from 'h264-mp4-encoder';
import { normaliseMp4 } from './mp4.js';
import { describeScene, renderScene } from './scene.js';

export interface GenerateVideoInput {
  prompt: string;
  seed: number;
  /** Even numbers of pixels; odd values are rounded down. */
  width: number;
  height: number;
  durationSeconds: number;
  /** Frames per second (default 24). */
  fps?: number;
}

type Encoders = typeof HMEModule;
let encoders: Promise<Encoders> | null = null;

/**
 * Loads the WebAssembly H.264 encoder once. Its Emscripten glue installs process-wide `uncaughtException` and
 * `unhandledRejection` handlers when it loads (rethrowing and aborting); they are removed again so the service's own
 * error handling stays in charge.
 */
function loadEncoders(): Promise<Encoders> {
  encoders ??= (async () => {
    const events = ['uncaughtException', 'unhandledRejection'];
    const before = new Map(events.map((event) => [event, new Set<unknown>(process.rawListeners(event as 'uncaughtException'))]));
    try {
      return (await import('h264-mp4-encoder')).default;
    } finally {
      for (const event of events) {
        for (const listener of process.rawListeners(event)) {
          if (!before.get(event)!.has(listener)) process.removeListener(event, listener as NodeJS.UncaughtExceptionListener);
        }
      }
    }
  })();
  return encoders;
}

export const VIDEO_LIMITS = { minSide: 16, maxSide: 1920, maxSeconds: 20, minFps: 1, maxFps: 60 } as const;

/**
 * A short H.264 (Baseline, yuv420p) MP4 any browser plays: the prompt's scene animated (drifting ridges, a rising
 * sun, floating orbs). Encoded in WebAssembly, laid out for streaming (moov first); same input, same bytes.
 */
export async function generateMp4(input: GenerateVideoInput): Promise<Buffer> {
  const fps = input.fps ?? 24;
  const width = Math.floor(input.width / 2) * 2;
  const height = Math.floor(input.height / 2) * 2;
  const { minSide, maxSide, maxSeconds, minFps, maxFps } = VIDEO_LIMITS;
  if (!(width >= minSide && width <= maxSide && height >= minSide && height <= maxSide)) {
    throw new RangeError(`video size must be ${minSide}-${maxSide} pixels a side (got ${input.width}x${input.height})`);
  }
  if (!(input.durationSeconds > 0 && input.durationSeconds <= maxSeconds)) {
    throw new RangeError(`video duration must be up to ${maxSeconds} s (got ${input.durationSeconds})`);
  }
  if (!Number.isInteger(fps) || fps < minFps || fps > maxFps) throw new RangeError(`fps must be an integer ${minFps}-${maxFps} (got ${fps})`);
  const frames = Math.max(1, Math.round(input.durationSeconds * fps));
  const scene = describeScene(input.prompt, input.seed);

  const encoder = await (await loadEncoders()).createH264MP4Encoder();
  const output = `video-${randomUUID()}.mp4`;
  try {
    encoder.width = width;
    encoder.height = height;
    encoder.frameRate = fps;
    encoder.quantizationParameter = 28;
    encoder.groupOfPictures = fps * 2;
    encoder.speed = 5;
    encoder.outputFilename = output;
    encoder.initialize();
    const frame = new Uint8Array(width * height * 4);
    for (let i = 0; i < frames; i++) {
      renderScene(scene, width, height, i / frames, frame, 4);
      encoder.addFrameRgba(frame);
    }
    encoder.finalize();
    const raw = Buffer.from(encoder.FS.readFile(output));
    return normaliseMp4(raw);
  } finally {
    try {
      encoder.FS.unlink(output);
    } catch {
      // nothing was written
    }
    encoder.delete();
  }
}
