import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { passwordResets } from '../../src/db/schema/account.js';
import { users } from '../../src/db/schema/auth.js';
import { files } from '../../src/db/schema/files.js';
import { generations } from '../../src/db/schema/library.js';
import { playgroundRuns } from '../../src/db/schema/playground.js';
import { usageRecords } from '../../src/db/schema/usage.js';
import { walletLedger } from '../../src/db/schema/wallet.js';
import { PLAYGROUND_IDENTITY_EMAIL } from '../../src/modules/auth/index.js';
import { PLAYGROUND_FLOAT_TOKENS } from '../../src/modules/playground/identity.js';
import { catalogFixtures } from '../helpers/catalog-fixtures.js';
import { pathOf, samplePng } from '../helpers/files.js';
import { parseSse, walletState } from '../helpers/gateway.js';
import { bearer, createTestApp, json, signUpAs, type TestApp } from '../helpers/test-app.js';

let t: TestApp;
let f: ReturnType<typeof catalogFixtures>;
let admin: Awaited<ReturnType<typeof signUpAs>>;
let superAdmin: Awaited<ReturnType<typeof signUpAs>>;

beforeAll(async () => {
  t = await createTestApp({ startJobs: true });
  f = catalogFixtures(t);
  admin = await signUpAs(t, 'ADMIN');
  superAdmin = await signUpAs(t, 'SUPER_ADMIN');
});
afterAll(async () => t?.close());

const post = (path: string, payload: object, token = admin.accessToken) =>
  t.app.inject({ method: 'POST', url: `/v1/admin/playground${path}`, headers: bearer(token), payload });
const get = (path: string, token = admin.accessToken) => t.app.inject({ method: 'GET', url: `/v1/admin/playground${path}`, headers: bearer(token) });
const identityId = () => t.services.playground.identityId();
const usageOf = (requestId: string) => t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, requestId));
const generationOf = (requestId: string) => t.platform.db.select().from(generations).where(eq(generations.requestId, requestId));
const runOf = async (id: string) => (await t.platform.db.select().from(playgroundRuns).where(eq(playgroundRuns.id, id)))[0]!;
const playgroundPlanId = async () => (await t.services.plans.playgroundPlan())!.id;
const allowed = async (slug: string) => t.services.plans.isModelAllowed(await playgroundPlanId(), await f.modelId(slug));

/** Nothing of a playground run may land on the operator's own account. */
async function expectNothingUnder(userId: string) {
  expect(await t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId))).toEqual([]);
  expect(await t.platform.db.select().from(generations).where(eq(generations.userId, userId))).toEqual([]);
}

