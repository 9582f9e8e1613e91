import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../platform/clock/clock.js';
import { readMp4Info } from '../../../../platform/media/mp4.js';
import { sniffFormat } from '../../../../platform/media/sniff.js';
import { readWavInfo } from '../../../../platform/media/wav.js';
import { UpstreamError, type UpstreamCredential } from '../types.js';
import { createLocalMediaProvider, LOCAL_IMAGE_MAX_PER_CALL } from './media.js';
import { mediaCapability, type ImageRequest, type MediaOutput, type VideoRequest } from '../media/media-types.js';

const credential: UpstreamCredential = { accountId: 'local', providerSlug: 'local', apiKey: null, baseUrl: null, timeoutMs: 10_000 };
const image = (overrides: Partial<ImageRequest> = {}): ImageRequest => ({
  model: 'local-image',
  prompt: 'A lighthouse on a cliff at sunset',
  negativePrompt: null,
  width: 96,
  height: 64,
  count: 1,
  seed: 42,
  strength: null,
  ...overrides,
});
const video = (overrides: Partial<VideoRequest> = {}): VideoRequest => ({
  model: 'local-video',
  prompt: 'Waves rolling onto a beach',
  durationSeconds: 2,
  aspectRatio: '16:9',
  negativePrompt: null,
  seed: 7,
  extra: {},
  ...overrides,
});

const bytesOf = (output: MediaOutput) => {
  if (output.kind !== 'bytes') throw new Error('expected bytes');
  return output.bytes;
};
/** Width and height from a PNG's IHDR chunk. */
const pngSize = (png: Buffer) => ({ width: png.readUInt32BE(16), height: png.readUInt32BE(20) });

async function upstreamError(promise: Promise<unknown>): Promise<UpstreamError> {
  const error = await promise.then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(UpstreamError);
  return error as UpstreamError;
}

describe('local images', () => {
  const local = createLocalMediaProvider({ clock: new ManualClock() });

  it('draws real PNGs of the requested size, deterministically from prompt and seed', async () => {
    const a = await local.generateImage!(credential, image());
    const b = await local.generateImage!(credential, image());
    expect(a.count).toBe(1);
    expect(a.images).toHaveLength(1);
    expect(a.images[0]).toMatchObject({ kind: 'bytes', mimeType: 'image/png' });
    const png = bytesOf(a.images[0]!);
    expect(sniffFormat(png)).toBe('png');
    expect(pngSize(png)).toEqual({ width: 96, height: 64 });
    expect(png.equals(bytesOf(b.images[0]!))).toBe(true);
    expect(a).toMatchObject({ width: 96, height: 64 });

    const otherSeed = await local.generateImage!(credential, image({ seed: 43 }));
    const otherPrompt = await local.generateImage!(credential, image({ prompt: 'A forest of tall pines in the fog' }));
    expect(bytesOf(otherSeed.images[0]!).equals(png)).toBe(false);
    expect(bytesOf(otherPrompt.images[0]!).equals(png)).toBe(false);
  });

  it('derives image i of a call from seed + i, so a top-up call continuing the seed gives new images', async () => {
    const four = await local.generateImage!(credential, image({ count: 4 }));
    const topUp = await local.generateImage!(credential, image({ count: 2, seed: 44 }));
    const pngs = four.images.map(bytesOf);
    expect(new Set(pngs.map((p) => p.toString('base64'))).size).toBe(4);
    expect(bytesOf(topUp.images[0]!).equals(pngs[2]!)).toBe(true);
    expect(bytesOf(topUp.images[1]!).equals(pngs[3]!)).toBe(true);
  });

  it('delivers fewer images per call than asked on models with a per-call limit', async () => {
    expect(LOCAL_IMAGE_MAX_PER_CALL['local-image']).toBe(4);
    const eight = await local.generateImage!(credential, image({ count: 8 }));
    expect(eight).toMatchObject({ count: 4, maxPerCall: 4 });
    expect(eight.images).toHaveLength(4);
    const mini = await local.generateImage!(credential, image({ model: 'local-image-mini', count: 3 }));
    expect(mini).toMatchObject({ count: 2, maxPerCall: 2 });
    const unlimited = await local.generateImage!(credential, image({ model: 'local-image-xl', count: 5 }));
    expect(unlimited).toMatchObject({ count: 5, maxPerCall: null });
    const configured = createLocalMediaProvider({ clock: new ManualClock(), maxPerCall: { 'local-image': 1 } });
    expect((await configured.generateImage!(credential, image({ count: 3 }))).count).toBe(1);
  });

  it('without a seed, takes one from the prompt; a source image changes the picture', async () => {
    const a = await local.generateImage!(credential, image({ seed: null }));
    const b = await local.generateImage!(credential, image({ seed: null }));
    expect(bytesOf(a.images[0]!).equals(bytesOf(b.images[0]!))).toBe(true);
    const source = bytesOf(a.images[0]!);
    const edited = await local.generateImage!(credential, image({ seed: null, initImage: { bytes: source, mimeType: 'image/png' }, strength: 0.5 }));
    expect(bytesOf(edited.images[0]!).equals(source)).toBe(false);
    expect(pngSize(bytesOf(edited.images[0]!))).toEqual({ width: 96, height: 64 });
  });

  it.each([
    [{ width: 0 }, 'invalid_size'],
    [{ width: 5000 }, 'invalid_size'],
    [{ height: 10.5 }, 'invalid_size'],
    [{ count: 0 }, 'invalid_count'],
  ])('refuses %j as a bad request', async (overrides, code) => {
    const error = await upstreamError(local.generateImage!(credential, image(overrides)));
    expect(error).toMatchObject({ kind: 'bad_request', code });
  });

  it('stops when the call is cancelled', async () => {
    const controller = new AbortController();
    controller.abort();
    expect((await upstreamError(local.generateImage!(credential, image({ signal: controller.signal })))).kind).toBe('aborted');
  });
});

