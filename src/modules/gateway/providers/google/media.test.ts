import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { rejection } from '../../../../../test/helpers/rejection.js';
import { solidPng } from '../../../../../test/helpers/fake-media-upstreams.js';
import { GOOGLE_ERRORS, GOOGLE_LISTED_MODELS, startFakeGoogle, type GoogleFake } from './google-media.fake.js';
import { readMp4Info } from '../../../../platform/media/mp4.js';
import { createSafeFetcher } from '../../../../platform/net/safe-fetch.js';
import { UpstreamError, type UpstreamCredential } from '../types.js';
import { fetchMediaOutput } from '../media/download.js';
import { googleClient, googleRoot } from './api.js';
import { createGoogleMediaAdapter } from './media.js';
import { listGoogleModels } from './models.js';
import { veoAspectRatio, veoDuration } from './veo.js';
import type { ImageRequest, MediaAdapter, MediaOutput, VideoRequest } from '../media/media-types.js';

let fake: GoogleFake;
let adapter: MediaAdapter;
let credential: UpstreamCredential;

beforeAll(async () => {
  fake = await startFakeGoogle();
  adapter = createGoogleMediaAdapter();
  // As configured for text: the OpenAI-compatible base URL; the adapter finds the native root under it.
  credential = { accountId: 'acc-google-1', providerSlug: 'google', apiKey: 'AIzaSy-test-key', baseUrl: fake.openAiBaseUrl, timeoutMs: 5000 };
});
afterEach(() => {
  fake.decide(() => ({ kind: 'default' }));
  fake.setVeoScript(['running', 'running', 'succeeded']);
  fake.setGeminiOutcome('image');
  fake.setListedModels(GOOGLE_LISTED_MODELS);
});
afterAll(async () => fake?.close());

const last = () => fake.requests.at(-1)!;
const image = (overrides: Partial<ImageRequest> = {}): ImageRequest => ({
  model: 'gemini-3.1-flash-image',
  prompt: 'A lighthouse at dusk',
  negativePrompt: 'blurry, low quality',
  width: 1920,
  height: 1080,
  count: 2,
  seed: 42,
  strength: null,
  ...overrides,
});
const video = (overrides: Partial<VideoRequest> = {}): VideoRequest => ({
  model: 'veo-3.0-generate-001',
  prompt: 'Waves roll onto a beach at sunrise',
  durationSeconds: 5,
  aspectRatio: '16:9',
  negativePrompt: 'blurry',
  seed: 7,
  extra: {},
  ...overrides,
});
/** Width and height from a PNG's IHDR chunk. */
const pngSize = (bytes: Buffer) => ({ width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) });
const bytesOf = (output: MediaOutput) => (output.kind === 'bytes' ? output.bytes : Buffer.alloc(0));

const upstreamError = (promise: Promise<unknown>) => rejection(promise, UpstreamError);

describe('Google: API root and key check', () => {
  it('derives the native root from the OpenAI-compatible base URL, the versioned one or the bare host', () => {
    expect(googleRoot('https://generativelanguage.googleapis.com/v1beta/openai/')).toBe('https://generativelanguage.googleapis.com');
    expect(googleRoot('https://generativelanguage.googleapis.com/v1beta')).toBe('https://generativelanguage.googleapis.com');
    expect(googleRoot(null)).toBe('https://generativelanguage.googleapis.com');
    expect(googleRoot('http://proxy.local:8080/google')).toBe('http://proxy.local:8080/google');
  });

  it('proves a key with GET /v1beta/models?pageSize=1 and calls a bad one auth, although Google answers it with 400', async () => {
    for (const baseUrl of [fake.openAiBaseUrl, `${fake.origin}/v1beta`, fake.origin]) {
      await expect(adapter.checkCredential({ ...credential, baseUrl })).resolves.toBeUndefined();
      expect(last()).toMatchObject({ method: 'GET', path: '/v1beta/models' });
      expect(last().query.get('pageSize')).toBe('1');
      expect(last().headers['x-goog-api-key']).toBe('AIzaSy-test-key');
    }
    expect(await upstreamError(adapter.checkCredential({ ...credential, apiKey: 'wrong' }))).toMatchObject({
      kind: 'auth',
      status: 400,
      code: 'API_KEY_INVALID',
      message: 'API key not valid. Please pass a valid API key.',
    });
    expect(await upstreamError(adapter.checkCredential({ ...credential, apiKey: null }))).toMatchObject({
      kind: 'auth',
      status: 403,
      code: 'PERMISSION_DENIED',
    });
  });
});

