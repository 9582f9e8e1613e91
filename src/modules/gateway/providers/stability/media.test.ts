import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { rejection } from '../../../../../test/helpers/rejection.js';
import { solidPng } from '../../../../../test/helpers/fake-media-upstreams.js';
import { STABILITY_MODERATION_MESSAGE, startFakeStability, type StabilityFake } from './stability.fake.js';
import { pngSize } from '../../media/image.js';
import { UpstreamError, type UpstreamCredential } from '../types.js';
import type { ImageRequest, MediaAdapter } from '../media/media-types.js';
import { createStabilityAdapter, stabilityImageService } from './media.js';

let fake: StabilityFake;
let adapter: MediaAdapter;
let credential: UpstreamCredential;

beforeAll(async () => {
  fake = await startFakeStability();
  adapter = createStabilityAdapter();
  credential = { accountId: 'acc-stability-1', providerSlug: 'stability', apiKey: 'sk-stab-valid', baseUrl: fake.baseUrl, timeoutMs: 5000 };
});
afterEach(() => fake.decide(() => ({ kind: 'default' })));
afterAll(async () => fake?.close());

const source = { bytes: solidPng(64, 48), mimeType: 'image/png' };
const request = (overrides: Partial<ImageRequest> = {}): ImageRequest => ({
  model: 'ultra',
  prompt: 'a lighthouse on a cliff at dawn',
  negativePrompt: 'blurry',
  width: 1920,
  height: 1080,
  count: 3,
  seed: 77,
  strength: null,
  ...overrides,
});
const last = () => fake.requests.at(-1)!;

const upstreamError = (promise: Promise<unknown>) => rejection(promise, UpstreamError);

