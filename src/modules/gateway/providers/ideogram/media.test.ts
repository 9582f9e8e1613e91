import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { rejection } from '../../../../../test/helpers/rejection.js';
import { solidPng } from '../../../../../test/helpers/fake-media-upstreams.js';
import { IDEOGRAM_SAFETY_MESSAGE, startFakeIdeogram, type IdeogramFake } from './ideogram.fake.js';
import { createSafeFetcher } from '../../../../platform/net/safe-fetch.js';
import { UpstreamError, type UpstreamCredential } from '../types.js';
import { fetchMediaOutput } from '../media/download.js';
import { createIdeogramAdapter, ideogramRenderingSpeed, imageWeightOf } from './media.js';
import type { ImageRequest, MediaAdapter } from '../media/media-types.js';

let fake: IdeogramFake;
let adapter: MediaAdapter;
let credential: UpstreamCredential;

beforeAll(async () => {
  fake = await startFakeIdeogram();
  adapter = createIdeogramAdapter();
  credential = { accountId: 'acc-ideogram-1', providerSlug: 'ideogram', apiKey: 'ideo-valid', baseUrl: fake.baseUrl, timeoutMs: 5000 };
});
afterEach(() => fake.decide(() => ({ kind: 'default' })));
afterAll(async () => fake?.close());

const source = { bytes: solidPng(40, 30), mimeType: 'image/png' };
const request = (overrides: Partial<ImageRequest> = {}): ImageRequest => ({
  model: 'V_3_TURBO',
  prompt: 'a poster that says HELLO in bold letters',
  negativePrompt: 'blurry',
  width: 1920,
  height: 1080,
  count: 3,
  seed: 11,
  strength: null,
  ...overrides,
});
const last = () => fake.requests.at(-1)!;

const upstreamError = (promise: Promise<unknown>) => rejection(promise, UpstreamError);