describe('local video', () => {
  it('is queued, then running, then a playable MP4 once the simulated render time has passed', async () => {
    const clock = new ManualClock();
    const local = createLocalMediaProvider({ clock, videoDelayMs: 5000 });
    const submitted = await local.submitVideo!(credential, video());
    expect(submitted).toMatchObject({ externalId: expect.stringMatching(/^local-video-/), estimatedSeconds: 5, durationSeconds: 2 });

    expect(await local.pollVideo!(credential, submitted.externalId)).toEqual({ status: 'QUEUED', progress: 0 });
    clock.advance(3000);
    expect(await local.pollVideo!(credential, submitted.externalId)).toEqual({ status: 'RUNNING', progress: 0.5 });
    clock.advance(2000);
    const done = await local.pollVideo!(credential, submitted.externalId);
    expect(done).toMatchObject({ status: 'SUCCEEDED', progress: 1, durationSeconds: 2, video: { kind: 'bytes', mimeType: 'video/mp4' } });
    if (done.status !== 'SUCCEEDED') throw new Error('not done');
    const mp4 = bytesOf(done.video);
    expect(sniffFormat(mp4)).toBe('mp4');
    const info = readMp4Info(mp4);
    expect(info.width).toBe(480);
    expect(info.height).toBe(270);
    expect(info.durationSeconds).toBeCloseTo(2, 1);

    // A second poll (or another instance, or after a restart) gives the same clip: the task id carries the request.
    const restarted = createLocalMediaProvider({ clock, videoDelayMs: 5000 });
    const again = await restarted.pollVideo!(credential, submitted.externalId);
    if (again.status !== 'SUCCEEDED') throw new Error('not done');
    expect(bytesOf(again.video).equals(mp4)).toBe(true);
    // Nothing is billed locally: a cancel is always confirmed.
    expect(await local.cancelVideo!(credential, submitted.externalId)).toBe(true);
  }, 60_000);

  it('shapes the clip by aspect ratio and mixes start frames into the result', async () => {
    const clock = new ManualClock();
    const local = createLocalMediaProvider({ clock, videoDelayMs: 0, videoLongSide: 64, videoFps: 4 });
    const portrait = await local.submitVideo!(credential, video({ aspectRatio: '9:16', durationSeconds: 1 }));
    const done = await local.pollVideo!(credential, portrait.externalId);
    if (done.status !== 'SUCCEEDED') throw new Error('not done');
    expect(readMp4Info(bytesOf(done.video))).toMatchObject({ width: 36, height: 64 });
    const withFrame = await local.submitVideo!(
      credential,
      video({ aspectRatio: '9:16', durationSeconds: 1, seedImage: { bytes: Buffer.from('frame'), mimeType: 'image/png' } }),
    );
    expect(withFrame.externalId).not.toBe(portrait.externalId);
  }, 60_000);

  it('reports an unknown or tampered task as FAILED not_found', async () => {
    const local = createLocalMediaProvider({ clock: new ManualClock() });
    const forged = (task: object) => `local-video-${Buffer.from(JSON.stringify(task)).toString('base64url')}`;
    const valid = { v: 1, model: 'local-video', prompt: 'x', seed: 1, durationSeconds: 2, aspectRatio: '16:9', at: 0 };
    const ids = [
      'runway-123',
      'local-video-',
      'local-video-bm90IGpzb24',
      forged({ v: 2 }),
      forged({ ...valid, durationSeconds: 100 }),
      forged({ ...valid, aspectRatio: '5:1' }),
      forged({ ...valid, seed: 1.5 }),
    ];
    for (const id of ids) {
      expect(await local.pollVideo!(credential, id)).toMatchObject({ status: 'FAILED', error: { code: 'not_found' } });
    }
  });

  it.each([
    [{ durationSeconds: 0 }, 'invalid_duration'],
    [{ durationSeconds: 21 }, 'invalid_duration'],
    [{ aspectRatio: '2:1' as never }, 'invalid_aspect_ratio'],
  ])('refuses %j as a bad request', async (overrides, code) => {
    const local = createLocalMediaProvider({ clock: new ManualClock() });
    expect(await upstreamError(local.submitVideo!(credential, video(overrides)))).toMatchObject({ kind: 'bad_request', code });
  });
});

