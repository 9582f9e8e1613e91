import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { rejection } from '../../../../../test/helpers/rejection.js';
import { solidPng } from '../../../../../test/helpers/fake-media-upstreams.js';
import { RECRAFT_REFUSAL, startFakeRecraft, svgOf, type RecraftFake } from './recraft.fake.js';
import { createSafeFetcher } from '../../../../platform/net/safe-fetch.js';
import { UpstreamError, type UpstreamCredential } from '../types.js';
import { fetchMediaOutput } from '../media/download.js';
import type { ImageRequest, MediaAdapter } from '../media/media-types.js';
import { createRecraftAdapter, recraftModel } from './media.js';

let fake: RecraftFake;
let adapter: MediaAdapter;
let credential: UpstreamCredential;

beforeAll(async () => {
  fake = await startFakeRecraft();
  adapter = createRecraftAdapter();
  credential = { accountId: 'acc-recraft-1', providerSlug: 'recraft', apiKey: 'rc-valid', baseUrl: fake.baseUrl, timeoutMs: 5000 };
});
afterEach(() => fake.decide(() => ({ kind: 'default' })));
afterAll(async () => fake?.close());

const fetcher = createSafeFetcher({ allowPrivateNetwork: true });
const source = { bytes: solidPng(48, 48), mimeType: 'image/png' };
const request = (overrides: Partial<ImageRequest> = {}): ImageRequest => ({
  model: 'recraftv3',
  prompt: 'a fox in a snowy forest',
  negativePrompt: 'blurry',
  width: 1920,
  height: 1080,
  count: 2,
  seed: 5,
  strength: null,
  ...overrides,
});
const last = () => fake.requests.at(-1)!;

const upstreamError = (promise: Promise<unknown>) => rejection(promise, UpstreamError);