describe('Google: the model list', () => {
  it('reads every page of the native list and names models as calls do, without models/', async () => {
    const client = googleClient('http://unused.invalid');
    const from = fake.requests.length;
    const listed = await listGoogleModels(client, credential);
    expect(listed).toEqual(GOOGLE_LISTED_MODELS);
    expect(listed).toContain('gemini-3.1-flash-image');
    expect(listed.filter((id) => id.startsWith('imagen-'))).toEqual([]);
    const [call] = fake.requests.slice(from);
    expect(call).toMatchObject({ method: 'GET', path: '/v1beta/models' });
    expect(call!.query.get('pageSize')).toBe('1000');
    expect(call!.headers['x-goog-api-key']).toBe('AIzaSy-test-key');

    const many = Array.from({ length: 2345 }, (_, i) => `tuned-model-${i}`);
    fake.setListedModels(many);
    const pages = fake.requests.length;
    expect(await listGoogleModels(client, credential)).toEqual(many);
    expect(fake.requests.slice(pages).map((r) => r.query.get('pageToken'))).toEqual([null, expect.any(String), expect.any(String)]);
    fake.setListedModels([]);
    expect(await listGoogleModels(client, credential)).toEqual([]);
  });

  it('reports a rejected key as auth, as every Google call does', async () => {
    expect(await upstreamError(listGoogleModels(googleClient('http://unused.invalid'), { ...credential, apiKey: 'wrong' }))).toMatchObject({
      kind: 'auth',
      code: 'API_KEY_INVALID',
    });
  });
});

describe('Google: Imagen is gone from the Gemini API', () => {
  it.each(['imagen-4.0-generate-001', 'imagen-4.0-fast-generate-001', 'imagen-4.0-ultra-generate-001'])(
    '%s: Google answers 404 NOT_FOUND, which is model_not_found',
    async (model) => {
      const error = await upstreamError(adapter.generateImage!(credential, image({ model })));
      expect(error).toMatchObject({ kind: 'model_not_found', status: 404, code: 'NOT_FOUND' });
      expect(error.message).toContain(`models/${model} is not found`);
    },
  );
});