describe('Ideogram: generate', () => {
  it('posts multipart with the Api-Key header, rendering speed from the model, count, seed, negative prompt and the snapped ratio', async () => {
    const result = await adapter.generateImage!(credential, request());
    expect(result).toMatchObject({ count: 3, maxPerCall: 8, width: 1312, height: 736 });
    const call = last();
    expect(call).toMatchObject({ method: 'POST', path: '/v1/ideogram-v3/generate' });
    expect(call.headers['api-key']).toBe('ideo-valid');
    expect(call.headers.authorization).toBeUndefined();
    expect(call.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(call.body).toEqual({
      prompt: 'a poster that says HELLO in bold letters',
      negative_prompt: 'blurry',
      seed: '11',
      rendering_speed: 'TURBO',
      num_images: '3',
      aspect_ratio: '16x9',
    });
    // Expiring signed links: the gateway downloads them at once.
    expect(result.images).toHaveLength(3);
    for (const image of result.images)
      expect(image).toMatchObject({ kind: 'url', url: expect.stringMatching(/\/api\/images\/ephemeral\/[\w-]+\.png\?exp=\d+&sig=/) });
    const file = await fetchMediaOutput(createSafeFetcher({ allowPrivateNetwork: true }), result.images[0]!, { fallbackMimeType: 'image/png' });
    expect(file.mimeType).toBe('image/png');
    expect(fake.downloads()).toBe(1);
  });

  it('maps each catalog model to its rendering speed, caps num_images at 8 and keeps seeds within range', async () => {
    expect([ideogramRenderingSpeed('V_3_TURBO'), ideogramRenderingSpeed('V_3'), ideogramRenderingSpeed('V_3_QUALITY')]).toEqual([
      'TURBO',
      'DEFAULT',
      'QUALITY',
    ]);
    expect(() => ideogramRenderingSpeed('V_2')).toThrow(/no model "V_2"/);
    await adapter.generateImage!(
      credential,
      request({ model: 'V_3_QUALITY', count: 12, seed: 2_147_483_648 + 9, negativePrompt: null, width: 1000, height: 3000 }),
    );
    expect(last().body).toEqual({ prompt: expect.any(String), seed: '9', rendering_speed: 'QUALITY', num_images: '8', aspect_ratio: '1x3' });
  });

  it('remixes a source image with image_weight from strength (0 keeps the source)', async () => {
    await adapter.generateImage!(credential, request({ initImage: source, strength: 0.25, count: 1 }));
    const call = last();
    expect(call).toMatchObject({ path: '/v1/ideogram-v3/remix', body: { image_weight: '75', rendering_speed: 'TURBO', aspect_ratio: '16x9' } });
    expect(call.body.image).toMatchObject({ type: 'image/png', filename: 'image.png' });
    expect(Buffer.compare(call.body.image.bytes, source.bytes)).toBe(0);
    await adapter.generateImage!(credential, request({ initImage: source, strength: null, count: 1 }));
    expect(last().body.image_weight).toBeUndefined();
    expect([imageWeightOf(0), imageWeightOf(1), imageWeightOf(0.6)]).toEqual([100, 1, 40]);
  });

  it('leaves out images that failed the safety check, and refuses when none is left', async () => {
    const result = await adapter.generateImage!(credential, request({ prompt: 'an unsafe idea', count: 3 }));
    expect(result.count).toBe(2);
    const error = await upstreamError(adapter.generateImage!(credential, request({ prompt: 'all unsafe', count: 2 })));
    expect(error).toMatchObject({ kind: 'bad_request', code: 'image_unsafe' });
    expect(error.accountFailure).toBe(false);
  });

  it('treats an answer without images as a provider problem', async () => {
    fake.decide((r) => (r.method === 'POST' ? { kind: 'error', status: 200, body: { created: '2025-01-01T00:00:00Z', data: [] } } : { kind: 'default' }));
    expect(await upstreamError(adapter.generateImage!(credential, request()))).toMatchObject({ kind: 'server', code: 'empty_response' });
  });
});

describe('Ideogram: errors', () => {
  it('turns a prompt that fails the safety check (422) into a bad request with Ideogram’s message', async () => {
    const error = await upstreamError(adapter.generateImage!(credential, request({ prompt: 'something forbidden' })));
    expect(error).toMatchObject({ kind: 'bad_request', status: 422, code: 'safety_check_failed', message: IDEOGRAM_SAFETY_MESSAGE });
  });

  it('gets auth for a wrong key, and proves a good key by listing its custom models', async () => {
    expect(await upstreamError(adapter.generateImage!({ ...credential, apiKey: 'wrong' }, request()))).toMatchObject({
      kind: 'auth',
      status: 401,
      message: 'Not authorized to generate an image.',
    });
    await expect(adapter.checkCredential(credential)).resolves.toBeUndefined();
    expect(last()).toMatchObject({ method: 'GET', path: '/models' });
    expect(await upstreamError(adapter.checkCredential({ ...credential, apiKey: 'wrong' }))).toMatchObject({ kind: 'auth' });
  });

  it.each([
    [403, { detail: 'Your account is not allowed to use the model V_3_QUALITY.' }, 'model_refused'],
    [400, { detail: "'prompt' is too long", status: 400, title: 'Bad Request', type: 'about:blank' }, 'bad_request'],
    [429, { detail: 'Too many requests.' }, 'rate_limit'],
    [503, { detail: 'Service unavailable.' }, 'server'],
  ] as const)('classifies HTTP %i as %s with Ideogram’s message', async (status, body, kind) => {
    fake.decide(() => ({ kind: 'error', status, body }));
    expect(await upstreamError(adapter.generateImage!(credential, request({ model: 'V_3_QUALITY' })))).toMatchObject({ kind, status, message: body.detail });
  });

  it('reads a plain-text error body', async () => {
    fake.decide(() => ({ kind: 'raw', status: 500, contentType: 'text/plain', body: Buffer.from('upstream exploded') }));
    expect(await upstreamError(adapter.generateImage!(credential, request()))).toMatchObject({ kind: 'server', message: 'upstream exploded' });
  });

  it('times out a silent upstream and stops when the caller cancels', async () => {
    fake.decide(() => ({ kind: 'hang' }));
    expect(await upstreamError(adapter.generateImage!({ ...credential, timeoutMs: 150 }, request()))).toMatchObject({ kind: 'timeout' });
    const controller = new AbortController();
    const pending = adapter.generateImage!(credential, request({ signal: controller.signal }));
    setTimeout(() => controller.abort(), 20);
    expect(await upstreamError(pending)).toMatchObject({ kind: 'aborted' });
  });
});