describe('the internal identity', () => {
  it('a text run goes through the gateway as the internal identity: its usage record and generation, none under the admin', async () => {
    const adminWallet = await walletState(t, admin.user.id);
    expect(await allowed('local/text')).toBe(false);
    const response = await post('/text', { model: 'local/text', messages: [{ role: 'user', content: 'Say hello to the playground' }] });
    expect(response.statusCode, response.body).toBe(200);
    const body = json(response);
    expect(body).toMatchObject({
      text: expect.any(String),
      model: 'local/text',
      requestId: expect.any(String),
      usage: { creditsConsumed: expect.any(Number) },
    });
    expect(body.usage.creditsConsumed).toBeGreaterThan(0);
    expect(response.headers['x-ai-request-id']).toBe(body.requestId);

    const id = await identityId();
    const [usage] = await usageOf(body.requestId);
    expect(usage).toMatchObject({ userId: id, status: 'SUCCESS', operation: 'text.generate', tokensConsumed: body.usage.creditsConsumed });
    const [generation] = await generationOf(body.requestId);
    expect(generation).toMatchObject({ userId: id, kind: 'TEXT' });
    await expectNothingUnder(admin.user.id);
    expect(await walletState(t, admin.user.id)).toEqual(adminWallet);

    // The run records the operator; the model joined the internal plan's allow-list on this first use.
    const run = await runOf(String(response.headers['x-playground-run-id']));
    expect(run).toMatchObject({
      adminId: admin.user.id,
      kind: 'TEXT',
      modelSlug: 'local/text',
      status: 'SUCCEEDED',
      requestId: body.requestId,
      tokensCharged: body.usage.creditsConsumed,
    });
    expect(await allowed('local/text')).toBe(true);
  });

  it('is the PLAYGROUND_IDENTITY_EMAIL account on the internal unlimited plan; it has no password and cannot sign in', async () => {
    const id = await identityId();
    const [user] = await t.platform.db.select().from(users).where(eq(users.id, id));
    expect(user).toMatchObject({ email: PLAYGROUND_IDENTITY_EMAIL, role: 'USER', status: 'ACTIVE' });
    expect((await t.services.subscriptions.activeFor(id))!.plan).toMatchObject({ slug: 'internal-playground', internal: true });
    for (const password of ['', '!no-password', 'correct horse battery']) {
      const login = await t.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: PLAYGROUND_IDENTITY_EMAIL, password: password || 'x' } });
      expect(login.statusCode).toBe(401);
    }
    // Nor can a password be set through a reset: no code is issued for it.
    await t.services.account.password.issueResetCode(PLAYGROUND_IDENTITY_EMAIL, t.clock.now());
    expect(await t.platform.db.select().from(passwordResets).where(eq(passwordResets.userId, id))).toEqual([]);
    // A second run by another operator reuses the one identity.
    const again = await post('/text', { model: 'local/text', messages: [{ role: 'user', content: 'again' }] }, superAdmin.accessToken);
    expect(again.statusCode).toBe(200);
    expect((await usageOf(json(again).requestId))[0]!.userId).toBe(id);
    expect(await t.platform.db.select().from(users).where(eq(users.email, PLAYGROUND_IDENTITY_EMAIL))).toHaveLength(1);
  });

  it('its wallet never blocks a run: an emptied wallet is funded again, a run above the float gets its shortfall granted', async () => {
    const id = await identityId();
    const { tokens } = await t.services.wallet.balance({ userId: id });
    await t.services.wallet.debit({ userId: id, amount: tokens, idempotencyKey: `test-drain:${id}`, note: 'test: drain' });
    const drained = await post('/text', { model: 'local/text', messages: [{ role: 'user', content: 'still works' }] });
    expect(drained.statusCode, drained.body).toBe(200);

    // A model priced above the whole float: refused at reserve, its shortfall granted, run once.
    const original = (await t.services.catalog.getBySlug('local/image'))!.row.pricing;
    await f.setModel('local/image', { pricing: { currency: 'USD', image: 5_000 } });
    try {
      const price = await t.services.catalog.estimateTokens(await t.services.catalog.resolveForGateway('local/image'), { kind: 'image', count: 1 });
      expect(price).toBeGreaterThan(PLAYGROUND_FLOAT_TOKENS);
      const response = await post('/image', { model: 'local/image', prompt: 'a very expensive picture', width: 64, height: 64 });
      expect(response.statusCode, response.body).toBe(200);
      expect(json(response).usage.creditsConsumed).toBe(price);
      expect(await usageOf(json(response).requestId)).toHaveLength(1);
    } finally {
      await f.setModel('local/image', { pricing: original });
    }
    const wallet = await walletState(t, id);
    expect(wallet.balance).toBe(wallet.ledgerSum);
    expect(wallet.balance).toBeGreaterThanOrEqual(0);
    const grants = await t.platform.db.select().from(walletLedger).where(eq(walletLedger.kind, 'GRANT'));
    expect(grants.filter((g) => g.note?.startsWith('Admin playground float')).length).toBeGreaterThanOrEqual(3);
    await expectNothingUnder(admin.user.id);
  });

  it('a USER is refused and nothing runs', async () => {
    const user = await signUpAs(t, 'USER');
    const before = await t.platform.db.select().from(playgroundRuns);
    const response = await post('/text', { model: 'local/text', messages: [{ role: 'user', content: 'hi' }] }, user.accessToken);
    expect(response.statusCode).toBe(403);
    expect(json(response).error.code).toBe('FORBIDDEN');
    expect(await t.platform.db.select().from(playgroundRuns)).toHaveLength(before.length);
  });
});

