import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { rejection } from '../../../../../test/helpers/rejection.js';
import { solidPng } from '../../../../../test/helpers/fake-media-upstreams.js';
import { BFL_AUTH_ERROR, BFL_KEYS, startFakeBfl, type BflFake } from './bfl.fake.js';
import { createSafeFetcher } from '../../../../platform/net/safe-fetch.js';
import { UpstreamError, type UpstreamCredential } from '../types.js';
import { bflTask, createBflAdapter, trustedPollingUrl } from './media.js';
import { fetchMediaOutput } from '../media/download.js';
import type { ImageRequest, MediaAdapter } from '../media/media-types.js';

let fake: BflFake;
let adapter: MediaAdapter;
let credential: UpstreamCredential;

beforeAll(async () => {
  fake = await startFakeBfl();
  adapter = createBflAdapter({ pollIntervalMs: 0 });
  credential = { accountId: 'acc-bfl-1', providerSlug: 'bfl', apiKey: BFL_KEYS[0]!, baseUrl: fake.baseUrl, timeoutMs: 5000 };
});
afterEach(() => {
  fake.decide(() => ({ kind: 'default' }));
  fake.setScript(['Pending', 'Ready']);
  fake.setDeliveryStatus(200);
  fake.restoreKeys();
});
afterAll(async () => fake?.close());

const source = { bytes: solidPng(40, 30), mimeType: 'image/png' };
const request = (overrides: Partial<ImageRequest> = {}): ImageRequest => ({
  model: 'flux-pro-1.1',
  prompt: 'A lighthouse at dusk, oil painting',
  negativePrompt: 'blurry',
  width: 1000,
  height: 700,
  count: 3,
  seed: 42,
  strength: null,
  ...overrides,
});
const submits = () => fake.requests.filter((r) => r.method === 'POST');
const polls = () => fake.requests.filter((r) => r.path === '/v1/get_result');

const upstreamError = (promise: Promise<unknown>) => rejection(promise, UpstreamError);

describe('BFL: the task sent', () => {
  it('posts /v1/{model} with x-key, a size snapped to multiples of 32, the seed and no negative prompt, then polls the polling URL with the key', async () => {
    const result = await adapter.generateImage!(credential, request());
    expect(result).toMatchObject({ count: 1, maxPerCall: 1, width: 992, height: 704 });
    const submit = submits().at(-1)!;
    expect(submit.path).toBe('/v1/flux-pro-1.1');
    expect(submit.headers['x-key']).toBe(BFL_KEYS[0]);
    expect(submit.body).toEqual({ prompt: 'A lighthouse at dusk, oil painting', seed: 42, width: 992, height: 704, safety_tolerance: 2, output_format: 'png' });
    const id = [...fake.tasks.keys()].at(-1)!;
    expect(polls().filter((p) => p.query.get('id') === id)).toHaveLength(2);
    expect(polls().at(-1)!.headers['x-key']).toBe(BFL_KEYS[0]);

    const output = result.images[0]!;
    expect(output).toMatchObject({ kind: 'url', mimeType: 'image/png' });
    const file = await fetchMediaOutput(createSafeFetcher({ allowPrivateNetwork: true }), output, { fallbackMimeType: 'image/png' });
    expect(file.mimeType).toBe('image/png');
    expect(fake.downloads()).toBeGreaterThan(0);
  });

  it('clamps sizes into 256-1440 and leaves the seed out when there is none', async () => {
    await adapter.generateImage!(credential, request({ model: 'flux-dev', width: 3000, height: 100, seed: null }));
    expect(submits().at(-1)!.body).toEqual({ prompt: expect.any(String), width: 1440, height: 256, safety_tolerance: 2, output_format: 'png' });
  });

  it('asks Ultra for its nearest aspect ratio, with the source as an image prompt blended by strength', async () => {
    const result = await adapter.generateImage!(
      credential,
      request({ model: 'flux-pro-1.1-ultra', width: 1920, height: 1080, initImage: source, strength: 0.25 }),
    );
    expect(submits().at(-1)!.body).toMatchObject({ aspect_ratio: '16:9', image_prompt: source.bytes.toString('base64'), image_prompt_strength: 0.75 });
    expect(submits().at(-1)!.body.width).toBeUndefined();
    expect([result.width, result.height]).toEqual([2752, 1536]);
  });

  it('edits with Kontext: the source goes as input_image (plain base64) with the requested ratio', async () => {
    const result = await adapter.generateImage!(credential, request({ model: 'flux-kontext-pro', width: 768, height: 1344, initImage: source, strength: 0.5 }));
    const body = submits().at(-1)!.body;
    expect(body).toEqual({
      prompt: expect.any(String),
      seed: 42,
      aspect_ratio: '9:16',
      input_image: source.bytes.toString('base64'),
      safety_tolerance: 2,
      output_format: 'png',
    });
    expect([result.width, result.height]).toEqual([768, 1360]);
    expect(bflTask(request({ model: 'flux-kontext-max', width: 5000, height: 1000 }), 2).body.aspect_ratio).toBe('21:9');
  });
});