describe('Stability: images', () => {
  it('posts multipart to the ultra endpoint with the snapped aspect ratio, seed, negative prompt and key, and returns one PNG', async () => {
    const result = await adapter.generateImage!(credential, request());
    expect(result).toMatchObject({ count: 1, maxPerCall: 1, width: 1344, height: 768 });
    const call = last();
    expect(call).toMatchObject({ method: 'POST', path: '/v2beta/stable-image/generate/ultra' });
    expect(call.headers.authorization).toBe('Bearer sk-stab-valid');
    expect(call.headers.accept).toBe('image/*');
    expect(call.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(call.body).toEqual({ prompt: 'a lighthouse on a cliff at dawn', negative_prompt: 'blurry', aspect_ratio: '16:9', seed: '77', output_format: 'png' });
    const [image] = result.images;
    if (image?.kind !== 'bytes') throw new Error('expected bytes');
    expect(image.mimeType).toBe('image/png');
    expect(pngSize(image.bytes)).toEqual({ width: 1344, height: 768 });
  });

  it('sends the SD 3.5 models to the sd3 endpoint with their model name, and leaves the negative prompt out for turbo', async () => {
    await adapter.generateImage!(credential, request({ model: 'sd3.5-large', width: 800, height: 1200 }));
    expect(last()).toMatchObject({
      path: '/v2beta/stable-image/generate/sd3',
      body: { model: 'sd3.5-large', mode: 'text-to-image', aspect_ratio: '2:3', negative_prompt: 'blurry' },
    });
    await adapter.generateImage!(credential, request({ model: 'sd3.5-large-turbo', width: 1024, height: 1024, seed: null }));
    expect(last().body).toEqual({
      prompt: 'a lighthouse on a cliff at dawn',
      model: 'sd3.5-large-turbo',
      mode: 'text-to-image',
      aspect_ratio: '1:1',
      output_format: 'png',
    });
    await adapter.generateImage!(credential, request({ model: 'core', width: 640, height: 1536 }));
    expect(last()).toMatchObject({ path: '/v2beta/stable-image/generate/core', body: { aspect_ratio: '9:21' } });
  });

  it('knows where each model is served and refuses names it does not serve', () => {
    expect(stabilityImageService('sd3.5-medium')).toMatchObject({ sd3Model: 'sd3.5-medium', negativePrompt: true });
    expect(() => stabilityImageService('sdxl-1.0')).toThrow(/no image model "sdxl-1.0"/);
  });

  it('wraps a seed beyond the provider’s range instead of sending it', async () => {
    await adapter.generateImage!(credential, request({ seed: 4_294_967_295 + 5 }));
    expect(last().body.seed).toBe('5');
  });

  it('makes image-to-image with the source as a file part, mode and strength (no aspect ratio)', async () => {
    await adapter.generateImage!(credential, request({ model: 'sd3.5-large', initImage: source, strength: 0.35 }));
    const body = last().body;
    expect(body).toMatchObject({ model: 'sd3.5-large', mode: 'image-to-image', strength: '0.35' });
    expect(body.aspect_ratio).toBeUndefined();
    expect(body.image).toMatchObject({ type: 'image/png', filename: 'image.png' });
    expect(Buffer.compare(body.image.bytes, source.bytes)).toBe(0);
    await adapter.generateImage!(credential, request({ initImage: source }));
    expect(last()).toMatchObject({ path: '/v2beta/stable-image/generate/ultra', body: { strength: '0.6' } });
  });

  it('refuses a source image for core before calling', async () => {
    const calls = fake.requests.length;
    expect(await upstreamError(adapter.generateImage!(credential, request({ model: 'core', initImage: source })))).toMatchObject({
      kind: 'bad_request',
      code: 'image_to_image_not_supported',
    });
    expect(fake.requests.length).toBe(calls);
  });

  it('reads a JSON answer (base64 image, finish_reason) as well as raw bytes', async () => {
    fake.decide((r) =>
      r.method === 'POST'
        ? { kind: 'error', status: 200, body: { image: solidPng(32, 32).toString('base64'), finish_reason: 'SUCCESS', seed: 9 } }
        : { kind: 'default' },
    );
    const result = await adapter.generateImage!(credential, request());
    expect(result.images[0]).toMatchObject({ kind: 'bytes', mimeType: 'image/png' });
  });
});

describe('Stability: refusals and errors', () => {
  it('turns a 403 content_moderation into a bad request with Stability’s message (not the key, not the model)', async () => {
    const error = await upstreamError(adapter.generateImage!(credential, request({ prompt: 'something forbidden' })));
    expect(error).toMatchObject({ kind: 'bad_request', status: 403, code: 'content_moderation', message: STABILITY_MODERATION_MESSAGE });
    expect(error.accountFailure).toBe(false);
  });

  it('turns a CONTENT_FILTERED result, in the header or in JSON, into a bad request', async () => {
    expect(await upstreamError(adapter.generateImage!(credential, request({ prompt: 'a blurred scene' })))).toMatchObject({
      kind: 'bad_request',
      code: 'content_filtered',
    });
    fake.decide((r) =>
      r.method === 'POST'
        ? { kind: 'error', status: 200, body: { image: solidPng(8, 8).toString('base64'), finish_reason: 'CONTENT_FILTERED', seed: 1 } }
        : { kind: 'default' },
    );
    expect(await upstreamError(adapter.generateImage!(credential, request()))).toMatchObject({ kind: 'bad_request', code: 'content_filtered' });
  });

  it('gets auth for a wrong key from the real check, and proves a good key through /v1/user/account', async () => {
    const error = await upstreamError(adapter.generateImage!({ ...credential, apiKey: 'sk-wrong' }, request()));
    expect(error).toMatchObject({ kind: 'auth', status: 401, code: 'unauthorized', message: 'authorization: invalid or missing API key' });
    await expect(adapter.checkCredential(credential)).resolves.toBeUndefined();
    expect(last()).toMatchObject({ method: 'GET', path: '/v1/user/account' });
    expect(await upstreamError(adapter.checkCredential({ ...credential, apiKey: 'sk-wrong' }))).toMatchObject({ kind: 'auth' });
  });

  it.each([
    [403, 'permission_denied', 'Your organization may not use the model sd3.5-large.', 'model_refused'],
    [403, 'forbidden', 'This API key has been disabled.', 'auth'],
    [402, 'payment_required', 'You lack sufficient credits to make this request.', 'rate_limit'],
    [429, 'rate_limit_exceeded', 'You have made more than 150 requests in 10 seconds.', 'rate_limit'],
    [500, 'internal_error', 'An unexpected server error occurred.', 'server'],
    [413, 'payload_too_large', 'Your request was larger than 10MiB.', 'bad_request'],
    [422, 'invalid_prompt', 'prompt: English only.', 'bad_request'],
  ] as const)('classifies HTTP %i (%s) as %s', async (status, name, message, kind) => {
    fake.decide(() => ({ kind: 'error', status, body: { id: 'e1', name, errors: [message] } }));
    expect(await upstreamError(adapter.generateImage!(credential, request({ model: 'sd3.5-large' })))).toMatchObject({ kind, status, code: name, message });
  });

  it('times out a silent upstream and reports an unreachable one', async () => {
    fake.decide(() => ({ kind: 'hang' }));
    expect(await upstreamError(adapter.generateImage!({ ...credential, timeoutMs: 150 }, request()))).toMatchObject({ kind: 'timeout' });
    expect(await upstreamError(adapter.generateImage!({ ...credential, baseUrl: 'http://127.0.0.1:1' }, request()))).toMatchObject({ kind: 'network' });
  });
});

describe('Stability: Stable Audio', () => {
  it('posts the description as prompt with model, seed and extra fields, and returns MP3 bytes', async () => {
    const result = await adapter.generateMusic!(credential, {
      model: 'stable-audio-2.5',
      description: 'warm lo-fi beat, 80 BPM',
      seed: 12,
      extra: { duration: 30, steps: 8, model: 'stable-audio-2' },
    });
    expect(result).toMatchObject({ mimeType: 'audio/mpeg', durationSeconds: null });
    expect(result.bytes.subarray(0, 3).toString('latin1')).toBe('ID3');
    const call = last();
    expect(call).toMatchObject({ method: 'POST', path: '/v2beta/audio/stable-audio-2/text-to-audio' });
    expect(call.headers.accept).toBe('audio/*');
    // `extra` adds options; it never replaces the adapter's own fields.
    expect(call.body).toEqual({ duration: '30', steps: '8', model: 'stable-audio-2.5', prompt: 'warm lo-fi beat, 80 BPM', seed: '12', output_format: 'mp3' });
  });

  it('returns WAV with its length when extra asks for wav, and reads a JSON answer', async () => {
    const wav = await adapter.generateMusic!(credential, { model: 'stable-audio-2.5', description: 'rain', extra: { output_format: 'wav' } });
    expect(wav.mimeType).toBe('audio/wav');
    expect(wav.durationSeconds).toBeGreaterThan(0);
    fake.decide((r) =>
      r.method === 'POST'
        ? {
            kind: 'error',
            status: 200,
            body: { audio: Buffer.from('ID3\u0004\u0000\u0000\u0000\u0000\u0000\u0000').toString('base64'), finish_reason: 'SUCCESS', seed: 3 },
          }
        : { kind: 'default' },
    );
    expect(await adapter.generateMusic!(credential, { model: 'stable-audio-2.5', description: 'rain' })).toMatchObject({ mimeType: 'audio/mpeg' });
  });

  it('refuses a moderated description as a bad request and rejects a wrong key', async () => {
    expect(await upstreamError(adapter.generateMusic!(credential, { model: 'stable-audio-2.5', description: 'forbidden lyrics' }))).toMatchObject({
      kind: 'bad_request',
      code: 'content_moderation',
    });
    expect(await upstreamError(adapter.generateMusic!({ ...credential, apiKey: 'nope' }, { model: 'stable-audio-2.5', description: 'x' }))).toMatchObject({
      kind: 'auth',
    });
    expect(await upstreamError(adapter.generateMusic!(credential, { model: 'stable-audio-2.5', description: 'x', extra: { duration: 500 } }))).toMatchObject({
      kind: 'bad_request',
      message: 'duration: must be between 1 and 190',
    });
  });
});
