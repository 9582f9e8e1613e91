import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  GPT_IMAGE_OUTPUT_TOKENS,
  OPENAI_MEDIA_ERRORS,
  solidPng,
  startFakeOpenAiMedia,
  type MediaFake,
} from '../../../../../test/helpers/fake-media-upstreams.js';
import { createSafeFetcher } from '../../../../platform/net/safe-fetch.js';
import { readWavInfo } from '../../../../platform/media/wav.js';
import { UpstreamError, type UpstreamCredential } from '../types.js';
import { fetchMediaOutput } from '../media/download.js';
import type { ImageRequest, MediaAdapter } from '../media/media-types.js';
import { createOpenAiMediaAdapter, openAiMaxPerCall } from './media.js';

let fake: MediaFake & { downloads: () => number };
let urlFake: MediaFake & { downloads: () => number };
let adapter: MediaAdapter;
let credential: UpstreamCredential;
const fetcher = createSafeFetcher({ allowPrivateNetwork: true });

beforeAll(async () => {
  fake = await startFakeOpenAiMedia();
  urlFake = await startFakeOpenAiMedia({ alwaysUrl: true });
  adapter = createOpenAiMediaAdapter({ defaultBaseUrl: 'http://unused.invalid/v1' });
  credential = { accountId: 'acc-openai-1', providerSlug: 'openai', apiKey: 'sk-test-1', baseUrl: fake.baseUrl, timeoutMs: 5000 };
});
afterEach(() => fake.decide(() => ({ kind: 'default' })));
afterAll(async () => {
  await fake?.close();
  await urlFake?.close();
});

const image = (overrides: Partial<ImageRequest> = {}): ImageRequest => ({
  model: 'gpt-image-1',
  prompt: 'A watercolour fox',
  negativePrompt: 'blurry, low quality',
  width: 1920,
  height: 1080,
  count: 2,
  seed: 12,
  strength: null,
  ...overrides,
});
const lastCall = () => fake.requests.at(-1)!;
const pngSize = (png: Buffer) => ({ width: png.readUInt32BE(16), height: png.readUInt32BE(20) });

async function upstreamError(promise: Promise<unknown>): Promise<UpstreamError> {
  const error = await promise.then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(UpstreamError);
  return error as UpstreamError;
}

describe('OpenAI Images: generations', () => {
  it('asks GPT Image for n images at the snapped size and decodes b64_json', async () => {
    fake.decide(() => ({ kind: 'default' }));
    const result = await adapter.generateImage!(credential, image());
    expect(lastCall()).toMatchObject({ method: 'POST', path: '/v1/images/generations' });
    expect(lastCall().headers.authorization).toBe('Bearer sk-test-1');
    expect(lastCall().body).toEqual({ model: 'gpt-image-1', prompt: 'A watercolour fox', n: 2, size: '1536x1024' });
    expect(result).toMatchObject({ count: 2, maxPerCall: 10, width: 1536, height: 1024 });
    for (const output of result.images) {
      expect(output).toMatchObject({ kind: 'bytes', mimeType: 'image/png' });
      if (output.kind === 'bytes') expect(pngSize(output.bytes)).toEqual({ width: 1536, height: 1024 });
    }
  });

  it('asks DALL·E 3 for one image per call (the gateway tops up) as b64_json', async () => {
    expect(openAiMaxPerCall('dall-e-3')).toBe(1);
    const result = await adapter.generateImage!(credential, image({ model: 'dall-e-3', count: 3, width: 1080, height: 1920 }));
    expect(lastCall().body).toEqual({ model: 'dall-e-3', prompt: 'A watercolour fox', n: 1, size: '1024x1792', response_format: 'b64_json' });
    expect(result).toMatchObject({ count: 1, maxPerCall: 1, width: 1024, height: 1792 });
  });

  it('passes URL answers on for download, and the download yields the image', async () => {
    const result = await adapter.generateImage!({ ...credential, baseUrl: urlFake.baseUrl }, image({ model: 'dall-e-2', width: 500, height: 500, count: 2 }));
    expect(urlFake.requests.at(-1)!.body).toMatchObject({ model: 'dall-e-2', n: 2, size: '512x512', response_format: 'b64_json' });
    expect(result.count).toBe(2);
    const [first] = result.images;
    expect(first).toMatchObject({ kind: 'url', url: expect.stringContaining('/files/img-') });
    const file = await fetchMediaOutput(fetcher, first!, { fallbackMimeType: 'image/png' });
    expect(file.mimeType).toBe('image/png');
    expect(pngSize(file.bytes)).toEqual({ width: 512, height: 512 });
    expect(urlFake.downloads()).toBe(1);
  });

  it('edits with a source image through /v1/images/edits (multipart)', async () => {
    const source = solidPng(64, 64, 200);
    const result = await adapter.generateImage!(
      credential,
      image({ count: 1, width: 1024, height: 1024, initImage: { bytes: source, mimeType: 'image/png' }, strength: 0.3 }),
    );
    expect(lastCall().path).toBe('/v1/images/edits');
    expect(lastCall().headers['content-type']).toMatch(/^multipart\/form-data/);
    expect(lastCall().body).toMatchObject({ model: 'gpt-image-1', prompt: 'A watercolour fox', n: '1', size: '1024x1024' });
    expect(lastCall().body.image).toMatchObject({ filename: 'source.png', type: 'image/png' });
    expect(lastCall().body.image.bytes.equals(source)).toBe(true);
    expect(result.count).toBe(1);
  });

  it('refuses to edit with DALL·E 3 before calling', async () => {
    const calls = fake.requests.length;
    const error = await upstreamError(
      adapter.generateImage!(credential, image({ model: 'dall-e-3', count: 1, initImage: { bytes: solidPng(8, 8), mimeType: 'image/png' } })),
    );
    expect(error).toMatchObject({ kind: 'bad_request', code: 'edit_not_supported' });
    expect(fake.requests.length).toBe(calls);
  });
});