describe('BFL: task states', () => {
  it('keeps reading while Pending and returns the image once Ready', async () => {
    fake.setScript(['Pending', 'Pending', 'Pending', 'Ready']);
    const before = polls().length;
    const result = await adapter.generateImage!(credential, request());
    expect(polls().length - before).toBe(4);
    expect(result.images).toHaveLength(1);
  });

  it.each([
    ['Request Moderated', 'request_moderated', /prompt or the source image/],
    ['Content Moderated', 'content_moderated', /withheld the generated image/],
  ] as const)('turns %s into a refusal of the request, saying what to change', async (status, code, message) => {
    fake.setScript(['Pending', status]);
    const error = await upstreamError(adapter.generateImage!(credential, request()));
    expect(error).toMatchObject({ kind: 'bad_request', status: 400, code });
    expect(error.message).toMatch(message);
    expect(error.message).toMatch(/try again/);
  });

  it('treats Error, a lost task and an unknown status as provider failures (another account may succeed)', async () => {
    fake.setScript(['Error']);
    expect(await upstreamError(adapter.generateImage!(credential, request()))).toMatchObject({ kind: 'server', code: 'generation_error' });
    fake.decide((r) =>
      r.path === '/v1/get_result' ? { kind: 'error', status: 404, body: { id: 'x', status: 'Task not found', result: null } } : { kind: 'default' },
    );
    expect(await upstreamError(adapter.generateImage!(credential, request()))).toMatchObject({ kind: 'server', code: 'task_not_found' });
    fake.decide((r) => (r.path === '/v1/get_result' ? { kind: 'error', status: 200, body: { id: 'x', status: 'Melting' } } : { kind: 'default' }));
    expect(await upstreamError(adapter.generateImage!(credential, request()))).toMatchObject({ kind: 'server', code: 'malformed_response' });
    fake.decide((r) => (r.path === '/v1/get_result' ? { kind: 'error', status: 200, body: { id: 'x', status: 'Ready', result: {} } } : { kind: 'default' }));
    expect(await upstreamError(adapter.generateImage!(credential, request()))).toMatchObject({ kind: 'server', code: 'empty_output' });
  });
});

describe('BFL: the polling URL', () => {
  it('follows only https URLs on bfl.ai or the configured origin', () => {
    expect(trustedPollingUrl('https://api.eu.bfl.ai/v1/get_result?id=1', 'https://api.bfl.ai')).toBe('https://api.eu.bfl.ai/v1/get_result?id=1');
    expect(trustedPollingUrl('https://bfl.ai/v1/get_result?id=1', 'https://api.bfl.ai')).toContain('bfl.ai');
    expect(trustedPollingUrl('http://127.0.0.1:9/v1/get_result?id=1', 'http://127.0.0.1:9')).toContain('127.0.0.1:9');
    for (const url of [
      'http://api.bfl.ai/v1/get_result',
      'https://evilbfl.ai/x',
      'https://bfl.ai.evil.example/x',
      'https://user:pw@api.bfl.ai/x',
      'http://127.0.0.1:10/x',
      'not a url',
      42,
    ]) {
      expect(() => trustedPollingUrl(url, 'http://127.0.0.1:9'), String(url)).toThrow(UpstreamError);
    }
  });

  it('refuses a polling URL elsewhere without sending the key there', async () => {
    fake.decide((r) =>
      r.method === 'POST'
        ? { kind: 'error', status: 200, body: { id: 'abc', polling_url: 'https://collector.example/v1/get_result?id=abc' } }
        : { kind: 'default' },
    );
    const before = fake.requests.length;
    const error = await upstreamError(adapter.generateImage!(credential, request()));
    expect(error).toMatchObject({ kind: 'server', code: 'untrusted_polling_url' });
    expect(error.message).toContain('collector.example');
    expect(fake.requests.length - before).toBe(1);
  });
});

