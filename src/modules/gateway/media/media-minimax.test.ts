import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { files } from '../../../db/schema/files.js';
import { jobs } from '../../../db/schema/jobs.js';
import { MINIMAX_KEYS, MINIMAX_SENSITIVE_WORD, startFakeMinimax, type MinimaxFake } from '../providers/minimax/minimax.fake.js';
import { healthyAccounts } from '../../../../test/helpers/fakes/provider-health.js';
import { ledgerOf, providerEnv, setBalance, setPlan, walletState } from '../../../../test/helpers/gateway.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../../test/helpers/test-app.js';
import { MAX_VIDEO_JOB_MS } from './video-job.js';

/** POST /v1/ai/video on MiniMax (Hailuo 02) through the real app, the job steps driven by hand (`runJob`, `pollJob`). */
let t: TestApp;
let fake: MinimaxFake;
beforeAll(async () => {
  fake = await startFakeMinimax();
  t = await createTestApp({ env: { ...providerEnv('MINIMAX', fake.baseUrl, MINIMAX_KEYS), ALLOW_PRIVATE_NETWORK: 'true' } });
  // Queue messages are stored (steps are run by hand below); no workers take them.
  await t.platform.jobs.start({ workers: false });
});
afterEach(async () => {
  fake.decide(() => ({ kind: 'default' }));
  fake.setScript(['Preparing', 'Queueing', 'Processing', 'Success'], { status_code: 1027, status_msg: 'output new_sensitive' });
  fake.restoreKeys();
  await healthyAccounts(t, 'minimax');
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
const submit = async (token: string, payload: Record<string, unknown>) => {
  const response = await t.app.inject({ method: 'POST', url: '/v1/ai/video', headers: bearer(token), payload: { model: 'minimax/hailuo-02', ...payload } });
  expect(response.statusCode, response.body).toBe(200);
  return json<{ jobId: string; creditsReserved: number }>(response);
};
const getJob = async (token: string, id: string) => json(await t.app.inject({ method: 'GET', url: `/v1/jobs/${id}`, headers: bearer(token) }));
const keysOfPosts = (from: number) =>
  fake.requests
    .slice(from)
    .filter((r) => r.method === 'POST')
    .map((r) => String(r.headers.authorization).slice('Bearer '.length));

describe('MiniMax video jobs', () => {
  it('submits Hailuo 02 with the resolution and options of extra, polls it to Success, downloads the file without its signature, charges once', async () => {
    const { accessToken, user } = await customer();
    const before = await walletState(t, user.id);
    const { jobId, creditsReserved } = await submit(accessToken, {
      prompt: 'Waves roll in at sunset [Push in]',
      durationSeconds: 10,
      extra: { resolution: '768P', prompt_optimizer: false },
    });
    await t.services.media.runJob(jobId);
    expect(fake.requests.find((r) => r.method === 'POST')?.body).toEqual({
      prompt_optimizer: false,
      model: 'MiniMax-Hailuo-02',
      prompt: 'Waves roll in at sunset [Push in]',
      duration: 10,
      resolution: '768P',
    });
    for (let i = 0; i < 4; i++) await t.services.media.pollJob(jobId);
    const job = await getJob(accessToken, jobId);
    expect(job).toMatchObject({
      status: 'SUCCEEDED',
      creditsConsumed: creditsReserved,
      output: { videos: [{ url: expect.stringContaining('/v1/files/raw/'), durationSeconds: 10 }] },
    });
    const [stored] = await t.platform.db.select().from(files).where(eq(files.ownerId, user.id));
    expect(stored!.sourceUrl).toContain('/download/');
    expect(stored!.sourceUrl).not.toMatch(/Signature|OSSAccessKeyId|Expires/);
    expect(await ledgerOf(t, jobId)).toHaveLength(1);
    expect((await walletState(t, user.id)).balance).toBe(before.balance - creditsReserved);
  });

  it('refunds a video MiniMax withheld as sensitive, and a prompt it refused at submit, as BAD_REQUEST', async () => {
    const { accessToken, user } = await customer();
    const before = await walletState(t, user.id);
    fake.setScript(['Processing', 'Fail']);
    const withheld = await submit(accessToken, { prompt: 'a quiet street', durationSeconds: 6 });
    await t.services.media.runJob(withheld.jobId);
    await t.services.media.pollJob(withheld.jobId);
    await t.services.media.pollJob(withheld.jobId);
    expect(await getJob(accessToken, withheld.jobId)).toMatchObject({
      status: 'FAILED',
      errorCode: 'BAD_REQUEST',
      errorMessage: expect.stringContaining('output new_sensitive'),
    });
    const refused = await submit(accessToken, { prompt: `a ${MINIMAX_SENSITIVE_WORD}`, durationSeconds: 6 });
    await t.services.media.runJob(refused.jobId);
    expect(await getJob(accessToken, refused.jobId)).toMatchObject({
      status: 'FAILED',
      errorCode: 'BAD_REQUEST',
      errorMessage: expect.stringContaining('input new_sensitive'),
    });
    expect(await walletState(t, user.id)).toEqual(before);
  });

  it('fails over from a rejected key, and fails the job (refunded) when no key works', async () => {
    const { accessToken, user } = await customer();
    fake.revoke(MINIMAX_KEYS[0]!);
    const runs: string[][] = [];
    for (let i = 0; i < 2; i++) {
      const from = fake.requests.length;
      const { jobId } = await submit(accessToken, { prompt: `shot ${i}`, durationSeconds: 6 });
      await t.services.media.runJob(jobId);
      expect((await getJob(accessToken, jobId)).status).toBe('RUNNING');
      runs.push(keysOfPosts(from));
    }
    expect(runs).toContainEqual([MINIMAX_KEYS[0], MINIMAX_KEYS[1]]);
    fake.revoke(MINIMAX_KEYS[1]!);
    const before = await walletState(t, user.id);
    const { jobId } = await submit(accessToken, { prompt: 'no key works', durationSeconds: 6 });
    await t.services.media.runJob(jobId);
    expect(await getJob(accessToken, jobId)).toMatchObject({
      status: 'FAILED',
      errorCode: 'PROVIDER_UNAVAILABLE',
      errorMessage: expect.stringContaining('invalid api key'),
    });
    expect(await walletState(t, user.id)).toEqual(before);
  });

  it('fails a task still unfinished after the job time limit as TIMEOUT and refunds it, without asking MiniMax again', async () => {
    const { accessToken, user } = await customer();
    fake.setScript(['Processing']);
    const before = await walletState(t, user.id);
    const { jobId } = await submit(accessToken, { prompt: 'a very slow render', durationSeconds: 6 });
    await t.services.media.runJob(jobId);
    await t.services.media.pollJob(jobId);
    expect((await getJob(accessToken, jobId)).status).toBe('RUNNING');
    t.clock.advance(MAX_VIDEO_JOB_MS + 1000);
    const reads = fake.requests.length;
    await t.services.media.pollJob(jobId);
    // The access token expired with the hour that passed: the job is read from its row.
    const [row] = await t.platform.db.select().from(jobs).where(eq(jobs.id, jobId));
    expect(row).toMatchObject({ status: 'FAILED', errorCode: 'TIMEOUT', tokensConsumed: 0 });
    expect(fake.requests.length).toBe(reads);
    expect(await walletState(t, user.id)).toEqual(before);
  });

  it('reserves and charges 1080P at its own price (more than 768P), sending the resolution to MiniMax', async () => {
    const { accessToken, user } = await customer();
    const model = await t.services.catalog.resolveForGateway('minimax/hailuo-02');
    const standard = await submit(accessToken, { prompt: 'standard clip', durationSeconds: 6 });
    expect(standard.creditsReserved).toBe(await t.services.catalog.estimateTokens(model, { kind: 'video', seconds: 6 }));
    const before = await walletState(t, user.id);
    const sharp = await submit(accessToken, { prompt: 'sharp clip', durationSeconds: 6, extra: { resolution: '1080P' } });
    expect(sharp.creditsReserved).toBe(await t.services.catalog.estimateTokens(model, { kind: 'video', seconds: 6 }, { second: 8.17 }));
    expect(sharp.creditsReserved).toBeGreaterThan(standard.creditsReserved);
    expect((await walletState(t, user.id)).balance).toBe(before.balance - sharp.creditsReserved);
    await t.services.media.runJob(sharp.jobId);
    expect(fake.requests.find((r) => r.method === 'POST' && r.body?.prompt === 'sharp clip')?.body).toMatchObject({ resolution: '1080P', duration: 6 });
    for (let i = 0; i < 4; i++) await t.services.media.pollJob(sharp.jobId);
    expect(await getJob(accessToken, sharp.jobId)).toMatchObject({ status: 'SUCCEEDED', creditsConsumed: sharp.creditsReserved });
    expect((await ledgerOf(t, sharp.jobId)).map((r) => [r.kind, r.amount])).toEqual([['USAGE', -sharp.creditsReserved]]);
    expect((await walletState(t, user.id)).balance).toBe(before.balance - sharp.creditsReserved);
  });

  it('refuses undeclared or unpriced extra keys with 400 before reserving anything', async () => {
    const { accessToken, user } = await customer();
    const before = await walletState(t, user.id);
    const posts = fake.requests.length;
    for (const [extra, message] of [
      [{ foo: 1 }, 'extra.foo is not taken by model minimax/hailuo-02; it takes: resolution, prompt_optimizer, fast_pretreatment.'],
      [{ callback_url: 'https://attacker.example/hook' }, 'extra.callback_url is not taken by model minimax/hailuo-02'],
      [{ resolution: '512P' }, 'extra.resolution must be one of "768P", "1080P"'],
      [{ prompt_optimizer: 'yes' }, 'extra.prompt_optimizer must be true or false'],
    ] as const) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/v1/ai/video',
        headers: bearer(accessToken),
        payload: { model: 'minimax/hailuo-02', prompt: 'x', extra },
      });
      expect(response.statusCode, JSON.stringify(extra)).toBe(400);
      expect(json(response).error.message).toContain(message);
    }
    expect(await walletState(t, user.id)).toEqual(before);
    expect(fake.requests.length).toBe(posts);
  });

  it('charges a job cancelled while MiniMax makes it (MiniMax cannot stop tasks); refunds none of it', async () => {
    const { accessToken, user } = await customer();
    const before = await walletState(t, user.id);
    const { jobId, creditsReserved } = await submit(accessToken, { prompt: 'cancelled at MiniMax', durationSeconds: 6 });
    await t.services.media.runJob(jobId);
    const canceled = await t.app.inject({ method: 'POST', url: `/v1/jobs/${jobId}/cancel`, headers: bearer(accessToken) });
    expect(json(canceled)).toMatchObject({ status: 'CANCELED', creditsConsumed: creditsReserved });
    expect((await ledgerOf(t, jobId)).map((r) => [r.kind, r.amount])).toEqual([['USAGE', -creditsReserved]]);
    expect(await walletState(t, user.id)).toEqual({ balance: before.balance - creditsReserved, ledgerSum: before.ledgerSum - creditsReserved });
  });
});
