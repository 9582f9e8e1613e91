import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { solidPng, startFakeRunway, type RunwayFake } from '../../../../../test/helpers/fake-media-upstreams.js';
import { readMp4Info } from '../../../../platform/media/mp4.js';
import { createSafeFetcher } from '../../../../platform/net/safe-fetch.js';
import { UpstreamError, type UpstreamCredential } from '../types.js';
import { fetchMediaOutput } from '../media/download.js';
import type { MediaAdapter, VideoRequest } from '../media/media-types.js';
import { RUNWAY_API_VERSION, createRunwayAdapter, runwayDuration, runwayRatio } from './media.js';

let fake: RunwayFake;
let adapter: MediaAdapter;
let credential: UpstreamCredential;

beforeAll(async () => {
  fake = await startFakeRunway();
  adapter = createRunwayAdapter();
  credential = { accountId: 'acc-runway-1', providerSlug: 'runway', apiKey: 'key_valid', baseUrl: fake.baseUrl, timeoutMs: 5000 };
});
afterEach(() => {
  fake.decide(() => ({ kind: 'default' }));
  fake.setScript(['PENDING', 'RUNNING', 'RUNNING', 'SUCCEEDED']);
  fake.setOutputStatus(200);
});
afterAll(async () => fake?.close());

const frame = { bytes: solidPng(32, 18), mimeType: 'image/png' };
const request = (overrides: Partial<VideoRequest> = {}): VideoRequest => ({
  model: 'gen4_turbo',
  prompt: 'The camera slowly pushes in as leaves rustle',
  durationSeconds: 5,
  aspectRatio: '16:9',
  seedImage: frame,
  negativePrompt: 'blurry',
  seed: 99,
  extra: {},
  ...overrides,
});
const last = () => fake.requests.at(-1)!;

async function upstreamError(promise: Promise<unknown>): Promise<UpstreamError> {
  const error = await promise.then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(UpstreamError);
  return error as UpstreamError;
}

describe('Runway: submit', () => {
  it('posts image_to_video with the frame as a data URI, the model’s ratio, the version header and the key', async () => {
    const submitted = await adapter.submitVideo!(
      credential,
      request({ extra: { contentModeration: { publicFigureThreshold: 'low' }, model: 'gen4_aleph', ratio: '1:1' } }),
    );
    expect(submitted).toEqual({ externalId: expect.any(String), estimatedSeconds: 40, durationSeconds: 5 });
    expect(fake.tasks.has(submitted.externalId)).toBe(true);
    const call = last();
    expect(call).toMatchObject({ method: 'POST', path: '/v1/image_to_video' });
    expect(call.headers.authorization).toBe('Bearer key_valid');
    expect(call.headers['x-runway-version']).toBe(RUNWAY_API_VERSION);
    // `extra` adds provider options but never replaces the adapter's own fields (model, ratio...).
    expect(call.body).toEqual({
      contentModeration: { publicFigureThreshold: 'low' },
      model: 'gen4_turbo',
      promptText: 'The camera slowly pushes in as leaves rustle',
      ratio: '1280:720',
      duration: 5,
      seed: 99,
      promptImage: `data:image/png;base64,${frame.bytes.toString('base64')}`,
    });
  });

  it('sends first and last frames to models that take an end frame', async () => {
    await adapter.submitVideo!(credential, request({ model: 'gen3a_turbo', aspectRatio: '9:16', durationSeconds: 10, endImage: frame, seed: null }));
    expect(last().body).toMatchObject({ model: 'gen3a_turbo', ratio: '768:1280', duration: 10, promptImage: [{ position: 'first' }, { position: 'last' }] });
    expect(last().body.seed).toBeUndefined();
  });

  it('posts text_to_video when there is no start frame and the model makes video from text', async () => {
    const submitted = await adapter.submitVideo!(credential, request({ model: 'veo3', seedImage: undefined, durationSeconds: 5 }));
    expect(last()).toMatchObject({ path: '/v1/text_to_video', body: { model: 'veo3', ratio: '1280:720', duration: 8, promptText: expect.any(String) } });
    expect(submitted.durationSeconds).toBe(8);
  });

  it.each([
    [{ seedImage: undefined }, 'start_frame_required'],
    [{ endImage: frame }, 'end_frame_not_supported'],
    [{ model: 'gen3a_turbo', seedImage: undefined, endImage: frame }, 'start_frame_required'],
    [{ seedImage: { bytes: Buffer.alloc(5 * 1024 * 1024 + 1), mimeType: 'image/png' } }, 'image_too_large'],
  ] as const)('refuses %# before calling (%s)', async (overrides, code) => {
    const calls = fake.requests.length;
    const error = await upstreamError(adapter.submitVideo!(credential, request(overrides)));
    expect(error).toMatchObject({ kind: 'bad_request', code });
    expect(fake.requests.length).toBe(calls);
  });

  it('snaps aspect ratios and durations to what each model takes', () => {
    expect(runwayRatio('gen4_turbo', '1:1')).toBe('960:960');
    expect(runwayRatio('gen4_turbo', '4:3')).toBe('1104:832');
    expect(runwayRatio('gen4_turbo', '3:4')).toBe('832:1104');
    expect(runwayRatio('gen3a_turbo', '1:1')).toBe('1280:768');
    expect(runwayRatio('some-new-model', '9:16')).toBe('720:1280');
    expect(runwayDuration('gen4_turbo', 4)).toBe(5);
    expect(runwayDuration('gen4_turbo', 7.5)).toBe(5);
    expect(runwayDuration('gen4_turbo', 9)).toBe(10);
    expect(runwayDuration('veo3', 4)).toBe(8);
    expect(runwayDuration('some-new-model', 6.4)).toBe(6);
  });
});

