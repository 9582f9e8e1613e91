import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { jobs } from '../../../db/schema/jobs.js';
import { solidPng, type MediaFakeRequest } from '../../../../test/helpers/fake-media-upstreams.js';
import { klingApiKey, startFakeKling, type KlingFake } from '../providers/kling/kling.fake.js';
import { healthyAccounts } from '../../../../test/helpers/fakes/provider-health.js';
import { pathOf } from '../../../../test/helpers/files.js';
import { ledgerOf, providerEnv, setBalance, setPlan, walletState } from '../../../../test/helpers/gateway.js';
import { jobEventsWhile } from '../../../../test/helpers/job-stream.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../../test/helpers/test-app.js';

/**
 * POST /v1/ai/video on Kling through the real app (two accounts, JWT-signed), the job steps driven by hand
 * (`runJob`, `pollJob`: the code the queue workers run) so no test waits for the queue's timers.
 */
let t: TestApp;
let fake: KlingFake;
beforeAll(async () => {
  fake = await startFakeKling();
  t = await createTestApp({
    env: { ...providerEnv('KLING', fake.baseUrl, [klingApiKey('AKalpha0001'), klingApiKey('AKbravo0002')]), ALLOW_PRIVATE_NETWORK: 'true' },
  });
  // Queue messages are stored (steps are run by hand below); no workers take them.
  await t.platform.jobs.start({ workers: false });
});
afterEach(async () => {
  fake.decide(() => ({ kind: 'default' }));
  fake.setScript(['submitted', 'processing', 'processing', 'succeed']);
  fake.restoreKeys();
  await healthyAccounts(t, 'kling');
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

async function customer() {
  const account = await signUp(t.app);
  await setBalance(t, account.user.id, 100_000_000);
  // Room for several jobs at a time (the free plan runs one).
  await setPlan(t, account.user.id, 'studio');
  return account;
}
const frame = `data:image/png;base64,${solidPng(32, 18).toString('base64')}`;
const video = (token: string, payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/v1/ai/video', headers: bearer(token), payload });
const getJob = async (token: string, id: string) => json(await t.app.inject({ method: 'GET', url: `/v1/jobs/${id}`, headers: bearer(token) }));
/** The access key a request was signed for (the `iss` of its JWT), also when Kling refused it. */
const issuerOf = (request: MediaFakeRequest) =>
  JSON.parse(Buffer.from(String(request.headers.authorization).split('.')[1]!, 'base64url').toString()).iss as string;

describe('Kling video jobs', () => {
  it('runs a job to completion with the extra keys at Kling, streaming each change (SSE), charging once', async () => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { accessToken, user } = await customer();
    const before = await walletState(t, user.id);
    const camera = { type: 'simple', config: { horizontal: 0, vertical: 0, pan: 0, tilt: 0, roll: 0, zoom: 5 } };
    const submitted = await video(accessToken, {
      model: 'kling/kling-v2-1-master',
      prompt: 'A lantern floats over a dark lake',
      durationSeconds: 10,
      aspectRatio: '1:1',
      negativePrompt: 'text, watermark',
      extra: { cfg_scale: 0.5, camera_control: camera },
    });
    expect(submitted.statusCode, submitted.body).toBe(200);
    const { jobId, creditsReserved } = json(submitted);

    const events = await jobEventsWhile(address, jobId, accessToken, async () => {
      await t.services.media.runJob(jobId);
      for (let i = 0; i < 4; i++) await t.services.media.pollJob(jobId);
    });
    expect(events[0]).toMatchObject({ type: 'job', job: { jobId, status: 'QUEUED' } });
    expect(events.map((e) => e.job.status)).toContain('RUNNING');
    const final = events.at(-1)!.job;
    expect(final).toMatchObject({
      status: 'SUCCEEDED',
      creditsConsumed: creditsReserved,
      output: { videos: [{ url: expect.stringContaining('/v1/files/raw/'), durationSeconds: 10 }] },
    });

    const create = fake.requests.find((r) => r.method === 'POST' && r.body?.prompt === 'A lantern floats over a dark lake')!;
    expect(create.path).toBe('/v1/videos/text2video');
    expect(create.body).toEqual({
      cfg_scale: 0.5,
      camera_control: camera,
      model_name: 'kling-v2-1-master',
      prompt: 'A lantern floats over a dark lake',
      negative_prompt: 'text, watermark',
      duration: '10',
      aspect_ratio: '1:1',
    });
    const [row] = await t.platform.db.select({ externalId: jobs.externalId }).from(jobs).where(eq(jobs.id, jobId));
    expect(row!.externalId).toMatch(/^text2video:\d+$/);
    const clip = await t.app.inject({ method: 'GET', url: pathOf(final.output.videos[0].url) });
    expect(clip.rawPayload.toString('latin1', 4, 8)).toBe('ftyp');
    expect((await ledgerOf(t, jobId)).map((r) => [r.kind, r.amount])).toEqual([['USAGE', -creditsReserved]]);
    expect((await walletState(t, user.id)).balance).toBe(before.balance - creditsReserved);
  });

  it('fails a task Kling’s risk control refused as BAD_REQUEST and refunds the reservation', async () => {
    const { accessToken, user } = await customer();
    fake.setScript(['processing', 'failed'], 'Failure to pass the risk control system');
    const before = await walletState(t, user.id);
    const { jobId } = json(await video(accessToken, { model: 'kling/kling-v2-1-master', prompt: 'refused later' }));
    await t.services.media.runJob(jobId);
    await t.services.media.pollJob(jobId);
    await t.services.media.pollJob(jobId);
    const job = await getJob(accessToken, jobId);
    expect(job).toMatchObject({ status: 'FAILED', errorCode: 'BAD_REQUEST', creditsConsumed: 0 });
    expect(job.errorMessage).toContain('risk control');
    expect(await walletState(t, user.id)).toEqual(before);
  });

  it('fails the job as PROVIDER_UNAVAILABLE when Kling rejects every account’s token, charging nothing', async () => {
    const { accessToken, user } = await customer();
    fake.revoke('AKalpha0001', 'AKbravo0002');
    const before = await walletState(t, user.id);
    const { jobId } = json(await video(accessToken, { model: 'kling/kling-v2-1-master', prompt: 'no keys' }));
    await t.services.media.runJob(jobId);
    const job = await getJob(accessToken, jobId);
    expect(job).toMatchObject({ status: 'FAILED', errorCode: 'PROVIDER_UNAVAILABLE' });
    expect(job.errorMessage).toContain('Authorization is invalid');
    expect(await walletState(t, user.id)).toEqual(before);
  });

  it('fails over from an account Kling rejects to the other one, which then serves the polls', async () => {
    const { accessToken } = await customer();
    fake.revoke('AKalpha0001');
    const runs: string[][] = [];
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const from = fake.requests.length;
      const { jobId } = json(await video(accessToken, { model: 'kling/kling-v2-1', prompt: `frame ${i}`, seedImageUrl: frame }));
      await t.services.media.runJob(jobId);
      expect((await getJob(accessToken, jobId)).status).toBe('RUNNING');
      runs.push(
        fake.requests
          .slice(from)
          .filter((r) => r.method === 'POST')
          .map(issuerOf),
      );
      ids.push(jobId);
    }
    expect(runs).toContainEqual(['AKalpha0001', 'AKbravo0002']);
    for (const run of runs) expect(run.at(-1)).toBe('AKbravo0002');
    const from = fake.requests.length;
    for (let i = 0; i < 4; i++) await t.services.media.pollJob(ids[0]!);
    expect((await getJob(accessToken, ids[0]!)).status).toBe('SUCCEEDED');
    expect(
      fake.requests
        .slice(from)
        .filter((r) => r.path.startsWith('/v1/videos/image2video/'))
        .map(issuerOf),
    ).toEqual(Array(4).fill('AKbravo0002'));
  });

  it('asks Kling for pro mode on kling-v2-1-pro, which shares kling-v2-1 upstream', async () => {
    const { accessToken } = await customer();
    const { jobId } = json(await video(accessToken, { model: 'kling/kling-v2-1-pro', prompt: 'pro frame', seedImageUrl: frame }));
    await t.services.media.runJob(jobId);
    const create = fake.requests.find((r) => r.method === 'POST' && r.body?.prompt === 'pro frame')!;
    expect(create.body).toMatchObject({ model_name: 'kling-v2-1', mode: 'pro' });
  });

  it('keeps kling-v2-1 in standard mode, with the caller’s other extra keys', async () => {
    const { accessToken } = await customer();
    const { jobId } = json(await video(accessToken, { model: 'kling/kling-v2-1', prompt: 'std frame', seedImageUrl: frame, extra: { cfg_scale: 0.4 } }));
    await t.services.media.runJob(jobId);
    const create = fake.requests.find((r) => r.method === 'POST' && r.body?.prompt === 'std frame')!;
    expect(create.body).toMatchObject({ model_name: 'kling-v2-1', mode: 'std', cfg_scale: 0.4 });
  });

  it('refuses extra keys Kling’s models are not sold with (mode: pro costs more) or Kling does not take, before reserving anything', async () => {
    const { accessToken, user } = await customer();
    const before = await walletState(t, user.id);
    const posts = fake.requests.length;
    for (const [extra, message] of [
      [{ mode: 'pro' }, 'extra.mode is not taken by model kling/kling-v2-1; it takes: cfg_scale, camera_control, static_mask, dynamic_masks.'],
      [{ callback_url: 'https://attacker.example/hook' }, 'extra.callback_url is not taken by model kling/kling-v2-1'],
      [{ trajectories: [{ x: 1, y: 2 }] }, 'extra.trajectories is not taken'],
      [{ cfg_scale: 2 }, 'extra.cfg_scale must be between 0 and 1'],
    ] as const) {
      const response = await video(accessToken, { model: 'kling/kling-v2-1', prompt: 'refused', seedImageUrl: frame, extra });
      expect(response.statusCode, JSON.stringify(extra)).toBe(400);
      expect(json(response).error.message).toContain(message);
    }
    expect(await walletState(t, user.id)).toEqual(before);
    expect(fake.requests.length).toBe(posts);
    expect(json(await t.app.inject({ method: 'GET', url: '/v1/jobs', headers: bearer(accessToken) })).items).toEqual([]);
  });

  it('charges the full price for a job cancelled once Kling has it (Kling cannot stop it), and refunds one still queued here', async () => {
    const { accessToken, user } = await customer();
    const before = await walletState(t, user.id);
    const running = json(await video(accessToken, { model: 'kling/kling-v2-1-master', prompt: 'cancel after submit' }));
    await t.services.media.runJob(running.jobId);
    expect((await getJob(accessToken, running.jobId)).status).toBe('RUNNING');
    const calls = fake.requests.length;
    const canceled = await t.app.inject({ method: 'POST', url: `/v1/jobs/${running.jobId}/cancel`, headers: bearer(accessToken) });
    expect(canceled.statusCode, canceled.body).toBe(200);
    expect(json(canceled)).toMatchObject({
      status: 'CANCELED',
      creditsConsumed: running.creditsReserved,
      errorMessage: expect.stringContaining('cannot stop it'),
    });
    expect(fake.requests.length).toBe(calls);
    expect((await ledgerOf(t, running.jobId)).map((r) => [r.kind, r.amount])).toEqual([['USAGE', -running.creditsReserved]]);
    expect(await walletState(t, user.id)).toEqual({ balance: before.balance - running.creditsReserved, ledgerSum: before.ledgerSum - running.creditsReserved });
    // Later steps find the job closed: nothing more is charged or refunded.
    await t.services.media.pollJob(running.jobId);
    expect((await walletState(t, user.id)).balance).toBe(before.balance - running.creditsReserved);

    const queued = json(await video(accessToken, { model: 'kling/kling-v2-1-master', prompt: 'cancel before submit' }));
    const refunded = await t.app.inject({ method: 'POST', url: `/v1/jobs/${queued.jobId}/cancel`, headers: bearer(accessToken) });
    expect(json(refunded)).toMatchObject({ status: 'CANCELED', creditsConsumed: 0 });
    await t.services.media.runJob(queued.jobId);
    expect(fake.requests.some((r) => r.body?.prompt === 'cancel before submit')).toBe(false);
    expect((await walletState(t, user.id)).balance).toBe(before.balance - running.creditsReserved);
  });
});