describe('Recraft: raster', () => {
  it('posts JSON generations with the bearer token, a size from the V3 menu, n, seed, negative prompt and a raster style', async () => {
    const result = await adapter.generateImage!(credential, request());
    expect(result).toMatchObject({ count: 2, maxPerCall: 6, width: 1820, height: 1024 });
    const call = last();
    expect(call).toMatchObject({ method: 'POST', path: '/v1/images/generations' });
    expect(call.headers.authorization).toBe('Bearer rc-valid');
    expect(call.headers['content-type']).toBe('application/json');
    expect(call.body).toEqual({
      prompt: 'a fox in a snowy forest',
      model: 'recraftv3',
      style: 'realistic_image',
      negative_prompt: 'blurry',
      n: 2,
      random_seed: 5,
      response_format: 'url',
      size: '1820x1024',
    });
    for (const image of result.images) expect(image).toMatchObject({ kind: 'url', mimeType: null });
    const file = await fetchMediaOutput(fetcher, result.images[0]!, { fallbackMimeType: 'image/png' });
    expect(file.mimeType).toBe('image/png');
  });

  it('caps n at 6 and snaps odd sizes to the menu', async () => {
    const result = await adapter.generateImage!(credential, request({ count: 9, width: 700, height: 1000, seed: null, negativePrompt: null }));
    expect([result.width, result.height, result.count]).toEqual([1024, 1434, 6]);
    expect(last().body).toEqual({ prompt: expect.any(String), model: 'recraftv3', style: 'realistic_image', n: 6, response_format: 'url', size: '1024x1434' });
  });

  it('makes image-to-image as multipart with the file and strength (no size)', async () => {
    await adapter.generateImage!(credential, request({ initImage: source, strength: 0.3, count: 1 }));
    const call = last();
    expect(call.path).toBe('/v1/images/imageToImage');
    expect(call.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(call.body).toMatchObject({
      prompt: 'a fox in a snowy forest',
      model: 'recraftv3',
      style: 'realistic_image',
      strength: '0.3',
      n: '1',
      random_seed: '5',
      response_format: 'url',
    });
    expect(call.body.size).toBeUndefined();
    expect(Buffer.compare(call.body.image.bytes, source.bytes)).toBe(0);
    await adapter.generateImage!(credential, request({ initImage: source }));
    expect(last().body.strength).toBe('0.5');
  });

  it('reads b64_json answers as bytes', async () => {
    fake.decide((r) =>
      r.method === 'POST'
        ? { kind: 'error', status: 200, body: { created: 1, credits: 40, data: [{ image_id: 'a', b64_json: solidPng(8, 8).toString('base64') }] } }
        : { kind: 'default' },
    );
    const result = await adapter.generateImage!(credential, request());
    expect(result.images[0]).toMatchObject({ kind: 'bytes', mimeType: 'image/png' });
  });
});

describe('Recraft: vector', () => {
  it('sends recraftv3-vector as recraftv3 with the vector style, and its SVG files come back as image/svg+xml', async () => {
    expect(recraftModel('recraftv3-vector')).toEqual({ model: 'recraftv3', style: 'vector_illustration', vector: true, negativePrompt: true });
    const result = await adapter.generateImage!(credential, request({ model: 'recraftv3-vector', count: 1 }));
    expect(last().body).toMatchObject({ model: 'recraftv3', style: 'vector_illustration', size: '1820x1024' });
    expect(result.images[0]).toMatchObject({ kind: 'url', mimeType: 'image/svg+xml', url: expect.stringMatching(/\.svg$/) });
    const file = await fetchMediaOutput(fetcher, result.images[0]!, { fallbackMimeType: 'image/png' });
    expect(file.mimeType).toBe('image/svg+xml');
    expect(file.bytes.toString('utf8')).toMatch(/^<svg /);
  });

  it('labels inline SVG as image/svg+xml, and sends Recraft’s own vector models as they are', async () => {
    fake.decide((r) =>
      r.method === 'POST'
        ? { kind: 'error', status: 200, body: { created: 1, credits: 80, data: [{ image_id: 'v', b64_json: svgOf(10, 10, '#000').toString('base64') }] } }
        : { kind: 'default' },
    );
    expect((await adapter.generateImage!(credential, request({ model: 'recraftv3-vector' }))).images[0]).toMatchObject({
      kind: 'bytes',
      mimeType: 'image/svg+xml',
    });
    fake.decide(() => ({ kind: 'default' }));
    expect(recraftModel('recraftv3_vector')).toEqual({ model: 'recraftv3_vector', style: null, vector: true, negativePrompt: false });
    const result = await adapter.generateImage!(credential, request({ model: 'recraftv3_vector', count: 1 }));
    expect(last().body).toEqual({ prompt: expect.any(String), model: 'recraftv3_vector', n: 1, random_seed: 5, response_format: 'url', size: '1820x1024' });
    expect(result.images[0]).toMatchObject({ mimeType: 'image/svg+xml' });
  });
});

describe('Recraft: errors', () => {
  it('turns a refused prompt into a bad request with Recraft’s message', async () => {
    const error = await upstreamError(adapter.generateImage!(credential, request({ prompt: 'something forbidden' })));
    expect(error).toMatchObject({ kind: 'bad_request', status: 400, code: RECRAFT_REFUSAL.code, message: RECRAFT_REFUSAL.message });
    expect(error.accountFailure).toBe(false);
  });

  it('gets auth from the plain-text 401 of a wrong token, and proves a good one through /v1/users/me', async () => {
    expect(await upstreamError(adapter.generateImage!({ ...credential, apiKey: 'wrong' }, request()))).toMatchObject({
      kind: 'auth',
      status: 401,
      message: 'request unauthorized',
    });
    await expect(adapter.checkCredential(credential)).resolves.toBeUndefined();
    expect(last()).toMatchObject({ method: 'GET', path: '/v1/users/me' });
    expect(await upstreamError(adapter.checkCredential({ ...credential, apiKey: 'wrong' }))).toMatchObject({ kind: 'auth' });
  });

  it.each([
    [403, { code: 'forbidden', message: 'The model recraftv3 is not available for your plan.' }, 'model_refused'],
    [402, { code: 'not_enough_credits', message: 'Not enough API units.' }, 'rate_limit'],
    [429, { code: 'too_many_requests', message: 'Rate limit exceeded.' }, 'rate_limit'],
    [500, { code: 'internal', message: 'Internal error.' }, 'server'],
  ] as const)('classifies HTTP %i as %s with Recraft’s message', async (status, body, kind) => {
    fake.decide(() => ({ kind: 'error', status, body }));
    expect(await upstreamError(adapter.generateImage!(credential, request()))).toMatchObject({ kind, status, code: body.code, message: body.message });
  });

  it('reports a base URL without the API as a server problem, and times out a silent upstream', async () => {
    expect(await upstreamError(adapter.generateImage!({ ...credential, baseUrl: `${fake.baseUrl}/nope` }, request()))).toMatchObject({
      kind: 'server',
      status: 404,
      message: '404 page not found',
    });
    fake.decide(() => ({ kind: 'hang' }));
    expect(await upstreamError(adapter.generateImage!({ ...credential, timeoutMs: 150 }, request()))).toMatchObject({ kind: 'timeout' });
  });

  it('treats an answer without images as a provider problem', async () => {
    fake.decide((r) => (r.method === 'POST' ? { kind: 'error', status: 200, body: { created: 1, credits: 0, data: [] } } : { kind: 'default' }));
    expect(await upstreamError(adapter.generateImage!(credential, request()))).toMatchObject({ kind: 'server', code: 'empty_response' });
  });
});