describe('Google: Gemini image generation and editing', () => {
  const gemini = (overrides: Partial<ImageRequest> = {}) => image({ model: 'gemini-2.5-flash-image', count: 3, ...overrides });

  it.each(['gemini-3.1-flash-image', 'gemini-3-pro-image'])(
    '%s: asks for the 1K size it is priced at, and takes the image beside the thought signature',
    async (model) => {
      const result = await adapter.generateImage!(credential, gemini({ model, seed: 9 }));
      expect(last()).toMatchObject({ method: 'POST', path: `/v1beta/models/${model}:generateContent` });
      expect(last().body.generationConfig).toEqual({ responseModalities: ['TEXT', 'IMAGE'], imageConfig: { aspectRatio: '16:9', imageSize: '1K' }, seed: 9 });
      expect(result).toMatchObject({ count: 1, maxPerCall: 1 });
      expect(result.images[0]!.mimeType).toBe('image/png');
    },
  );

  it('sends no imageSize to Gemini 2.5 Flash Image, which has one size', async () => {
    await adapter.generateImage!(credential, gemini());
    expect(last().body.generationConfig.imageConfig).toEqual({ aspectRatio: '16:9' });
  });

  it('generates one image per call from text with the aspect ratio and seed in generationConfig', async () => {
    const result = await adapter.generateImage!(credential, gemini());
    expect(last()).toMatchObject({ method: 'POST', path: '/v1beta/models/gemini-2.5-flash-image:generateContent' });
    expect(last().body).toEqual({
      contents: [{ role: 'user', parts: [{ text: 'A lighthouse at dusk' }] }],
      generationConfig: { responseModalities: ['TEXT', 'IMAGE'], imageConfig: { aspectRatio: '16:9' }, seed: 42 },
    });
    expect(result).toMatchObject({ count: 1, maxPerCall: 1, width: 1344, height: 768 });
    expect(pngSize(bytesOf(result.images[0]!))).toEqual({ width: 1344, height: 768 });
    await adapter.generateImage!(credential, gemini({ seed: null, width: 1000, height: 1250 }));
    expect(last().body.generationConfig).toEqual({ responseModalities: ['TEXT', 'IMAGE'], imageConfig: { aspectRatio: '4:5' } });
  });

  it('edits: the source image goes inline after the instruction', async () => {
    const source = solidPng(16, 16, 200);
    await adapter.generateImage!(credential, gemini({ initImage: { bytes: source, mimeType: 'image/png' }, width: 1024, height: 1024 }));
    expect(last().body.contents[0].parts).toEqual([
      { text: 'A lighthouse at dusk' },
      { inline_data: { mime_type: 'image/png', data: source.toString('base64') } },
    ]);
    expect(last().body.generationConfig.imageConfig).toEqual({ aspectRatio: '1:1' });
  });

  it.each([
    ['blocked', 'PROHIBITED_CONTENT', 'Google blocked the prompt (PROHIBITED_CONTENT)'],
    ['image_safety', 'IMAGE_SAFETY', "Google's safety filters stopped the image (IMAGE_SAFETY)"],
    ['text_only', 'STOP', 'The model answered without an image (STOP): "I can\'t make a picture of that'],
  ] as const)('refuses as a bad request when the answer is %s', async (outcome, code, message) => {
    fake.setGeminiOutcome(outcome);
    const error = await upstreamError(adapter.generateImage!(credential, gemini()));
    expect(error).toMatchObject({ kind: 'bad_request', code });
    expect(error.message).toContain(message);
  });
});