describe('BFL: errors', () => {
  it.each([
    [403, BFL_AUTH_ERROR, 'auth', 'Not authenticated - Invalid Authentication'],
    [
      403,
      { detail: 'Your API key does not have access to the model flux-kontext-max.' },
      'model_refused',
      'Your API key does not have access to the model flux-kontext-max.',
    ],
    [
      402,
      { detail: 'Insufficient credits. Add credits to your account at https://api.bfl.ai.' },
      'rate_limit',
      'Insufficient credits. Add credits to your account at https://api.bfl.ai.',
    ],
    [
      429,
      { detail: 'You have exceeded the number of active tasks (24). Please wait for some tasks to finish.' },
      'rate_limit',
      'You have exceeded the number of active tasks (24). Please wait for some tasks to finish.',
    ],
    [500, { detail: 'Internal Server Error' }, 'server', 'Internal Server Error'],
    [503, { detail: 'Service temporarily unavailable' }, 'server', 'Service temporarily unavailable'],
  ] as const)('classifies HTTP %i on submit as %s with BFL’s message', async (status, body, kind, message) => {
    fake.decide((r) => (r.method === 'POST' ? { kind: 'error', status, body } : { kind: 'default' }));
    expect(await upstreamError(adapter.generateImage!(credential, request()))).toMatchObject({ kind, status, message });
  });

  it('reports the schema’s own validation errors as bad requests naming the field', async () => {
    fake.decide((r) =>
      r.method === 'POST'
        ? { kind: 'error', status: 422, body: { detail: [{ loc: ['body', 'width'], msg: 'Input should be a multiple of 32', type: 'multiple_of' }] } }
        : { kind: 'default' },
    );
    expect(await upstreamError(adapter.generateImage!(credential, request()))).toMatchObject({
      kind: 'bad_request',
      status: 422,
      message: 'width: Input should be a multiple of 32',
    });
  });

  it('gets the real 403 for a revoked key, and proves a good key with /v1/credits', async () => {
    fake.revoke(BFL_KEYS[0]!);
    expect(await upstreamError(adapter.generateImage!(credential, request()))).toMatchObject({ kind: 'auth', status: 403 });
    expect(await upstreamError(adapter.checkCredential(credential))).toMatchObject({ kind: 'auth' });
    await expect(adapter.checkCredential({ ...credential, apiKey: BFL_KEYS[1]! })).resolves.toBeUndefined();
    expect(fake.requests.at(-1)).toMatchObject({ method: 'GET', path: '/v1/credits' });
  });

  it('times out a silent submit, and a task that stays Pending past the account’s time limit', async () => {
    fake.decide(() => ({ kind: 'hang' }));
    expect(await upstreamError(adapter.generateImage!({ ...credential, timeoutMs: 150 }, request()))).toMatchObject({ kind: 'timeout' });
    fake.decide(() => ({ kind: 'default' }));
    fake.setScript(['Pending']);
    const slow = createBflAdapter({ pollIntervalMs: 20 });
    const error = await upstreamError(slow.generateImage!({ ...credential, timeoutMs: 300 }, request()));
    expect(error).toMatchObject({ kind: 'timeout' });
  });

  it('stops when the caller cancels while waiting between reads', async () => {
    fake.setScript(['Pending']);
    const slow = createBflAdapter({ pollIntervalMs: 10_000 });
    const controller = new AbortController();
    const pending = slow.generateImage!(credential, request({ signal: controller.signal }));
    setTimeout(() => controller.abort(), 50);
    expect(await upstreamError(pending)).toMatchObject({ kind: 'aborted' });
  });
});
