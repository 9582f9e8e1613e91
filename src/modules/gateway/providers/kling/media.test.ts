import { createHmac } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { rejection } from '../../../../../test/helpers/rejection.js';
import { solidPng } from '../../../../../test/helpers/fake-media-upstreams.js';
import { KLING_FORBIDDEN_WORD, klingApiKey, startFakeKling, type KlingFake } from './kling.fake.js';
import { readMp4Info } from '../../../../platform/media/mp4.js';
import { createSafeFetcher } from '../../../../platform/net/safe-fetch.js';
import { UpstreamError, type UpstreamCredential } from '../types.js';
import { fetchMediaOutput } from '../media/download.js';
import { createKlingAdapter, klingDuration, klingRatio, klingToken, parseKlingCredential } from './media.js';
import type { MediaAdapter, VideoRequest } from '../media/media-types.js';

let fake: KlingFake;
let adapter: MediaAdapter;
let credential: UpstreamCredential;

beforeAll(async () => {
  fake = await startFakeKling();
  adapter = createKlingAdapter();
  credential = { accountId: 'acc-kling-1', providerSlug: 'kling', apiKey: klingApiKey('AKalpha0001'), baseUrl: fake.baseUrl, timeoutMs: 5000 };
});
afterEach(() => {
  fake.decide(() => ({ kind: 'default' }));
  fake.setScript(['submitted', 'processing', 'processing', 'succeed']);
  fake.restoreKeys();
});
afterAll(async () => fake?.close());

const frame = { bytes: solidPng(32, 18), mimeType: 'image/png' };
const request = (overrides: Partial<VideoRequest> = {}): VideoRequest => ({
  model: 'kling-v2-1-master',
  prompt: 'A paper boat drifts down a rainy street',
  durationSeconds: 5,
  aspectRatio: '16:9',
  negativePrompt: 'blurry',
  seed: 7,
  extra: {},
  ...overrides,
});
const last = () => fake.requests.at(-1)!;

const upstreamError = (promise: Promise<unknown>) => rejection(promise, UpstreamError);

describe('Kling: credentials and the JWT', () => {
  it('reads <access key>:<secret key> and names what is missing', () => {
    expect(parseKlingCredential(' AK1 : SK:with:colons ')).toEqual({ accessKey: 'AK1', secretKey: 'SK:with:colons' });
    for (const [value, missing] of [
      ['', /is empty/],
      ['AKonly', /no secret key/],
      ['AK:', /no secret key/],
      [':SK', /no access key/],
      [null, /is empty/],
    ] as const) {
      expect(() => parseKlingCredential(value), String(value)).toThrow(missing);
      expect(() => parseKlingCredential(value)).toThrow(/<access key>:<secret key>/);
    }
  });

  it('signs an HS256 token: iss the access key, nbf 5 s ago, exp in 30 minutes', () => {
    const token = klingToken({ accessKey: 'AK1', secretKey: 'SK1' }, 1_700_000_000_500);
    const [head, payload, signature] = token.split('.') as [string, string, string];
    expect(JSON.parse(Buffer.from(head, 'base64url').toString())).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(JSON.parse(Buffer.from(payload, 'base64url').toString())).toEqual({ iss: 'AK1', exp: 1_700_001_800, nbf: 1_699_999_995 });
    expect(signature).toBe(createHmac('sha256', 'SK1').update(`${head}.${payload}`).digest('base64url'));
  });

  it('refuses an account whose key has the wrong form without calling Kling', async () => {
    const calls = fake.requests.length;
    const error = await upstreamError(adapter.submitVideo!({ ...credential, apiKey: 'no-secret-here' }, request()));
    expect(error).toMatchObject({ kind: 'auth', code: 'credential_format' });
    expect(fake.requests.length).toBe(calls);
  });
});