describe('Runway: poll and fetch', () => {
  it('reports PENDING as QUEUED, RUNNING with progress, then SUCCEEDED with a downloadable video URL', async () => {
    const { externalId } = await adapter.submitVideo!(credential, request());
    expect(await adapter.pollVideo!(credential, externalId)).toEqual({ status: 'QUEUED', progress: null });
    expect(last()).toMatchObject({ method: 'GET', path: `/v1/tasks/${externalId}` });
    expect(last().headers['x-runway-version']).toBe(RUNWAY_API_VERSION);
    expect(await adapter.pollVideo!(credential, externalId)).toEqual({ status: 'RUNNING', progress: 0.6 });
    expect(await adapter.pollVideo!(credential, externalId)).toEqual({ status: 'RUNNING', progress: 0.9 });
    const done = await adapter.pollVideo!(credential, externalId);
    expect(done).toMatchObject({ status: 'SUCCEEDED', progress: 1, durationSeconds: null, video: { kind: 'url', mimeType: 'video/mp4' } });
    if (done.status !== 'SUCCEEDED' || done.video.kind !== 'url') throw new Error('not a URL result');
    expect(done.video.url).toContain(`/outputs/${externalId}.mp4?_jwt=`);

    const file = await fetchMediaOutput(createSafeFetcher({ allowPrivateNetwork: true }), done.video, { fallbackMimeType: 'video/mp4' });
    expect(file.mimeType).toBe('video/mp4');
    expect(readMp4Info(file.bytes).width).toBe(64);
    expect(fake.downloads()).toBeGreaterThan(0);
  });

  it('reports THROTTLED as QUEUED', async () => {
    fake.setScript(['THROTTLED']);
    const { externalId } = await adapter.submitVideo!(credential, request());
    expect(await adapter.pollVideo!(credential, externalId)).toEqual({ status: 'QUEUED', progress: null });
  });

  it('reports a failed task with Runway’s failure code and reason', async () => {
    fake.setScript(['RUNNING', 'FAILED'], { failure: 'The prompt was flagged by content moderation.', failureCode: 'SAFETY.INPUT.TEXT' });
    const { externalId } = await adapter.submitVideo!(credential, request());
    await adapter.pollVideo!(credential, externalId);
    expect(await adapter.pollVideo!(credential, externalId)).toMatchObject({
      status: 'FAILED',
      error: { code: 'SAFETY.INPUT.TEXT', message: 'The prompt was flagged by content moderation.' },
    });
  });

  it('cancels with DELETE, after which the task reads CANCELLED (a FAILED status for us); only a waiting task is confirmed unbilled', async () => {
    fake.setScript(['RUNNING']);
    const { externalId } = await adapter.submitVideo!(credential, request());
    expect(await adapter.cancelVideo!(credential, externalId)).toBe(false);
    expect(last()).toMatchObject({ method: 'DELETE', path: `/v1/tasks/${externalId}` });
    expect(await adapter.pollVideo!(credential, externalId)).toMatchObject({ status: 'FAILED', error: { code: 'CANCELLED' } });
    fake.setScript(['PENDING']);
    const waiting = await adapter.submitVideo!(credential, request());
    expect(await adapter.cancelVideo!(credential, waiting.externalId)).toBe(true);
    await expect(adapter.cancelVideo!(credential, '00000000-0000-4000-8000-000000000000')).resolves.toBe(false);
  });

  it('reports a task Runway no longer knows as FAILED not_found', async () => {
    expect(await adapter.pollVideo!(credential, '00000000-0000-4000-8000-000000000000')).toMatchObject({
      status: 'FAILED',
      error: { code: 'not_found', message: 'Task not found.' },
    });
  });

  it('treats a finished task without output, or an unknown status, as a provider problem', async () => {
    fake.decide((r) => (r.method === 'GET' ? { kind: 'error', status: 200, body: { id: 'x', status: 'SUCCEEDED', output: [] } } : { kind: 'default' }));
    expect(await adapter.pollVideo!(credential, 'x')).toMatchObject({ status: 'FAILED', error: { code: 'empty_output' } });
    fake.decide((r) => (r.method === 'GET' ? { kind: 'error', status: 200, body: { id: 'x', status: 'MELTING' } } : { kind: 'default' }));
    expect(await upstreamError(adapter.pollVideo!(credential, 'x'))).toMatchObject({ kind: 'server', code: 'malformed_response' });
  });

  it('turns an expired result URL into a download failure naming the status', async () => {
    fake.setScript(['SUCCEEDED']);
    const { externalId } = await adapter.submitVideo!(credential, request());
    const done = await adapter.pollVideo!(credential, externalId);
    if (done.status !== 'SUCCEEDED') throw new Error('not done');
    fake.setOutputStatus(403);
    const error = await upstreamError(fetchMediaOutput(createSafeFetcher({ allowPrivateNetwork: true }), done.video, { fallbackMimeType: 'video/mp4' }));
    expect(error).toMatchObject({ kind: 'server', status: 403, code: 'download_http_status' });
    expect(error.message).toContain('403');
  });
});

