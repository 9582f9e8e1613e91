import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { files } from '../../../db/schema/files.js';
import { providerAccounts } from '../../../db/schema/gateway.js';
import { jobs } from '../../../db/schema/jobs.js';
import { usageRecords } from '../../../db/schema/usage.js';
import { readMp4Info } from '../../../platform/media/mp4.js';
import { solidPng } from '../../../../test/helpers/fake-media-upstreams.js';
import { GOOGLE_ERRORS, startFakeGoogle, type GoogleFake } from '../providers/google/google-media.fake.js';
import { pathOf } from '../../../../test/helpers/files.js';
import { ledgerOf, providerEnv, setBalance, walletState } from '../../../../test/helpers/gateway.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../../test/helpers/test-app.js';

/**
 * Google's media models through the real app: two accounts (`bad`, whose key Google rejects, and `good`) configured
 * with the OpenAI-compatible base URL the text adapter uses, against the fake Gemini API.
 */
let t: TestApp;
let fake: GoogleFake;
beforeAll(async () => {
  fake = await startFakeGoogle();
  t = await createTestApp({ startJobs: true, env: { ...providerEnv('GOOGLE', fake.openAiBaseUrl, ['bad', 'good']), ALLOW_PRIVATE_NETWORK: 'true' } });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});
beforeEach(() => {
  fake.decide(() => ({ kind: 'default' }));
  fake.setGeminiOutcome('image');
  fake.setVeoScript(['running', 'running', 'succeeded']);
});