describe('OpenAI Images: GPT Image quality and token usage', () => {
  it('sends the quality asked for and reads back the quality, size and tokens the answer reports', async () => {
    const result = await adapter.generateImage!(credential, image({ count: 2, width: 1024, height: 1536, quality: 'low' }));
    expect(lastCall().body).toEqual({ model: 'gpt-image-1', prompt: 'A watercolour fox', n: 2, size: '1024x1536', quality: 'low' });
    // 17 bytes of prompt: 5 text tokens at the fake's 4 bytes a token; two portrait images at low: 408 each.
    expect(result).toMatchObject({ count: 2, width: 1024, height: 1536, quality: 'low' });
    expect(result.usage).toEqual({ inputTokens: 5, textInputTokens: 5, imageInputTokens: 0, outputTokens: 2 * 408 });
  });

  it('reads the concrete quality OpenAI chose for auto', async () => {
    const result = await adapter.generateImage!(credential, image({ count: 1, width: 1024, height: 1024, quality: 'auto' }));
    expect(lastCall().body).toMatchObject({ quality: 'auto' });
    expect(result.quality).toBe('medium');
    expect(result.usage?.outputTokens).toBe(GPT_IMAGE_OUTPUT_TOKENS.medium!['1024x1024']);
  });

  it('sends no quality when none is asked for, and counts a source image as image input tokens on edits', async () => {
    const result = await adapter.generateImage!(
      credential,
      image({ count: 1, width: 1024, height: 1024, quality: 'high', initImage: { bytes: solidPng(1024, 1024), mimeType: 'image/png' } }),
    );
    expect(lastCall()).toMatchObject({ path: '/v1/images/edits', body: { quality: 'high', size: '1024x1024' } });
    // A 1024x1024 source is one 512px tile once its shortest side is 512: 65 + 129 tokens.
    expect(result.usage).toEqual({ inputTokens: 5 + 194, textInputTokens: 5, imageInputTokens: 194, outputTokens: 4160 });
    await adapter.generateImage!(credential, image({ count: 1 }));
    expect(lastCall().body).not.toHaveProperty('quality');
  });

  it('sends DALL-E 3 its own quality name and reports no token usage for it', async () => {
    const result = await adapter.generateImage!(credential, image({ model: 'dall-e-3', count: 1, width: 1024, height: 1024, quality: 'standard' }));
    expect(lastCall().body).toEqual({
      model: 'dall-e-3',
      prompt: 'A watercolour fox',
      n: 1,
      size: '1024x1024',
      quality: 'standard',
      response_format: 'b64_json',
    });
    expect(result.usage).toBeNull();
    expect(result.quality).toBeNull();
  });

  it("surfaces OpenAI's 400 for a quality the model does not take", async () => {
    const error = await upstreamError(adapter.generateImage!(credential, image({ quality: 'ultra' })));
    expect(error).toMatchObject({ kind: 'bad_request', status: 400, code: 'invalid_value' });
    expect(error.message).toBe("Invalid value: 'ultra'. Supported values are: 'low', 'medium', 'high', and 'auto'.");
  });

  it("the fake refuses what OpenAI refuses: response_format for GPT Image, in OpenAI's error shape", async () => {
    const response = await fetch(`${fake.baseUrl}/images/generations`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-test-1', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-image-1', prompt: 'x', response_format: 'url' }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: { message: "Unknown parameter: 'response_format'.", type: 'invalid_request_error', param: 'response_format', code: 'unknown_parameter' },
    });
  });

  it('treats an answer whose usage does not add up as unreported', async () => {
    fake.decide(() => ({
      kind: 'error',
      status: 200,
      body: {
        created: 1,
        data: [{ b64_json: solidPng(8, 8).toString('base64') }],
        quality: 'high',
        size: '1024x1024',
        usage: { input_tokens: 10, output_tokens: -1, total_tokens: 9 },
      },
    }));
    const result = await adapter.generateImage!(credential, image({ count: 1 }));
    expect(result).toMatchObject({ quality: 'high', usage: null, width: 1024, height: 1024 });
  });
});