describe('model picker', () => {
  it('lists only servable models and whether each is on the allow-list', async () => {
    const list = async (query = '') =>
      json(await get(`/models${query}`)).items as Array<{ slug: string; type: string; provider: { slug: string; status: string }; allowListed: boolean }>;
    const items = await list();
    const slugs = items.map((m) => m.slug);
    expect(slugs).toEqual(expect.arrayContaining(['local/text', 'local/image', 'local/video', 'local/speech']));
    expect(items.find((m) => m.slug === 'local/text')!.allowListed).toBe(true);
    for (const m of items) expect(['ACTIVE', 'DEGRADED']).toContain(m.provider.status);
    // Providers without credentials stay INACTIVE: none of their models is offered.
    const openai = [...(await t.services.catalog.snapshot()).bySlug.values()].filter((e) => e.provider.slug === 'openai');
    expect(openai.length).toBeGreaterThan(0);
    expect(openai[0]!.provider.status).toBe('INACTIVE');
    expect(slugs.some((s) => s.startsWith('openai/'))).toBe(false);
    expect((await list('?type=IMAGE')).every((m) => m.type === 'IMAGE')).toBe(true);

    await f.setModel('local/vision', { status: 'DISABLED' });
    try {
      expect((await list()).map((m) => m.slug)).not.toContain('local/vision');
    } finally {
      await f.setModel('local/vision', { status: 'ACTIVE' });
    }
    const localStatus = (await t.services.catalog.snapshot()).providersBySlug.get('local')!.status;
    for (const status of ['DISABLED', 'INACTIVE'] as const) {
      await t.services.catalog.setProviderStatus('local', status);
      try {
        expect((await list()).filter((m) => m.provider.slug === 'local')).toEqual([]);
      } finally {
        await t.services.catalog.setProviderStatus('local', localStatus);
      }
    }
    expect((await list()).map((m) => m.slug)).toContain('local/vision');
  });

  it('refuses unknown query keys', async () => {
    expect((await get('/models?nope=1')).statusCode).toBe(400);
  });
});

describe('text streaming', () => {
  for (const [path, payload] of [
    ['/text/stream', {}],
    ['/text', { stream: true }],
  ] as const) {
    it(`${path}${'stream' in payload ? ' with stream: true' : ''} streams server-sent events and meters the run under the identity`, async () => {
      const response = await post(path, { model: 'local/text', messages: [{ role: 'user', content: 'Stream me a short line' }], ...payload });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toContain('text/event-stream');
      const events = parseSse(response.body);
      expect(events.filter((e) => e.type === 'text').length).toBeGreaterThan(0);
      expect(events.at(-1)).toMatchObject({ type: 'finish' });
      expect(events.some((e) => e.type === 'usage')).toBe(true);
      const requestId = String(response.headers['x-ai-request-id']);
      expect((await usageOf(requestId))[0]).toMatchObject({ userId: await identityId(), status: 'SUCCESS' });
      // The run is recorded once the stream has ended, so it may land just after the answer's last byte.
      const runOf = async () => (await t.platform.db.select().from(playgroundRuns).where(eq(playgroundRuns.requestId, requestId)))[0];
      let run = await runOf();
      for (const deadline = Date.now() + 5_000; !run && Date.now() < deadline; run = await runOf()) await new Promise((resolve) => setImmediate(resolve));
      expect(run).toMatchObject({ kind: 'TEXT_STREAM', status: 'SUCCEEDED', adminId: admin.user.id });
    });
  }

  it('a refusal before the stream opens is JSON and a FAILED run (a request with no user message is 400)', async () => {
    const missing = await post('/text/stream', { model: 'local/missing', messages: [{ role: 'user', content: 'x' }] });
    expect(missing.statusCode).toBe(404);
    expect(json(missing).error.code).toBe('NOT_FOUND');
    const [failed] = await t.platform.db
      .select()
      .from(playgroundRuns)
      .where(and(eq(playgroundRuns.modelSlug, 'local/missing'), eq(playgroundRuns.kind, 'TEXT_STREAM')));
    expect(failed).toMatchObject({ status: 'FAILED', errorCode: 'NOT_FOUND', requestId: null });
    const noUser = await post('/text', { model: 'local/text', messages: [{ role: 'system', content: 'only a system prompt' }] });
    expect(noUser.statusCode).toBe(400);
  });
});