const pngSize = (bytes: Buffer) => ({ width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) });
const keyOf = (r: { headers: Record<string, unknown> }) => r.headers['x-goog-api-key'];
const callsTo = (suffix: string, from: number) => fake.requests.slice(from).filter((r) => r.method === 'POST' && r.path.endsWith(suffix));
const image = (token: string, payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/v1/ai/image', headers: bearer(token), payload });

describe('POST /v1/ai/image with Google models', () => {
  it('Gemini 3.1 Flash Image: one call per image at 1K, images in our storage, charged its per-image price', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const from = fake.requests.length;
    const response = await image(accessToken, {
      model: 'google/gemini-3.1-flash-image',
      prompt: 'a red fox in snow',
      count: 2,
      width: 1920,
      height: 1080,
      seed: 5,
    });
    expect(response.statusCode, response.body).toBe(200);
    const body = json(response);
    expect(body.usage).toMatchObject({ imagesGenerated: 2, imagesRequested: 2 });
    const calls = callsTo(':generateContent', from);
    expect(calls.map((c) => c.path)).toEqual([
      '/v1beta/models/gemini-3.1-flash-image:generateContent',
      '/v1beta/models/gemini-3.1-flash-image:generateContent',
    ]);
    expect(calls.map(keyOf)).toEqual(['good', 'good']);
    for (const call of calls) expect(call.body.generationConfig.imageConfig).toEqual({ aspectRatio: '16:9', imageSize: '1K' });
    for (const stored of body.images) {
      expect(stored.url).toContain('/v1/files/raw/');
      const raw = await t.app.inject({ method: 'GET', url: pathOf(stored.url) });
      expect(raw.headers['content-type']).toContain('image/png');
      expect(pngSize(raw.rawPayload)).toEqual({ width: body.width, height: body.height });
    }
    const model = await t.services.catalog.resolveForGateway('google/gemini-3.1-flash-image');
    const price = await t.services.catalog.estimateTokens(model, { kind: 'image', count: 2 });
    expect(body.usage.creditsConsumed).toBe(price);
    expect((await walletState(t, user.id)).balance).toBe(before.balance - price);
  });

  it.each([
    ['google/imagen-4', 'google/gemini-3.1-flash-image'],
    ['google/imagen-4-fast', 'google/gemini-3.1-flash-image'],
    ['google/imagen-4-ultra', 'google/gemini-3-pro-image'],
  ])('%s, shut down by Google, is a 503 MODEL_UNAVAILABLE naming %s: nothing charged, nothing sent', async (slug, replacement) => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const from = fake.requests.length;
    const response = await image(accessToken, { model: slug, prompt: 'a glacier', count: 2 });
    expect(response.statusCode).toBe(503);
    expect(json(response).error).toMatchObject({ code: 'MODEL_UNAVAILABLE', details: { model: slug } });
    expect(json(response).error.message).toContain(`retired by its provider; use "${replacement}" instead`);
    expect(await walletState(t, user.id)).toEqual(before);
    expect(fake.requests.slice(from)).toEqual([]);
    const listed = json(await t.app.inject({ method: 'GET', url: '/v1/models?type=IMAGE' })).items.map((m: { slug: string }) => m.slug);
    expect(listed).not.toContain(slug);
  });

  it('Gemini 3 Pro Image: listed as an image model that edits, and generates through the same path', async () => {
    const listed = json(await t.app.inject({ method: 'GET', url: '/v1/models?type=IMAGE' })).items.find(
      (m: { slug: string }) => m.slug === 'google/gemini-3-pro-image',
    );
    expect(listed).toMatchObject({ features: expect.arrayContaining(['IMAGE_GENERATION', 'IMAGE_EDIT']) });
    const { accessToken } = await signUp(t.app);
    const from = fake.requests.length;
    const response = await image(accessToken, { model: 'google/gemini-3-pro-image', prompt: 'a lighthouse', width: 1024, height: 1024 });
    expect(response.statusCode, response.body).toBe(200);
    expect(callsTo(':generateContent', from).map((c) => [c.path, c.body.generationConfig.imageConfig])).toEqual([
      ['/v1beta/models/gemini-3-pro-image:generateContent', { aspectRatio: '1:1', imageSize: '1K' }],
    ]);
  });

  it('Gemini image edit: the source image travels inline, one call per image with distinct seeds', async () => {
    const { accessToken, user } = await signUp(t.app);
    const source = solidPng(24, 24, 210);
    const from = fake.requests.length;
    const response = await image(accessToken, {
      model: 'google/gemini-2.5-flash-image',
      prompt: 'make the square blue',
      initImageUrl: `data:image/png;base64,${source.toString('base64')}`,
      count: 2,
      width: 1024,
      height: 1024,
      seed: 100,
    });
    expect(response.statusCode, response.body).toBe(200);
    const body = json(response);
    expect(body.usage).toMatchObject({ imagesGenerated: 2, imagesRequested: 2 });
    const calls = callsTo(':generateContent', from);
    expect(calls).toHaveLength(2);
    for (const call of calls) {
      expect(call.body.contents[0].parts).toEqual([
        { text: 'make the square blue' },
        { inline_data: { mime_type: 'image/png', data: source.toString('base64') } },
      ]);
      expect(call.body.generationConfig.imageConfig).toEqual({ aspectRatio: '1:1' });
    }
    expect(new Set(calls.map((c) => c.body.generationConfig.seed)).size).toBe(2);
    const [usage] = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, body.requestId));
    expect(usage).toMatchObject({ status: 'SUCCESS', outputUnits: 2 });
    const stored = await t.platform.db
      .select()
      .from(files)
      .where(and(eq(files.ownerId, user.id), eq(files.kind, 'IMAGE')));
    expect(stored).toHaveLength(2);
  });

  it('a refusal by Google is a 400 with its reason, and nothing is charged', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    fake.setGeminiOutcome('blocked');
    const blocked = await image(accessToken, { model: 'google/gemini-2.5-flash-image', prompt: 'something forbidden' });
    expect(blocked.statusCode).toBe(400);
    expect(json(blocked).error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('PROHIBITED_CONTENT') });
    fake.setGeminiOutcome('image_safety');
    const filtered = await image(accessToken, { model: 'google/gemini-3.1-flash-image', prompt: 'something filtered', count: 2 });
    expect(filtered.statusCode).toBe(400);
    expect(json(filtered).error.message).toContain('safety filters');
    expect(await walletState(t, user.id)).toEqual(before);
  });

  it('a key Google rejects on every account is a 503 PROVIDER_UNAVAILABLE, refunded', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    fake.decide((r) => (r.path.startsWith('/v1beta/models/') ? { kind: 'error', status: 400, body: GOOGLE_ERRORS.badKey } : { kind: 'default' }));
    const response = await image(accessToken, { model: 'google/gemini-3.1-flash-image', prompt: 'x' });
    expect(response.statusCode).toBe(503);
    expect(json(response).error).toMatchObject({
      code: 'PROVIDER_UNAVAILABLE',
      details: { upstream: { code: 'API_KEY_INVALID', status: 400 }, accountsTried: 2 },
    });
    expect(await walletState(t, user.id)).toEqual(before);
  });

  it('fails over from the account whose key Google rejects to the next one', async () => {
    await t.platform.db
      .update(providerAccounts)
      .set({ status: 'ACTIVE', consecutiveFailures: 0, lastFailureAt: null })
      .where(eq(providerAccounts.providerSlug, 'google'));
    t.services.gateway.pool.refresh('google');
    const { accessToken } = await signUp(t.app);
    const keys: unknown[][] = [];
    for (let i = 0; i < 2; i++) {
      const from = fake.requests.length;
      const response = await image(accessToken, { model: 'google/gemini-3.1-flash-image', prompt: `failover ${i}` });
      expect(response.statusCode, response.body).toBe(200);
      keys.push(callsTo(':generateContent', from).map(keyOf));
    }
    // Rotation starts one of the two calls on the bad account: it is refused (auth) and the good one answers.
    expect(keys).toContainEqual(['bad', 'good']);
    const bad = (await t.services.gateway.pool.accounts('google')).find((a) => a.keyHint === 'bad'.slice(-4));
    expect(bad).toMatchObject({ status: 'FAILING', lastErrorCode: 'API_KEY_INVALID' });
  });
});