describe('OpenAI Images: errors', () => {
  it.each([
    [401, 'auth', 'invalid_api_key'],
    [403, 'model_refused', 'invalid_request_error'],
    [429, 'rate_limit', 'rate_limit_exceeded'],
    [500, 'server', 'server_error'],
    [503, 'server', 'server_error'],
  ] as const)('classifies HTTP %i as %s', async (status, kind, code) => {
    fake.decide((r) => (r.path.startsWith('/v1/images') ? { kind: 'error', status, body: OPENAI_MEDIA_ERRORS[status] } : { kind: 'default' }));
    const error = await upstreamError(adapter.generateImage!(credential, image()));
    expect(error).toMatchObject({ kind, status, code });
    expect(error.message).toBe(OPENAI_MEDIA_ERRORS[status].error.message);
  });

  it('rejects a wrong key with 401 from the real rules too', async () => {
    const error = await upstreamError(adapter.generateImage!({ ...credential, accountId: 'bad', apiKey: 'nope' }, image()));
    expect(error).toMatchObject({ kind: 'auth', status: 401 });
  });

  it('reports an unknown model as model_not_found', async () => {
    const error = await upstreamError(adapter.generateImage!(credential, image({ model: 'gpt-image-9' })));
    expect(error).toMatchObject({ kind: 'model_not_found', status: 404 });
  });

  it('reports a request the provider rejects as a bad request', async () => {
    fake.decide(() => ({
      kind: 'error',
      status: 400,
      body: {
        error: {
          message: 'Your request was rejected as a result of our safety system.',
          type: 'image_generation_user_error',
          param: null,
          code: 'moderation_blocked',
        },
      },
    }));
    const error = await upstreamError(adapter.generateImage!(credential, image()));
    expect(error).toMatchObject({ kind: 'bad_request', status: 400, code: 'moderation_blocked' });
    fake.decide(() => ({ kind: 'default' }));
  });

  it('treats an answer without images as a provider failure', async () => {
    fake.decide(() => ({ kind: 'error', status: 200, body: { created: 1, data: [] } }));
    expect(await upstreamError(adapter.generateImage!(credential, image()))).toMatchObject({ kind: 'server', code: 'empty_response' });
    fake.decide(() => ({ kind: 'default' }));
  });

  it('times out an upstream that never answers, and reports an unreachable one as a network error', async () => {
    fake.decide(() => ({ kind: 'hang' }));
    expect((await upstreamError(adapter.generateImage!({ ...credential, accountId: 'slow', timeoutMs: 200 }, image()))).kind).toBe('timeout');
    fake.decide(() => ({ kind: 'default' }));
    expect((await upstreamError(adapter.generateImage!({ ...credential, accountId: 'dead', baseUrl: 'http://127.0.0.1:1/v1' }, image()))).kind).toBe('network');
  });
});

describe('OpenAI speech', () => {
  it('asks for WAV and returns it with its real length (streamed header)', async () => {
    const result = await adapter.generateSpeech!(credential, {
      model: 'gpt-4o-mini-tts',
      text: 'Good morning, and welcome aboard.',
      voice: 'coral',
      speed: 1.25,
    });
    expect(lastCall()).toMatchObject({
      path: '/v1/audio/speech',
      body: { model: 'gpt-4o-mini-tts', input: 'Good morning, and welcome aboard.', voice: 'coral', response_format: 'wav', speed: 1.25 },
    });
    expect(result.mimeType).toBe('audio/wav');
    expect(readWavInfo(result.bytes).sampleRate).toBe(24_000);
    expect(result.durationSeconds).toBeCloseTo((result.bytes.length - 44) / 48_000, 5);
    const plain = await adapter.generateSpeech!(credential, { model: 'tts-1', text: 'Hi', voice: null });
    expect(lastCall().body).toEqual({ model: 'tts-1', input: 'Hi', voice: 'alloy', response_format: 'wav' });
    expect(plain.durationSeconds).toBeGreaterThan(0);
  });

  it('maps speech errors the same way', async () => {
    fake.decide(() => ({ kind: 'error', status: 429, body: OPENAI_MEDIA_ERRORS[429] }));
    expect(await upstreamError(adapter.generateSpeech!(credential, { model: 'tts-1', text: 'Hi', voice: null }))).toMatchObject({
      kind: 'rate_limit',
      status: 429,
    });
    fake.decide(() => ({ kind: 'default' }));
  });
});

describe('OpenAI credential check', () => {
  it('lists models with the key, and fails with auth for a bad one', async () => {
    await expect(adapter.checkCredential(credential)).resolves.toBeUndefined();
    expect(lastCall()).toMatchObject({ method: 'GET', path: '/v1/models' });
    expect(await upstreamError(adapter.checkCredential({ ...credential, accountId: 'bad-2', apiKey: 'wrong' }))).toMatchObject({ kind: 'auth' });
  });
});