describe('local audio', () => {
  const local = createLocalMediaProvider({ clock: new ManualClock() });

  it('speaks text as WAV, per voice, deterministically', async () => {
    const a = await local.generateSpeech!(credential, { model: 'local-speech', text: 'Hello there, welcome to the show.', voice: 'bright' });
    const b = await local.generateSpeech!(credential, { model: 'local-speech', text: 'Hello there, welcome to the show.', voice: 'bright' });
    const deep = await local.generateSpeech!(credential, { model: 'local-speech', text: 'Hello there, welcome to the show.', voice: 'deep' });
    expect(a.mimeType).toBe('audio/wav');
    expect(a.bytes.equals(b.bytes)).toBe(true);
    expect(a.bytes.equals(deep.bytes)).toBe(false);
    const info = readWavInfo(a.bytes);
    expect(info).toMatchObject({ channels: 1, sampleRate: 24_000, bitsPerSample: 16 });
    expect(a.durationSeconds).toBeCloseTo(info.durationSeconds, 5);
    expect(a.durationSeconds).toBeGreaterThan(1);
    const slow = await local.generateSpeech!(credential, { model: 'local-speech', text: 'Hello there, welcome to the show.', voice: 'bright', speed: 0.5 });
    expect(slow.durationSeconds!).toBeGreaterThan(a.durationSeconds!);
  });

  it('refuses empty text and impossible speeds', async () => {
    expect(await upstreamError(local.generateSpeech!(credential, { model: 'local-speech', text: '  ', voice: null }))).toMatchObject({
      kind: 'bad_request',
      code: 'empty_text',
    });
    expect(await upstreamError(local.generateSpeech!(credential, { model: 'local-speech', text: 'hi', voice: null, speed: 3 }))).toMatchObject({
      kind: 'bad_request',
      code: 'invalid_speed',
    });
  });

  it('makes music from a description as WAV; the model decides the length', async () => {
    const track = await local.generateMusic!(credential, { model: 'local-music', description: 'calm ambient piano', seed: 5 });
    expect(track.mimeType).toBe('audio/wav');
    expect(readWavInfo(track.bytes).sampleRate).toBe(44_100);
    expect(track.durationSeconds!).toBeGreaterThanOrEqual(5);
    const same = await local.generateMusic!(credential, { model: 'local-music', description: 'calm ambient piano', seed: 5 });
    expect(same.bytes.equals(track.bytes)).toBe(true);
    expect(await upstreamError(local.generateMusic!(credential, { model: 'local-music', description: '' }))).toMatchObject({ code: 'empty_description' });
  });

  it('offers every capability and needs no credential', async () => {
    for (const capability of ['generateImage', 'submitVideo', 'generateSpeech', 'generateMusic'] as const)
      expect(mediaCapability(local, capability)).toBeTypeOf('function');
    expect(local.needsCredential).toBe(false);
    await expect(local.checkCredential(credential)).resolves.toBeUndefined();
  });
});