describe('POST /v1/ai/video with Veo', () => {
  /** Eight seconds of Veo 3 cost more than a new account holds. */
  const VIDEO_BUDGET = 50_000_000;
  const getJob = (token: string, id: string) => t.app.inject({ method: 'GET', url: `/v1/jobs/${id}`, headers: bearer(token) });

  /** Submits a video job and waits for the run worker to hand it to Google; the polls are then run by hand. */
  async function submitted(token: string, payload: Record<string, unknown>) {
    const response = await t.app.inject({ method: 'POST', url: '/v1/ai/video', headers: bearer(token), payload });
    expect(response.statusCode, response.body).toBe(200);
    const handle = json(response);
    for (let i = 0; ; i++) {
      const job = json(await getJob(token, handle.jobId));
      if (job.status !== 'QUEUED') break;
      if (i > 100) throw new Error(`job never started: ${JSON.stringify(job)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const [row] = await t.platform.db.select({ externalId: jobs.externalId }).from(jobs).where(eq(jobs.id, handle.jobId));
    return { ...handle, externalId: row!.externalId as string };
  }

  it('submits with the start frame, polls the operation to completion, stores the clip and charges the reservation once', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setBalance(t, user.id, VIDEO_BUDGET);
    const before = await walletState(t, user.id);
    const frame = solidPng(32, 18);
    const from = fake.requests.length;
    const job = await submitted(accessToken, {
      model: 'google/veo-3',
      prompt: 'a paper boat drifting',
      durationSeconds: 8,
      aspectRatio: '16:9',
      seedImageUrl: `data:image/png;base64,${frame.toString('base64')}`,
    });
    expect(job.externalId).toMatch(/^models\/veo-3\.0-generate-001\/operations\//);
    const [submit] = callsTo(':predictLongRunning', from);
    expect(submit!.body.instances[0]).toEqual({
      prompt: 'a paper boat drifting',
      image: { bytesBase64Encoded: frame.toString('base64'), mimeType: 'image/png' },
    });
    expect(submit!.body.parameters).toMatchObject({ aspectRatio: '16:9', durationSeconds: 8, negativePrompt: expect.any(String) });
    expect(submit!.body.parameters).not.toHaveProperty('seed');

    for (let i = 0; i < 3; i++) await t.services.media.pollJob(job.jobId);
    const done = json(await getJob(accessToken, job.jobId));
    expect(done).toMatchObject({
      status: 'SUCCEEDED',
      creditsConsumed: job.creditsReserved,
      output: { videos: [{ url: expect.stringContaining('/v1/files/raw/'), durationSeconds: 8 }] },
    });
    const clip = await t.app.inject({ method: 'GET', url: pathOf(done.output.videos[0].url) });
    expect(clip.headers['content-type']).toContain('video/mp4');
    expect(readMp4Info(clip.rawPayload).width).toBe(64);
    // The key never left for the signed link, and the link is recorded without its signature.
    expect(fake.signedDownloads().withKey).toBe(0);
    const [stored] = await t.platform.db
      .select()
      .from(files)
      .where(and(eq(files.ownerId, user.id), eq(files.kind, 'VIDEO')));
    expect(stored!.sourceUrl).toContain('/signed/');
    expect(stored!.sourceUrl).not.toMatch(/Signature|SECRET|GoogleAccessId/);
    expect((await ledgerOf(t, job.jobId)).map((r) => [r.kind, r.amount])).toEqual([['USAGE', -job.creditsReserved]]);
    expect((await walletState(t, user.id)).balance).toBe(before.balance - job.creditsReserved);
  });

  it('a video Google filters out fails the job as a refused request and refunds it', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setBalance(t, user.id, VIDEO_BUDGET);
    const before = await walletState(t, user.id);
    fake.setVeoScript(['running', 'filtered']);
    const job = await submitted(accessToken, { model: 'google/veo-3-fast', prompt: 'a concert', durationSeconds: 8 });
    await t.services.media.pollJob(job.jobId);
    expect(json(await getJob(accessToken, job.jobId)).status).toBe('RUNNING');
    await t.services.media.pollJob(job.jobId);
    const failed = json(await getJob(accessToken, job.jobId));
    expect(failed).toMatchObject({ status: 'FAILED', errorCode: 'BAD_REQUEST', creditsConsumed: 0 });
    expect(failed.errorMessage).toContain('We encountered an issue with the audio for your prompt');
    expect(await walletState(t, user.id)).toEqual(before);
  });

  it('refuses sampleCount (Google would bill every sample) and other keys Veo is not sold with, before reserving anything; sends the keys it takes', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setBalance(t, user.id, VIDEO_BUDGET);
    const before = await walletState(t, user.id);
    const from = fake.requests.length;
    for (const [extra, message] of [
      [{ sampleCount: 2 }, 'extra.sampleCount is not taken by model google/veo-3; it takes: resolution, personGeneration.'],
      [{ numberOfVideos: 2 }, 'extra.numberOfVideos is not taken by model google/veo-3'],
      [{ resolution: '4k' }, 'extra.resolution must be one of "720p", "1080p"'],
    ] as const) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/v1/ai/video',
        headers: bearer(accessToken),
        payload: { model: 'google/veo-3', prompt: 'x', extra },
      });
      expect(response.statusCode, JSON.stringify(extra)).toBe(400);
      expect(json(response).error.message).toContain(message);
    }
    expect(await walletState(t, user.id)).toEqual(before);
    expect(callsTo(':predictLongRunning', from)).toEqual([]);

    const job = await submitted(accessToken, {
      model: 'google/veo-3',
      prompt: 'a kite at dusk',
      durationSeconds: 8,
      extra: { resolution: '1080p', personGeneration: 'allow_all' },
    });
    const model = await t.services.catalog.resolveForGateway('google/veo-3');
    expect(job.creditsReserved).toBe(await t.services.catalog.estimateTokens(model, { kind: 'video', seconds: 8 }));
    expect(callsTo(':predictLongRunning', from)[0]!.body.parameters).toMatchObject({ resolution: '1080p', personGeneration: 'allow_all', durationSeconds: 8 });
  });

  it('charges a job cancelled while Google makes it: the Gemini API cannot stop a Veo operation', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setBalance(t, user.id, VIDEO_BUDGET);
    const before = await walletState(t, user.id);
    const job = await submitted(accessToken, { model: 'google/veo-3-fast', prompt: 'a train at night', durationSeconds: 8 });
    const canceled = await t.app.inject({ method: 'POST', url: `/v1/jobs/${job.jobId}/cancel`, headers: bearer(accessToken) });
    expect(json(canceled)).toMatchObject({ status: 'CANCELED', creditsConsumed: job.creditsReserved });
    expect((await ledgerOf(t, job.jobId)).map((r) => [r.kind, r.amount])).toEqual([['USAGE', -job.creditsReserved]]);
    expect(await walletState(t, user.id)).toEqual({ balance: before.balance - job.creditsReserved, ledgerSum: before.ledgerSum - job.creditsReserved });
    const [usage] = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, job.jobId));
    expect(usage).toMatchObject({ status: 'PARTIAL', tokensConsumed: job.creditsReserved, metadata: expect.objectContaining({ canceled: true }) });
  });
});