describe('Google: Veo', () => {
  it('submits predictLongRunning with the snapped duration and ratio, the negative prompt, extra below its own fields, and no seed', async () => {
    const frame = solidPng(32, 18);
    const submitted = await adapter.submitVideo!(
      credential,
      video({ seedImage: { bytes: frame, mimeType: 'image/png' }, extra: { resolution: '1080p', durationSeconds: 4, personGeneration: 'allow_adult' } }),
    );
    expect(last()).toMatchObject({ method: 'POST', path: '/v1beta/models/veo-3.0-generate-001:predictLongRunning' });
    expect(last().headers['x-goog-api-key']).toBe('AIzaSy-test-key');
    expect(last().body).toEqual({
      instances: [{ prompt: 'Waves roll onto a beach at sunrise', image: { bytesBase64Encoded: frame.toString('base64'), mimeType: 'image/png' } }],
      parameters: { resolution: '1080p', personGeneration: 'allow_adult', durationSeconds: 8, aspectRatio: '16:9', negativePrompt: 'blurry' },
    });
    expect(submitted).toEqual({ externalId: expect.stringMatching(/^models\/veo-3\.0-generate-001\/operations\//), estimatedSeconds: 60, durationSeconds: 8 });
  });

  it('snaps durations per model and ratios to landscape or portrait', async () => {
    expect([veoDuration('veo-3.0-generate-001', 4), veoDuration('veo-3.0-fast-generate-001', 12)]).toEqual([8, 8]);
    expect([3, 5, 6.4, 7, 10].map((s) => veoDuration('veo-2.0-generate-001', s))).toEqual([5, 5, 6, 7, 8]);
    expect([veoDuration('veo-3.1-generate-preview', 5), veoDuration('veo-3.1-generate-preview', 7)]).toEqual([4, 6]);
    expect(['16:9', '9:16', '1:1', '4:3', '3:4'].map(veoAspectRatio)).toEqual(['16:9', '9:16', '16:9', '16:9', '9:16']);
    await adapter.submitVideo!(credential, video({ model: 'veo-2.0-generate-001', durationSeconds: 6, aspectRatio: '3:4', negativePrompt: null }));
    expect(last().body.parameters).toEqual({ aspectRatio: '9:16', durationSeconds: 6 });
  });

  it('refuses an end frame on models without one, before calling', async () => {
    const calls = fake.requests.length;
    const frame = { bytes: solidPng(8, 8), mimeType: 'image/png' };
    expect(await upstreamError(adapter.submitVideo!(credential, video({ seedImage: frame, endImage: frame })))).toMatchObject({
      kind: 'bad_request',
      code: 'end_frame_not_supported',
    });
    expect(fake.requests.length).toBe(calls);
  });

  it('polls the operation by name until done, then hands over the signed link without the key', async () => {
    const { externalId } = await adapter.submitVideo!(credential, video());
    // A fresh adapter (another instance, after a restart) needs nothing but the operation name.
    const other = createGoogleMediaAdapter();
    expect(await other.pollVideo!(credential, externalId)).toEqual({ status: 'RUNNING', progress: null });
    expect(last()).toMatchObject({ method: 'GET', path: `/v1beta/${externalId}` });
    expect(await other.pollVideo!(credential, externalId)).toEqual({ status: 'RUNNING', progress: null });
    const done = await other.pollVideo!(credential, externalId);
    expect(done).toMatchObject({ status: 'SUCCEEDED', progress: 1, durationSeconds: null, video: { kind: 'url', mimeType: 'video/mp4' } });
    if (done.status !== 'SUCCEEDED' || done.video.kind !== 'url') throw new Error('not a URL result');
    // The key went to the API root's download method only; the link itself carries a signature instead.
    expect(last()).toMatchObject({ method: 'GET', path: `/v1beta/files/${externalId.split('/').at(-1)}:download` });
    expect(last().headers['x-goog-api-key']).toBe('AIzaSy-test-key');
    expect(done.video.url).toContain('Signature=SECRET');
    expect(done.video.url).not.toContain('AIza');
    const file = await fetchMediaOutput(createSafeFetcher({ allowPrivateNetwork: true }), done.video, { fallbackMimeType: 'video/mp4' });
    expect(file.mimeType).toBe('video/mp4');
    expect(readMp4Info(file.bytes).width).toBe(64);
    expect(fake.signedDownloads()).toMatchObject({ withKey: 0 });
  });

  it('takes a video sent inline', async () => {
    fake.setVeoScript(['inline']);
    const { externalId } = await adapter.submitVideo!(credential, video());
    const done = await adapter.pollVideo!(credential, externalId);
    if (done.status !== 'SUCCEEDED') throw new Error('not done');
    expect(readMp4Info(bytesOf(done.video)).width).toBe(64);
  });

  it('reports a failed operation with Google’s code and message, and a filtered one with its reason', async () => {
    fake.setVeoScript(['running', 'failed']);
    const failed = await adapter.submitVideo!(credential, video());
    await adapter.pollVideo!(credential, failed.externalId);
    expect(await adapter.pollVideo!(credential, failed.externalId)).toEqual({
      status: 'FAILED',
      progress: null,
      error: { code: 'INTERNAL', message: 'Video generation failed due to an internal error. Please try again.' },
    });
    fake.setVeoScript(['filtered']);
    const filtered = await adapter.submitVideo!(credential, video());
    expect(await adapter.pollVideo!(credential, filtered.externalId)).toMatchObject({
      status: 'FAILED',
      error: { code: 'content_filtered', message: expect.stringContaining('We encountered an issue with the audio for your prompt') },
    });
  });

  it('reports an unknown or expired operation, or a video no longer stored, as FAILED not_found', async () => {
    expect(await adapter.pollVideo!(credential, 'models/veo-3.0-generate-001/operations/gone')).toMatchObject({
      status: 'FAILED',
      error: { code: 'not_found' },
    });
    expect(await adapter.pollVideo!(credential, '../../etc/passwd')).toMatchObject({ status: 'FAILED', error: { code: 'not_found' } });
    fake.setVeoScript(['succeeded']);
    const { externalId } = await adapter.submitVideo!(credential, video());
    fake.decide((r) =>
      r.path.endsWith(':download')
        ? { kind: 'error', status: 404, body: { error: { code: 404, message: 'File not found.', status: 'NOT_FOUND' } } }
        : { kind: 'default' },
    );
    expect(await adapter.pollVideo!(credential, externalId)).toMatchObject({ status: 'FAILED', error: { code: 'not_found' } });
  });

  it('offers no cancel: the Gemini API has none for these operations (a cancelled job is charged)', () => {
    expect('cancelVideo' in adapter).toBe(false);
  });
});

describe('Google: errors', () => {
  it.each([
    [400, GOOGLE_ERRORS.badKey, 'auth', 'API_KEY_INVALID'],
    [403, GOOGLE_ERRORS.modelDenied('veo-3.0-generate-001'), 'model_refused', 'PERMISSION_DENIED'],
    [403, GOOGLE_ERRORS.noKey, 'auth', 'PERMISSION_DENIED'],
    [429, GOOGLE_ERRORS.quota, 'rate_limit', 'RESOURCE_EXHAUSTED'],
    [500, GOOGLE_ERRORS.internal, 'server', 'INTERNAL'],
    [503, GOOGLE_ERRORS.unavailable, 'server', 'UNAVAILABLE'],
    [400, GOOGLE_ERRORS.invalid('Your prompt may violate our usage policies.'), 'bad_request', 'INVALID_ARGUMENT'],
    [401, { error: { code: 401, message: 'Request had invalid authentication credentials.', status: 'UNAUTHENTICATED' } }, 'auth', 'UNAUTHENTICATED'],
  ] as const)('classifies HTTP %i %j as %s', async (status, body, kind, code) => {
    fake.decide(() => ({ kind: 'error', status, body }));
    const error = await upstreamError(adapter.submitVideo!(credential, video()));
    expect(error).toMatchObject({ kind, status, code, message: body.error.message });
  });

  it('classifies a bad key on every call as auth, and an unknown model as model_not_found', async () => {
    const bad = { ...credential, apiKey: 'revoked-key' };
    const calls = [
      () => adapter.generateImage!(bad, image()),
      () => adapter.submitVideo!(bad, video()),
      () => adapter.pollVideo!(bad, 'models/veo-3.0-generate-001/operations/x'),
    ];
    for (const call of calls) expect(await upstreamError(call())).toMatchObject({ kind: 'auth', status: 400 });
    const error = await upstreamError(adapter.generateImage!(credential, image({ model: 'gemini-9.0-flash-image' })));
    expect(error).toMatchObject({ kind: 'model_not_found', status: 404, code: 'NOT_FOUND' });
  });

  it('times out a silent upstream, reports an unreachable one, and stops when the caller cancels', async () => {
    fake.decide(() => ({ kind: 'hang' }));
    expect(await upstreamError(adapter.generateImage!({ ...credential, timeoutMs: 150 }, image()))).toMatchObject({ kind: 'timeout' });
    expect(await upstreamError(adapter.pollVideo!({ ...credential, timeoutMs: 150 }, 'models/veo-3.0-generate-001/operations/x'))).toMatchObject({
      kind: 'timeout',
    });
    expect(await upstreamError(adapter.submitVideo!({ ...credential, baseUrl: 'http://127.0.0.1:1' }, video()))).toMatchObject({ kind: 'network' });
    const controller = new AbortController();
    const pending = adapter.generateImage!(credential, image({ signal: controller.signal }));
    setTimeout(() => controller.abort(), 20);
    expect(await upstreamError(pending)).toMatchObject({ kind: 'aborted' });
  });
});
