import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { rejection } from '../../../../../test/helpers/rejection.js';
import { solidPng } from '../../../../../test/helpers/fake-media-upstreams.js';
import { MINIMAX_KEYS, MINIMAX_SENSITIVE_WORD, startFakeMinimax, type MinimaxFake } from './minimax.fake.js';
import { readMp4Info } from '../../../../platform/media/mp4.js';
import { createSafeFetcher } from '../../../../platform/net/safe-fetch.js';
import { UpstreamError, type UpstreamCredential } from '../types.js';
import { fetchMediaOutput } from '../media/download.js';
import type { MediaAdapter, VideoRequest } from '../media/media-types.js';
import { createMinimaxAdapter, minimaxDuration } from './media.js';

let fake: MinimaxFake;
let adapter: MediaAdapter;
let credential: UpstreamCredential;

beforeAll(async () => {
  fake = await startFakeMinimax();
  adapter = createMinimaxAdapter();
  credential = { accountId: 'acc-minimax-1', providerSlug: 'minimax', apiKey: MINIMAX_KEYS[0]!, baseUrl: fake.baseUrl, timeoutMs: 5000 };
});
afterEach(() => {
  fake.decide(() => ({ kind: 'default' }));
  fake.setScript(['Preparing', 'Queueing', 'Processing', 'Success'], { status_code: 1027, status_msg: 'output new_sensitive' });
  fake.restoreKeys();
});
afterAll(async () => fake?.close());

const frame = { bytes: solidPng(32, 18), mimeType: 'image/png' };
const request = (overrides: Partial<VideoRequest> = {}): VideoRequest => ({
  model: 'MiniMax-Hailuo-02',
  prompt: 'A kite rises over a windy beach [Pan left]',
  durationSeconds: 5,
  aspectRatio: '16:9',
  negativePrompt: 'blurry',
  seed: 3,
  extra: {},
  ...overrides,
});
const last = () => fake.requests.at(-1)!;
const baseResp = (status_code: number, status_msg: string) => ({
  kind: 'error' as const,
  status: 200,
  body: { task_id: '', base_resp: { status_code, status_msg } },
});

const upstreamError = (promise: Promise<unknown>) => rejection(promise, UpstreamError);

describe('MiniMax: submit', () => {
  it('posts the model, prompt, snapped duration and the default 768P with the Bearer key; extra adds options but never replaces fields; no negative prompt or seed', async () => {
    const extra = { prompt_optimizer: false, fast_pretreatment: true, model: 'T2V-01', callback_url: 'https://collector.example/hook' };
    const submitted = await adapter.submitVideo!(credential, request({ extra }));
    expect(submitted).toEqual({ externalId: expect.stringMatching(/^\d+$/), estimatedSeconds: 180, durationSeconds: 6 });
    expect(last()).toMatchObject({ method: 'POST', path: '/v1/video_generation' });
    expect(last().headers.authorization).toBe(`Bearer ${MINIMAX_KEYS[0]}`);
    expect(last().body).toEqual({
      prompt_optimizer: false,
      fast_pretreatment: true,
      model: 'MiniMax-Hailuo-02',
      prompt: 'A kite rises over a windy beach [Pan left]',
      duration: 6,
      resolution: '768P',
    });
  });

  it('sends start and end frames as data URLs, with the resolution asked for in extra', async () => {
    await adapter.submitVideo!(credential, request({ seedImage: frame, durationSeconds: 10, extra: { resolution: '512p' } }));
    expect(last().body).toMatchObject({ first_frame_image: `data:image/png;base64,${frame.bytes.toString('base64')}`, resolution: '512P', duration: 10 });
    await adapter.submitVideo!(credential, request({ seedImage: frame, endImage: frame, extra: { resolution: '1080P' } }));
    expect(last().body).toMatchObject({
      first_frame_image: expect.stringMatching(/^data:image\/png;base64,/),
      last_frame_image: expect.stringMatching(/^data:image\/png;base64,/),
      resolution: '1080P',
      duration: 6,
    });
  });

  it.each([
    ['1080P for 10 s', { durationSeconds: 10, extra: { resolution: '1080P' } }, /6 seconds/],
    ['512P from text', { extra: { resolution: '512P' } }, /start frame/],
    ['512P with an end frame', { seedImage: frame, endImage: frame, extra: { resolution: '512P' } }, /768P or 1080P/],
    ['an unknown resolution', { extra: { resolution: '4K' } }, /512P, 768P, 1080P/],
    ['a 20 MB frame', { seedImage: { bytes: Buffer.alloc(20 * 1024 * 1024), mimeType: 'image/png' } }, /under 20 MB/],
  ] as const)('refuses %s before calling, saying what to change', async (_label, overrides, message) => {
    const calls = fake.requests.length;
    const error = await upstreamError(adapter.submitVideo!(credential, request(overrides)));
    expect(error).toMatchObject({ kind: 'bad_request', status: 400 });
    expect(error.message).toMatch(message);
    expect(fake.requests.length).toBe(calls);
  });

  it('snaps durations to 6 or 10 seconds', () => {
    expect([1, 5, 6, 8, 8.5, 10, 20].map(minimaxDuration)).toEqual([6, 6, 6, 6, 10, 10, 10]);
  });
});

