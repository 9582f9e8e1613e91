import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { files } from '../../../db/schema/files.js';
import { solidPng } from '../../../../test/helpers/fake-media-upstreams.js';
import { BFL_KEYS, startFakeBfl, type BflFake } from '../providers/bfl/bfl.fake.js';
import { healthyAccounts } from '../../../../test/helpers/fakes/provider-health.js';
import { pathOf } from '../../../../test/helpers/files.js';
import { ledgerOf, providerEnv, setBalance, walletState } from '../../../../test/helpers/gateway.js';
import { jobEventsWhile } from '../../../../test/helpers/job-stream.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../../test/helpers/test-app.js';

/** POST /v1/ai/image through the real app against a fake of Black Forest Labs' API (two accounts). */
let t: TestApp;
let fake: BflFake;
beforeAll(async () => {
  fake = await startFakeBfl();
  fake.setScript(['Ready']);
  t = await createTestApp({ env: { ...providerEnv('BFL', fake.baseUrl, BFL_KEYS), ALLOW_PRIVATE_NETWORK: 'true' } });
  // Queue messages are stored (an async job's step is run by hand below); no workers take them.
  await t.platform.jobs.start({ workers: false });
});
afterEach(async () => {
  fake.decide(() => ({ kind: 'default' }));
  fake.setScript(['Ready']);
  fake.restoreKeys();
  await healthyAccounts(t, 'bfl');
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

async function customer() {
  const account = await signUp(t.app);
  await setBalance(t, account.user.id, 50_000_000);
  return account;
}
const image = (token: string, payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/v1/ai/image', headers: bearer(token), payload });
const submitsSince = (from: number) => fake.requests.slice(from).filter((r) => r.method === 'POST');

describe('POST /v1/ai/image on BFL', () => {
  it('makes each image as one task (seed + i), polls it to Ready, and stores the bytes without the delivery signature', async () => {
    const { accessToken, user } = await customer();
    const before = await walletState(t, user.id);
    const from = fake.requests.length;
    const response = await image(accessToken, { model: 'bfl/flux-pro-1.1', prompt: 'a red fox in snow', count: 2, width: 1000, height: 600, seed: 10 });
    expect(response.statusCode, response.body).toBe(200);
    const body = json(response);
    expect([body.width, body.height]).toEqual([992, 608]);
    expect(body.usage).toMatchObject({ imagesGenerated: 2, imagesRequested: 2 });
    const submits = submitsSince(from);
    expect(submits.map((s) => s.path)).toEqual(['/v1/flux-pro-1.1', '/v1/flux-pro-1.1']);
    expect(submits.map((s) => s.body.seed).sort()).toEqual([10, 11]);
    for (const submit of submits) expect(submit.body).toMatchObject({ width: 992, height: 608, prompt: 'a red fox in snow', output_format: 'png' });
    for (const submit of submits) expect(BFL_KEYS).toContain(submit.headers['x-key']);

    for (const item of body.images) {
      expect(item.url).toContain('/v1/files/raw/');
      const raw = await t.app.inject({ method: 'GET', url: pathOf(item.url) });
      expect(raw.headers['content-type']).toContain('image/png');
    }
    const stored = await t.platform.db.select().from(files).where(eq(files.ownerId, user.id));
    expect(stored).toHaveLength(2);
    for (const row of stored) {
      expect(row.sourceUrl).toContain('/delivery/');
      expect(row.sourceUrl).not.toMatch(/SECRET|sig=|se=/);
    }
    const model = await t.services.catalog.resolveForGateway('bfl/flux-pro-1.1');
    const charged = await t.services.catalog.estimateTokens(model, { kind: 'image', count: 2 });
    expect(body.usage.creditsConsumed).toBe(charged);
    expect((await walletState(t, user.id)).balance).toBe(before.balance - charged);
  });

  it('edits with FLUX.1 Kontext: the source goes as input_image and the size as its nearest ratio', async () => {
    const { accessToken } = await customer();
    const source = solidPng(48, 27, 90);
    const from = fake.requests.length;
    const response = await image(accessToken, {
      model: 'bfl/flux-kontext-pro',
      prompt: 'make it night',
      initImageUrl: `data:image/png;base64,${source.toString('base64')}`,
      width: 1344,
      height: 768,
    });
    expect(response.statusCode, response.body).toBe(200);
    const [submit] = submitsSince(from);
    expect(submit).toMatchObject({
      path: '/v1/flux-kontext-pro',
      body: { prompt: 'make it night', aspect_ratio: '16:9', input_image: source.toString('base64') },
    });
    expect(submit!.body.width).toBeUndefined();
    expect(json(response).images).toHaveLength(1);
  });

  it('answers a moderated task with 400 and BFL’s reason, and refunds everything', async () => {
    const { accessToken, user } = await customer();
    fake.setScript(['Request Moderated']);
    const before = await walletState(t, user.id);
    const response = await image(accessToken, { model: 'bfl/flux-dev', prompt: 'something moderated' });
    expect(response.statusCode).toBe(400);
    expect(json(response).error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('Request Moderated') });
    expect(await walletState(t, user.id)).toEqual(before);
  });

  it('answers 503 when every key is rejected, charging nothing', async () => {
    const { accessToken, user } = await customer();
    fake.revoke(...BFL_KEYS);
    const before = await walletState(t, user.id);
    const response = await image(accessToken, { model: 'bfl/flux-pro-1.1', prompt: 'x' });
    expect(response.statusCode).toBe(503);
    const { error } = json(response);
    expect(error.code).toBe('PROVIDER_UNAVAILABLE');
    expect(error.details.upstream).toMatchObject({ status: 403, message: 'Not authenticated - Invalid Authentication' });
    expect(await walletState(t, user.id)).toEqual(before);
  });

  it('fails over from a revoked key to the other account', async () => {
    const { accessToken } = await customer();
    fake.revoke(BFL_KEYS[0]!);
    const runs: string[][] = [];
    for (let i = 0; i < 2; i++) {
      const from = fake.requests.length;
      const response = await image(accessToken, { model: 'bfl/flux-pro-1.1', prompt: `fox ${i}` });
      expect(response.statusCode, response.body).toBe(200);
      runs.push(submitsSince(from).map((s) => String(s.headers['x-key'])));
    }
    // Rotation starts one of the two calls on the revoked key; it fails over to the other one.
    expect(runs).toContainEqual([BFL_KEYS[0], BFL_KEYS[1]]);
    for (const run of runs) expect(run.at(-1)).toBe(BFL_KEYS[1]);
  });
});

describe('an async image job on BFL', () => {
  it('runs to completion with its progress streamed (SSE), stores the images and charges once', async () => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { accessToken, user } = await customer();
    const before = await walletState(t, user.id);
    fake.setScript(['Pending', 'Ready']);
    const submitted = await image(accessToken, { model: 'bfl/flux-dev', prompt: 'a paper boat on a pond', count: 2, width: 512, height: 512, async: true });
    expect(submitted.statusCode, submitted.body).toBe(200);
    const { jobId } = json(submitted);
    expect(jobId).toEqual(expect.any(String));

    const events = await jobEventsWhile(address, jobId, accessToken, () => t.services.media.runJob(jobId));
    expect(events[0]).toMatchObject({ type: 'job', job: { jobId, status: 'QUEUED' } });
    const final = events.at(-1)!.job;
    const model = await t.services.catalog.resolveForGateway('bfl/flux-dev');
    const charged = await t.services.catalog.estimateTokens(model, { kind: 'image', count: 2 });
    expect(final).toMatchObject({ status: 'SUCCEEDED', creditsConsumed: charged });
    expect(final.output.images).toHaveLength(2);
    for (const item of final.output.images) expect(item.url).toContain('/v1/files/raw/');

    const after = await walletState(t, user.id);
    expect(after.balance).toBe(before.balance - charged);
    expect(after.ledgerSum).toBe(after.balance);
    expect(-(await ledgerOf(t, jobId)).reduce((sum, row) => sum + row.amount, 0)).toBe(charged);
  });
});