describe('Kling: submit', () => {
  it('posts text2video with the model, snapped ratio and duration, the negative prompt and the extra keys; never lets extra replace its own fields', async () => {
    const camera = { type: 'simple', config: { horizontal: 0, vertical: 0, pan: 0, tilt: 0, roll: 0, zoom: 5 } };
    const extra = { cfg_scale: 0.7, mode: 'pro', camera_control: camera, model_name: 'kling-v1', callback_url: 'https://collector.example/hook' };
    const submitted = await adapter.submitVideo!(credential, request({ aspectRatio: '3:4', durationSeconds: 8, extra }));
    expect(submitted).toEqual({ externalId: expect.stringMatching(/^text2video:\d+$/), estimatedSeconds: 300, durationSeconds: 10 });
    expect(last()).toMatchObject({ method: 'POST', path: '/v1/videos/text2video' });
    expect(last().headers.authorization).toMatch(/^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
    expect(fake.callers().at(-1)).toBe('AKalpha0001');
    expect(last().body).toEqual({
      cfg_scale: 0.7,
      mode: 'pro',
      camera_control: camera,
      model_name: 'kling-v2-1-master',
      prompt: 'A paper boat drifts down a rainy street',
      negative_prompt: 'blurry',
      duration: '10',
      aspect_ratio: '9:16',
    });
  });

  it('posts image2video with the frames as plain base64 and no ratio (the image sets it); one motion brush becomes a list', async () => {
    const submitted = await adapter.submitVideo!(credential, request({ model: 'kling-v2-1', seedImage: frame, endImage: frame, extra: { mode: 'pro' } }));
    expect(submitted.externalId).toMatch(/^image2video:\d+$/);
    expect(last().body).toMatchObject({
      model_name: 'kling-v2-1',
      mode: 'pro',
      image: frame.bytes.toString('base64'),
      image_tail: frame.bytes.toString('base64'),
      duration: '5',
    });
    expect(last().body.aspect_ratio).toBeUndefined();
    const brush = {
      mask: frame.bytes.toString('base64'),
      trajectories: [
        { x: 1, y: 1 },
        { x: 9, y: 9 },
      ],
    };
    await adapter.submitVideo!(credential, request({ model: 'kling-v2-1', seedImage: frame, negativePrompt: null, extra: { dynamic_masks: brush } }));
    expect(last().body.dynamic_masks).toEqual([brush]);
    expect(last().body.negative_prompt).toBeUndefined();
  });

  it.each([
    ['start_frame_required', 'text for an image-only model', { model: 'kling-v2-1' }],
    ['start_frame_required', 'an end frame alone', { endImage: frame }],
    ['image_format', 'a WebP frame', { seedImage: { bytes: frame.bytes, mimeType: 'image/webp' } }],
    ['image_too_large', 'a frame over 10 MB', { seedImage: { bytes: Buffer.alloc(10 * 1024 * 1024 + 1), mimeType: 'image/png' } }],
  ] as const)('refuses before calling (%s: %s)', async (code, _what, overrides) => {
    const calls = fake.requests.length;
    expect(await upstreamError(adapter.submitVideo!(credential, request(overrides)))).toMatchObject({ kind: 'bad_request', code });
    expect(fake.requests.length).toBe(calls);
  });

  it('refuses the motion brush without a start frame (text2video has none) before calling Kling', async () => {
    const calls = fake.requests.length;
    const refused = await upstreamError(
      adapter.submitVideo!(credential, request({ extra: { dynamic_masks: { mask: 'https://example.com/m.png', trajectories: [{ x: 1, y: 1 }] } } })),
    );
    expect(refused).toMatchObject({ kind: 'bad_request', code: 'start_frame_required' });
    expect(fake.requests.length).toBe(calls);
  });

  it('snaps ratios to 16:9, 9:16 or 1:1 and durations to 5 or 10 seconds', () => {
    expect(['16:9', '9:16', '1:1', '4:3', '3:4'].map(klingRatio)).toEqual(['16:9', '9:16', '1:1', '16:9', '9:16']);
    expect([1, 5, 7.5, 8, 10, 15].map(klingDuration)).toEqual([5, 5, 5, 10, 10, 10]);
  });
});

describe('Kling: poll', () => {
  it('walks submitted, processing and succeed, reading the task at its own endpoint; the video downloads', async () => {
    const { externalId } = await adapter.submitVideo!(credential, request({ model: 'kling-v2-1', seedImage: frame }));
    const taskId = externalId.split(':')[1];
    expect(await adapter.pollVideo!(credential, externalId)).toEqual({ status: 'QUEUED', progress: null });
    expect(last()).toMatchObject({ method: 'GET', path: `/v1/videos/image2video/${taskId}` });
    expect(await adapter.pollVideo!(credential, externalId)).toEqual({ status: 'RUNNING', progress: null });
    await adapter.pollVideo!(credential, externalId);
    const done = await adapter.pollVideo!(credential, externalId);
    expect(done).toMatchObject({ status: 'SUCCEEDED', progress: 1, durationSeconds: 5, video: { kind: 'url', mimeType: 'video/mp4' } });
    if (done.status !== 'SUCCEEDED') throw new Error('not done');
    const file = await fetchMediaOutput(createSafeFetcher({ allowPrivateNetwork: true }), done.video, { fallbackMimeType: 'video/mp4' });
    expect(readMp4Info(file.bytes).width).toBe(64);
    expect(fake.downloads()).toBe(1);
  });

  it('reports a failed task with Kling’s message, as a refusal when its risk control refused it', async () => {
    fake.setScript(['processing', 'failed'], 'Failure to pass the risk control system');
    const risky = await adapter.submitVideo!(credential, request());
    await adapter.pollVideo!(credential, risky.externalId);
    expect(await adapter.pollVideo!(credential, risky.externalId)).toEqual({
      status: 'FAILED',
      progress: null,
      error: { code: 'content_moderated', message: 'Failure to pass the risk control system' },
    });
    fake.setScript(['failed'], 'Video generation timed out, please try again');
    const broken = await adapter.submitVideo!(credential, request());
    expect(await adapter.pollVideo!(credential, broken.externalId)).toMatchObject({
      status: 'FAILED',
      error: { code: 'failed', message: 'Video generation timed out, please try again' },
    });
  });

  it('reports a task Kling does not know, or an id that is not Kling’s, as FAILED not_found', async () => {
    expect(await adapter.pollVideo!(credential, 'text2video:123')).toMatchObject({ status: 'FAILED', error: { code: 'not_found', message: 'task not found' } });
    const { externalId } = await adapter.submitVideo!(credential, request());
    expect(await adapter.pollVideo!(credential, externalId.replace('text2video', 'image2video'))).toMatchObject({
      status: 'FAILED',
      error: { code: 'not_found' },
    });
    expect(await adapter.pollVideo!(credential, 'abc')).toMatchObject({ status: 'FAILED', error: { code: 'not_found' } });
  });

  it('has no cancel endpoint, so the adapter offers none (a cancelled job is charged)', () => {
    expect('cancelVideo' in adapter).toBe(false);
  });
});

describe('Kling: errors by the documented code table', () => {
  const error = (status: number, code: number, message: string) => ({ kind: 'error' as const, status, body: { code, message, request_id: 'r-1' } });

  it.each([
    [401, 1000, 'Authentication failed', 'auth'],
    [429, 1100, 'Account exception', 'auth'],
    [429, 1102, 'Resource pack depleted or expired', 'rate_limit'],
    [403, 1103, 'Unauthorized access to requested resource, such as model kling-v2-1-master', 'model_refused'],
    [400, 1201, 'Invalid request parameters: duration must be "5" or "10"', 'bad_request'],
    [404, 1203, 'Requested model does not exist', 'model_not_found'],
    [400, 1301, 'Trigger the content security policy of the platform', 'bad_request'],
    [429, 1302, 'Request rate limit exceeded', 'rate_limit'],
    [429, 1303, 'parallel task over resource pack limit', 'rate_limit'],
    [429, 1304, 'IP whitelist policy triggered', 'auth'],
    [500, 5000, 'Server internal error', 'server'],
    [503, 5001, 'Server temporarily unavailable', 'server'],
  ] as const)('HTTP %i code %i is %s with Kling’s message', async (status, code, message, kind) => {
    fake.decide(() => error(status, code, message));
    expect(await upstreamError(adapter.submitVideo!(credential, request()))).toMatchObject({ kind, status, message, code: `kling_${code}` });
  });

  it('refuses a prompt its content check flags (1301) and a revoked or expired token (1002, 1004)', async () => {
    expect(await upstreamError(adapter.submitVideo!(credential, request({ prompt: `a ${KLING_FORBIDDEN_WORD}` })))).toMatchObject({
      kind: 'bad_request',
      status: 400,
      code: 'kling_1301',
    });
    fake.revoke('AKalpha0001');
    expect(await upstreamError(adapter.submitVideo!(credential, request()))).toMatchObject({
      kind: 'auth',
      status: 401,
      code: 'kling_1002',
      message: 'Authorization is invalid',
    });
    expect(await upstreamError(adapter.checkCredential(credential))).toMatchObject({ kind: 'auth' });
    fake.restoreKeys();
    const stale = createKlingAdapter({ now: () => Date.now() - 2 * 60 * 60 * 1000 });
    expect(await upstreamError(stale.submitVideo!(credential, request()))).toMatchObject({
      kind: 'auth',
      code: 'kling_1004',
      message: 'Authorization has expired',
    });
    await expect(adapter.checkCredential({ ...credential, apiKey: klingApiKey('AKbravo0002') })).resolves.toBeUndefined();
    expect(last()).toMatchObject({ method: 'GET', path: '/v1/videos/image2video' });
  });

  it('throws poll failures for the job to retry, and times out or stops on request', async () => {
    fake.decide(() => error(429, 1302, 'Request rate limit exceeded'));
    expect(await upstreamError(adapter.pollVideo!(credential, 'text2video:1'))).toMatchObject({ kind: 'rate_limit' });
    fake.decide(() => ({ kind: 'hang' }));
    expect(await upstreamError(adapter.submitVideo!({ ...credential, timeoutMs: 150 }, request()))).toMatchObject({ kind: 'timeout' });
    const controller = new AbortController();
    const pending = adapter.submitVideo!(credential, request({ signal: controller.signal }));
    setTimeout(() => controller.abort(), 20);
    expect(await upstreamError(pending)).toMatchObject({ kind: 'aborted' });
  });
});