describe('MiniMax: poll and download', () => {
  it('walks Preparing, Queueing, Processing and Success, then fetches the download URL of the file', async () => {
    const { externalId } = await adapter.submitVideo!(credential, request());
    expect(await adapter.pollVideo!(credential, externalId)).toEqual({ status: 'QUEUED', progress: null });
    expect(last()).toMatchObject({ method: 'GET', path: '/v1/query/video_generation' });
    expect(last().query.get('task_id')).toBe(externalId);
    expect(await adapter.pollVideo!(credential, externalId)).toEqual({ status: 'QUEUED', progress: null });
    expect(await adapter.pollVideo!(credential, externalId)).toEqual({ status: 'RUNNING', progress: null });
    const done = await adapter.pollVideo!(credential, externalId);
    expect(last()).toMatchObject({ method: 'GET', path: '/v1/files/retrieve' });
    expect(last().query.get('file_id')).toBe(fake.tasks.get(externalId)!.fileId);
    expect(done).toMatchObject({ status: 'SUCCEEDED', progress: 1, video: { kind: 'url', mimeType: 'video/mp4' } });
    if (done.status !== 'SUCCEEDED') throw new Error('not done');
    const file = await fetchMediaOutput(createSafeFetcher({ allowPrivateNetwork: true }), done.video, { fallbackMimeType: 'video/mp4' });
    expect(readMp4Info(file.bytes).width).toBe(64);
    expect(fake.downloads()).toBe(1);
  });

  it('reports a failed task, as a refusal when MiniMax flagged the video as sensitive', async () => {
    fake.setScript(['Processing', 'Fail']);
    const flagged = await adapter.submitVideo!(credential, request());
    await adapter.pollVideo!(credential, flagged.externalId);
    const failed = await adapter.pollVideo!(credential, flagged.externalId);
    expect(failed).toMatchObject({ status: 'FAILED', error: { code: 'content_moderated' } });
    if (failed.status === 'FAILED') expect(failed.error.message).toMatch(/^output new_sensitive: .*generated video.*try again/);
    fake.setScript(['Fail'], { status_code: 1000, status_msg: 'unknown error' });
    const broken = await adapter.submitVideo!(credential, request());
    expect(await adapter.pollVideo!(credential, broken.externalId)).toEqual({
      status: 'FAILED',
      progress: null,
      error: { code: 'failed', message: 'unknown error' },
    });
  });

  it('reports a task MiniMax does not know as FAILED not_found, and throws read failures for the job to retry', async () => {
    expect(await adapter.pollVideo!(credential, '1')).toMatchObject({ status: 'FAILED', error: { code: 'not_found' } });
    fake.decide(() => ({ kind: 'error', status: 200, body: { base_resp: { status_code: 1002, status_msg: 'rate limit' } } }));
    expect(await upstreamError(adapter.pollVideo!(credential, '1'))).toMatchObject({ kind: 'rate_limit', code: 'minimax_1002' });
  });

  it('has no cancel endpoint, so the adapter offers none (a cancelled job is charged)', () => {
    expect('cancelVideo' in adapter).toBe(false);
  });
});

describe('MiniMax: errors in base_resp (HTTP 200) by the documented table', () => {
  it.each([
    [1000, 'unknown error', 'server'],
    [1001, 'request timeout', 'timeout'],
    [1002, 'rate limit', 'rate_limit'],
    [1004, 'not authorized', 'auth'],
    [1008, 'insufficient balance', 'rate_limit'],
    [1039, 'token limit', 'rate_limit'],
    [2013, 'invalid params, duration must be 6 or 10', 'bad_request'],
    [2049, 'invalid api key', 'auth'],
    [9999, 'something new', 'server'],
  ] as const)('status_code %i is %s', async (code, message, kind) => {
    fake.decide(() => baseResp(code, message));
    expect(await upstreamError(adapter.submitVideo!(credential, request()))).toMatchObject({ kind, status: 200, message, code: `minimax_${code}` });
  });

  it('refuses sensitive input with MiniMax’s reason and what to do', async () => {
    const error = await upstreamError(adapter.submitVideo!(credential, request({ prompt: `a ${MINIMAX_SENSITIVE_WORD}` })));
    expect(error).toMatchObject({ kind: 'bad_request', code: 'minimax_1026' });
    expect(error.message).toMatch(/^input new_sensitive: MiniMax flagged the prompt or image as sensitive content\. Change/);
  });

  it('gets 2049 for a revoked key, and proves a good one with the file list', async () => {
    fake.revoke(MINIMAX_KEYS[0]!);
    expect(await upstreamError(adapter.submitVideo!(credential, request()))).toMatchObject({ kind: 'auth', code: 'minimax_2049' });
    expect(await upstreamError(adapter.checkCredential(credential))).toMatchObject({ kind: 'auth' });
    await expect(adapter.checkCredential({ ...credential, apiKey: MINIMAX_KEYS[1]! })).resolves.toBeUndefined();
    expect(last()).toMatchObject({ method: 'GET', path: '/v1/files/list' });
  });

  it('classifies HTTP failures by status, times out and stops on request', async () => {
    fake.decide(() => ({ kind: 'error', status: 502, body: { message: 'Bad Gateway' } }));
    expect(await upstreamError(adapter.submitVideo!(credential, request()))).toMatchObject({ kind: 'server', status: 502 });
    fake.decide(() => ({ kind: 'error', status: 429, body: { base_resp: { status_code: 1002, status_msg: 'rate limit' } } }));
    expect(await upstreamError(adapter.pollVideo!(credential, '1'))).toMatchObject({ kind: 'rate_limit', status: 429, message: 'rate limit' });
    fake.decide(() => ({ kind: 'hang' }));
    expect(await upstreamError(adapter.submitVideo!({ ...credential, timeoutMs: 150 }, request()))).toMatchObject({ kind: 'timeout' });
    const controller = new AbortController();
    const pending = adapter.pollVideo!(credential, '1', controller.signal);
    setTimeout(() => controller.abort(), 20);
    expect(await upstreamError(pending)).toMatchObject({ kind: 'aborted' });
  });
});