describe('media runs', () => {
  it('image, image-to-image from an upload, enhance-image and audio run as the identity, first use allow-listing each model', async () => {
    const id = await identityId();
    expect(await allowed('local/speech')).toBe(false);
    const image = await post('/image', { model: 'local/image', prompt: 'a lighthouse at dusk', width: 64, height: 64, count: 2 });
    expect(image.statusCode, image.body).toBe(200);
    expect(json(image)).toMatchObject({ images: [{ mimeType: 'image/png' }, { mimeType: 'image/png' }], usage: { imagesGenerated: 2 } });
    expect((await generationOf(json(image).requestId))[0]).toMatchObject({ userId: id, kind: 'IMAGE' });

    const upload = await post('/upload', { contentType: 'image/png', data: samplePng(48).toString('base64'), filename: 'source.png' });
    expect(upload.statusCode, upload.body).toBe(201);
    const uploaded = json(upload);
    expect(uploaded).toMatchObject({ fileId: expect.any(String), url: expect.stringContaining('/v1/files/raw/'), contentType: 'image/png' });
    const [file] = await t.platform.db.select().from(files).where(eq(files.id, uploaded.fileId));
    expect(file).toMatchObject({ ownerId: id, kind: 'INIT_IMAGE', status: 'READY' });
    expect((await t.app.inject({ method: 'GET', url: pathOf(uploaded.url) })).headers['content-type']).toContain('image/png');

    const i2i = await post('/image', { model: 'local/image', prompt: 'the same, at night', initImageUrl: uploaded.url, strength: 0.5, width: 64, height: 64 });
    expect(i2i.statusCode, i2i.body).toBe(200);
    const enhanced = await post('/enhance-image', { model: 'local/image', imageUrl: uploaded.url });
    expect(enhanced.statusCode, enhanced.body).toBe(200);
    expect((await generationOf(json(enhanced).requestId))[0]).toMatchObject({ userId: id, tags: expect.arrayContaining(['enhanced']) });

    const audio = await post('/audio', { model: 'local/speech', text: 'Testing the playground voice.' });
    expect(audio.statusCode, audio.body).toBe(200);
    expect(json(audio)).toMatchObject({ model: 'local/speech', audio: { mimeType: 'audio/wav' } });
    expect((await usageOf(json(audio).requestId))[0]).toMatchObject({ userId: id, status: 'SUCCESS' });
    expect(await allowed('local/speech')).toBe(true);

    const kinds = await Promise.all([image, i2i, enhanced, audio].map(async (r) => (await runOf(String(r.headers['x-playground-run-id']))).kind));
    expect(kinds).toEqual(['IMAGE', 'IMAGE', 'ENHANCE_IMAGE', 'AUDIO']);
    await expectNothingUnder(admin.user.id);
  });

  it('refuses an upload whose bytes are not the declared image type, storing nothing', async () => {
    const before = await t.platform.db
      .select()
      .from(files)
      .where(eq(files.ownerId, await identityId()));
    const wrong = await post('/upload', { contentType: 'image/jpeg', data: samplePng(16).toString('base64') });
    expect(wrong.statusCode).toBe(400);
    expect(json(wrong).error.message).toContain('image/jpeg');
    const text = await post('/upload', { contentType: 'image/png', data: Buffer.from('not an image at all').toString('base64') });
    expect(text.statusCode).toBe(400);
    expect(
      await t.platform.db
        .select()
        .from(files)
        .where(eq(files.ownerId, await identityId())),
    ).toHaveLength(before.length);
  });

  it('enhance-prompt rewrites a prompt with a multimodal model as the identity', async () => {
    const response = await post('/enhance-prompt', { model: 'local/vision', prompt: 'a cat', target: 'image' });
    expect(response.statusCode, response.body).toBe(200);
    expect(json(response).enhanced).toEqual(expect.any(String));
    const run = await runOf(String(response.headers['x-playground-run-id']));
    expect(run).toMatchObject({ kind: 'ENHANCE_PROMPT', status: 'SUCCEEDED', modelSlug: 'local/vision' });
    const [usage] = await t.platform.db
      .select()
      .from(usageRecords)
      .where(and(eq(usageRecords.operation, 'prompt.enhance'), eq(usageRecords.userId, await identityId())));
    expect(usage).toBeDefined();
  });

  it('a video job is polled through the playground route to completion, and its run takes the outcome', async () => {
    const id = await identityId();
    const response = await post('/video', { model: 'local/video', prompt: 'waves at the pier', durationSeconds: 1 });
    expect(response.statusCode, response.body).toBe(200);
    const handle = json(response);
    expect(handle).toEqual({ jobId: expect.any(String), status: 'QUEUED', creditsReserved: expect.any(Number) });
    const runId = String(response.headers['x-playground-run-id']);
    expect(await runOf(runId)).toMatchObject({ kind: 'VIDEO', status: 'QUEUED', jobId: handle.jobId });

    const poll = async (done: (job: any) => boolean) => {
      const started = Date.now();
      for (;;) {
        const job = json(await get(`/video/${handle.jobId}`));
        if (done(job)) return job;
        if (Date.now() - started > 30_000) throw new Error(`job stuck: ${JSON.stringify(job)}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };
    await poll((job) => job.status === 'RUNNING' && job.estimatedSeconds !== null);
    t.clock.advance(60_000);
    const done = await poll((job) => ['SUCCEEDED', 'FAILED', 'CANCELED'].includes(job.status));
    expect(done).toMatchObject({
      jobId: handle.jobId,
      kind: 'VIDEO',
      status: 'SUCCEEDED',
      creditsConsumed: handle.creditsReserved,
      output: { videos: [{ durationSeconds: 1 }] },
    });
    expect(await runOf(runId)).toMatchObject({ status: 'SUCCEEDED', tokensCharged: handle.creditsReserved });
    expect((await generationOf(handle.jobId))[0]).toMatchObject({ userId: id, kind: 'VIDEO' });
    expect((await usageOf(handle.jobId))[0]).toMatchObject({ userId: id, jobId: handle.jobId, status: 'SUCCESS' });
    await expectNothingUnder(admin.user.id);

    // Someone else's job is not a playground job.
    const user = await signUpAs(t, 'USER');
    const own = json(
      await t.app.inject({
        method: 'POST',
        url: '/v1/ai/video',
        headers: bearer(user.accessToken),
        payload: { model: 'local/video', prompt: 'mine', durationSeconds: 1 },
      }),
    );
    expect((await get(`/video/${own.jobId}`)).statusCode).toBe(404);
    expect((await get('/video/not-a-job')).statusCode).toBe(404);
  });
});

describe('history and generations', () => {
  it('history lists every operator’s runs newest first, pages, and filters by operator and kind', async () => {
    const all = json(await get('/history?limit=100'));
    expect(all.items.length).toBeGreaterThan(5);
    expect(all.items.some((r: any) => r.adminId === superAdmin.user.id)).toBe(true);
    const times = all.items.map((r: any) => r.createdAt);
    expect([...times].sort().reverse()).toEqual(times);
    const mine = json(await get(`/history?adminId=${superAdmin.user.id}`));
    expect(mine.items.length).toBeGreaterThan(0);
    expect(mine.items.every((r: any) => r.adminId === superAdmin.user.id)).toBe(true);
    const videos = json(await get('/history?kind=VIDEO'));
    expect(videos.items.every((r: any) => r.kind === 'VIDEO')).toBe(true);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = json(await get(`/history?limit=2${cursor ? `&cursor=${cursor}` : ''}`));
      seen.push(...page.items.map((r: any) => r.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(all.items.map((r: any) => r.id));
    expect((await get('/history?cursor=@@@')).statusCode).toBe(400);
  });

  it('generations lists the identity’s library items (media by default, TEXT with kind=TEXT)', async () => {
    const media = json(await get('/generations?limit=100'));
    expect(media.items.length).toBeGreaterThan(0);
    expect(media.items.every((g: any) => g.kind !== 'TEXT')).toBe(true);
    const text = json(await get('/generations?kind=TEXT&limit=100'));
    expect(text.items.length).toBeGreaterThan(0);
    const rows = await t.platform.db
      .select()
      .from(generations)
      .where(eq(generations.userId, await identityId()));
    expect(media.items.length + text.items.length).toBe(rows.length);
  });
});

describe('saved conversations', () => {
  it('creates, continues through the gateway, lists, reads and deletes an operator’s own conversations', async () => {
    const created = await post('/conversations', { model: 'local/text', messages: [{ role: 'system', content: 'You are terse.' }] });
    expect(created.statusCode, created.body).toBe(201);
    const conversation = json(created);
    expect(conversation).toMatchObject({
      adminId: admin.user.id,
      model: 'local/text',
      title: 'New conversation',
      messages: [{ role: 'system', content: 'You are terse.' }],
    });

    const first = await post(`/conversations/${conversation.id}/turns`, { content: 'What is a lighthouse?' });
    expect(first.statusCode, first.body).toBe(200);
    const turn = json(first);
    expect(turn.conversation.messages).toEqual([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'What is a lighthouse?' },
      { role: 'assistant', content: turn.reply.text },
    ]);
    expect((await usageOf(turn.reply.requestId))[0]!.userId).toBe(await identityId());
    const second = json(await post(`/conversations/${conversation.id}/turns`, { content: 'And a harbour?' }));
    expect(second.conversation.messages).toHaveLength(5);
    const [run] = await t.platform.db.select().from(playgroundRuns).where(eq(playgroundRuns.requestId, second.reply.requestId));
    expect(run).toMatchObject({ kind: 'CONVERSATION_TURN', conversationId: conversation.id, adminId: admin.user.id });

    const titled = json(await post('/conversations', { model: 'local/text', title: 'Second one' }));
    const list = json(await get('/conversations'));
    expect(list.items.map((c: any) => c.id)).toEqual([titled.id, conversation.id]);
    expect(json(await get(`/conversations/${conversation.id}`)).messages).toHaveLength(5);

    // Another operator sees none of them.
    expect(json(await get('/conversations', superAdmin.accessToken)).items).toEqual([]);
    expect((await get(`/conversations/${conversation.id}`, superAdmin.accessToken)).statusCode).toBe(404);
    expect((await post(`/conversations/${conversation.id}/turns`, { content: 'x' }, superAdmin.accessToken)).statusCode).toBe(404);

    const removed = await t.app.inject({ method: 'DELETE', url: `/v1/admin/playground/conversations/${conversation.id}`, headers: bearer(admin.accessToken) });
    expect(json(removed)).toEqual({ ok: true });
    expect((await get(`/conversations/${conversation.id}`)).statusCode).toBe(404);
    expect(
      (await t.app.inject({ method: 'DELETE', url: `/v1/admin/playground/conversations/${conversation.id}`, headers: bearer(admin.accessToken) })).statusCode,
    ).toBe(404);
  });

  it('a turn on a model that cannot chat is refused and the conversation is unchanged', async () => {
    const conversation = json(await post('/conversations', { model: 'local/image', messages: [{ role: 'user', content: 'draw' }] }));
    expect(conversation.title).toBe('draw');
    const refused = await post(`/conversations/${conversation.id}/turns`, { content: 'hello' });
    expect(refused.statusCode).toBe(400);
    expect(json(await get(`/conversations/${conversation.id}`)).messages).toEqual([{ role: 'user', content: 'draw' }]);
  });
});

describe('analytics', () => {
  it('counts playground runs per UTC day, failed ones beside them, every day of the window listed', async () => {
    const today = t.clock.now().toISOString().slice(0, 10);
    const runs = await t.platform.db.select().from(playgroundRuns);
    const todays = runs.filter((r) => r.createdAt.toISOString().slice(0, 10) === today);
    const analytics = json(await get('/analytics?days=3'));
    expect(analytics.days).toHaveLength(3);
    expect(analytics.to).toBe(today);
    expect(analytics.days.at(-1)).toEqual({
      date: today,
      runs: todays.length,
      failed: todays.filter((r) => r.status === 'FAILED').length,
      tokensCharged: todays.reduce((sum, r) => sum + (r.tokensCharged ?? 0), 0),
    });
    expect(analytics.days.at(-1).failed).toBeGreaterThan(0);
    // Every run of this file is minutes old, so inside the window, whichever side of midnight (UTC) it fell on.
    expect(analytics.totalRuns).toBe(runs.length);
    expect(analytics.days.reduce((sum: number, day: { runs: number }) => sum + day.runs, 0)).toBe(runs.length);

    t.clock.advance(24 * 3600 * 1000);
    const operator = await signUpAs(t, 'ADMIN'); // a token of the new day
    expect((await post('/text', { model: 'local/text', messages: [{ role: 'user', content: 'next day' }] }, operator.accessToken)).statusCode).toBe(200);
    const next = json(await get('/analytics?days=2', operator.accessToken));
    expect(next.days.map((d: any) => [d.date, d.runs])).toEqual([
      [today, todays.length],
      [t.clock.now().toISOString().slice(0, 10), 1],
    ]);
    expect((await get('/analytics?days=0', operator.accessToken)).statusCode).toBe(400);
    expect(json(await get('/analytics', operator.accessToken)).days).toHaveLength(30);
  });
});