describe('Runway: errors', () => {
  it.each([
    [401, { error: 'Invalid API key.' }, 'auth'],
    [403, { error: 'Your organization does not have access to the model gen4_turbo.' }, 'model_refused'],
    [429, { error: 'You have exceeded your daily task limit for this model.' }, 'rate_limit'],
    [502, { error: 'Bad gateway.' }, 'server'],
    [503, { error: 'Runway is shedding load.' }, 'server'],
    [400, { error: 'promptImage: Invalid data URI.' }, 'bad_request'],
  ] as const)('classifies HTTP %i on submit as %s, with Runway’s message', async (status, body, kind) => {
    fake.decide(() => ({ kind: 'error', status, body }));
    const error = await upstreamError(adapter.submitVideo!(credential, request()));
    expect(error).toMatchObject({ kind, status, message: body.error, code: `http_${status}` });
  });

  it('classifies poll failures the same way (the job retries later)', async () => {
    fake.decide(() => ({ kind: 'error', status: 429, body: { error: 'Too many requests.' } }));
    expect(await upstreamError(adapter.pollVideo!(credential, 'abc'))).toMatchObject({ kind: 'rate_limit', status: 429 });
    fake.decide(() => ({ kind: 'error', status: 500, body: { error: 'Internal error.' } }));
    expect(await upstreamError(adapter.pollVideo!(credential, 'abc'))).toMatchObject({ kind: 'server', status: 500 });
  });

  it('gets 401 from the real key check, and proves a good key through /v1/organization', async () => {
    expect(await upstreamError(adapter.submitVideo!({ ...credential, apiKey: 'key_revoked' }, request()))).toMatchObject({
      kind: 'auth',
      status: 401,
      message: 'Invalid API key.',
    });
    await expect(adapter.checkCredential(credential)).resolves.toBeUndefined();
    expect(last()).toMatchObject({ method: 'GET', path: '/v1/organization' });
    expect(await upstreamError(adapter.checkCredential({ ...credential, apiKey: 'key_revoked' }))).toMatchObject({ kind: 'auth' });
  });

  it('surfaces the model’s own validation errors as bad requests', async () => {
    const error = await upstreamError(adapter.submitVideo!(credential, request({ model: 'gen4_aleph' })));
    expect(error).toMatchObject({ kind: 'bad_request', status: 400 });
    expect(error.message).toContain('Invalid model');
  });

  it('times out a silent upstream and reports an unreachable one', async () => {
    fake.decide(() => ({ kind: 'hang' }));
    expect(await upstreamError(adapter.submitVideo!({ ...credential, timeoutMs: 150 }, request()))).toMatchObject({ kind: 'timeout' });
    expect(await upstreamError(adapter.pollVideo!({ ...credential, baseUrl: 'http://127.0.0.1:1' }, 'abc'))).toMatchObject({ kind: 'network' });
  });

  it('stops when the caller cancels', async () => {
    fake.decide(() => ({ kind: 'hang' }));
    const controller = new AbortController();
    const pending = adapter.submitVideo!(credential, request({ signal: controller.signal }));
    setTimeout(() => controller.abort(), 20);
    expect(await upstreamError(pending)).toMatchObject({ kind: 'aborted' });
  });
});
