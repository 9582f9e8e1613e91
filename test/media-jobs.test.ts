import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { notifications } from '../src/db/schema/notifications.js';
import { jobs } from '../src/db/schema/jobs.js';
import { generations } from '../src/db/schema/library.js';
import { usageRecords } from '../src/db/schema/usage.js';
import { domainEvents } from '../src/db/schema/platform.js';
import { bearer, createTestApp, json, signUp, type TestApp } from './helpers/test-app.js';
import { createApiKey, ledgerOf, parseSse, setBalance, setPlan, walletState } from './helpers/gateway.js';
import { pathOf } from './helpers/files.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ startJobs: true });
});
afterAll(async () => t?.close());

const getJob = (token: string, id: string) => t.app.inject({ method: 'GET', url: `/v1/jobs/${id}`, headers: bearer(token) });

/** Waits for the workers (real time: pg-boss polls its queues); the test clock is moved by hand where time matters. */
async function until(token: string, id: string, done: (job: any) => boolean, ms = 30_000) {
  const started = Date.now();
  for (;;) {
    const job = json(await getJob(token, id));
    if (done(job)) return job;
    if (Date.now() - started > ms) throw new Error(`job ${id} stuck: ${JSON.stringify(job)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
const final = (job: any) => ['SUCCEEDED', 'FAILED', 'CANCELED'].includes(job.status);

/** Cancels a job; a job its run step is handing to the provider at that moment answers 409 for a moment, so it is asked again. */
async function cancelJob(token: string, id: string) {
  for (let i = 0; ; i++) {
    const response = await t.app.inject({ method: 'POST', url: `/v1/jobs/${id}/cancel`, headers: bearer(token) });
    if (response.statusCode !== 409 || !response.body.includes('being handed') || i > 50) return response;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('async image jobs', () => {
  it('answers at once with a job that settles on its own, with output { images, usage }, a notification and job.succeeded', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/image',
      headers: bearer(accessToken),
      payload: { model: 'local/image', prompt: 'a quiet harbour', count: 5, width: 64, height: 64, async: true },
    });
    expect(response.statusCode).toBe(200);
    const { jobId, status } = json(response);
    expect(status).toBe('QUEUED');
    const job = await until(accessToken, jobId, final);
    expect(job).toMatchObject({ jobId, id: jobId, kind: 'IMAGE', status: 'SUCCEEDED', model: 'local/image', errorCode: null, progress: 1 });
    expect(job.output.images).toHaveLength(5);
    expect(job.output.usage).toMatchObject({ imagesGenerated: 5, imagesRequested: 5, creditsConsumed: job.creditsReserved });
    expect(job.creditsConsumed).toBe(job.creditsReserved);
    const raw = await t.app.inject({ method: 'GET', url: pathOf(job.output.images[0].url) });
    expect(raw.headers['content-type']).toContain('image/png');
    const after = await walletState(t, user.id);
    expect(after.balance).toBe(before.balance - job.creditsConsumed);
    expect(after.ledgerSum).toBe(after.balance);
    const [note] = await t.platform.db
      .select()
      .from(notifications)
      .where(and(eq(notifications.userId, user.id), eq(notifications.type, 'JOB_SUCCEEDED')));
    expect(note!.payload).toMatchObject({ jobId });
    const events = await t.platform.db.select().from(domainEvents).where(eq(domainEvents.userId, user.id));
    expect(events.map((e) => e.name).sort()).toEqual(['generation.persisted', 'job.succeeded']);
    expect(events.find((e) => e.name === 'job.succeeded')!.data).toMatchObject({ jobId });
    const [usage] = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, jobId));
    expect(usage).toMatchObject({ jobId, status: 'SUCCESS', outputUnits: 5 });
  });

  it('a balance that cannot cover it arrives on the job as FAILED / QUOTA_EXCEEDED, with JOB_FAILED and job.failed; nothing is charged', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setBalance(t, user.id, 0);
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/image',
      headers: bearer(accessToken),
      payload: { model: 'local/image', prompt: 'x', width: 64, height: 64, async: true },
    });
    expect(response.statusCode).toBe(200);
    const job = await until(accessToken, json(response).jobId, final);
    expect(job).toMatchObject({ status: 'FAILED', errorCode: 'QUOTA_EXCEEDED', output: null, creditsConsumed: 0 });
    expect(job.errorMessage).toContain('credit balance');
    expect(await walletState(t, user.id)).toEqual({ balance: 0, ledgerSum: 0 });
    const [note] = await t.platform.db
      .select()
      .from(notifications)
      .where(and(eq(notifications.userId, user.id), eq(notifications.type, 'JOB_FAILED')));
    expect(note!.payload).toMatchObject({ jobId: job.jobId });
    const [event] = await t.platform.db
      .select()
      .from(domainEvents)
      .where(and(eq(domainEvents.userId, user.id), eq(domainEvents.name, 'job.failed')));
    expect(event!.data).toMatchObject({ jobId: job.jobId, errorCode: 'QUOTA_EXCEEDED' });
  });

  it('a bad or retired model slug still fails synchronously', async () => {
    const { accessToken } = await signUp(t.app);
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/image',
      headers: bearer(accessToken),
      payload: { model: 'local/missing', prompt: 'x', async: true },
    });
    expect(response.statusCode).toBe(404);
    expect(json(await t.app.inject({ method: 'GET', url: '/v1/jobs', headers: bearer(accessToken) })).items).toEqual([]);
  });
});

describe('video jobs', () => {
  it('reserves the fixed price at submit, runs and polls on pg-boss, copies the clip, settles once and saves the library item', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/video',
      headers: bearer(accessToken),
      payload: { model: 'local/video', prompt: 'waves on a beach', durationSeconds: 2, aspectRatio: '1:1' },
    });
    expect(response.statusCode).toBe(200);
    const handle = json(response);
    expect(handle).toEqual({ jobId: expect.any(String), status: 'QUEUED', creditsReserved: expect.any(Number) });
    const model = await t.services.catalog.resolveForGateway('local/video');
    expect(handle.creditsReserved).toBe(await t.services.catalog.estimateTokens(model, { kind: 'video', seconds: 2 }));
    expect((await walletState(t, user.id)).balance).toBe(before.balance - handle.creditsReserved);
    const running = await until(accessToken, handle.jobId, (job) => job.status === 'RUNNING' && job.estimatedSeconds !== null);
    expect(running).not.toHaveProperty('handle');
    // The provider's task id never leaves the server: not in the job nor the list (the stream sends the same view).
    const [row] = await t.platform.db.select({ externalId: jobs.externalId }).from(jobs).where(eq(jobs.id, handle.jobId));
    const externalId = row!.externalId;
    expect(externalId).toMatch(/^local-video-/);
    for (const url of [`/v1/jobs/${handle.jobId}`, '/v1/jobs']) {
      const body = (await t.app.inject({ method: 'GET', url, headers: bearer(accessToken) })).body;
      expect(body).not.toContain(externalId!);
      expect(body).not.toContain('externalId');
    }
    t.clock.advance(60_000);
    const done = await until(accessToken, handle.jobId, final);
    expect(done).toMatchObject({
      status: 'SUCCEEDED',
      creditsConsumed: handle.creditsReserved,
      output: { videos: [{ url: expect.stringContaining('/v1/files/raw/'), durationSeconds: 2 }] },
    });
    const clip = await t.app.inject({ method: 'GET', url: pathOf(done.output.videos[0].url) });
    expect(clip.headers['content-type']).toContain('video/mp4');
    expect(clip.rawPayload.toString('latin1', 4, 8)).toBe('ftyp');
    const ledger = await ledgerOf(t, handle.jobId);
    expect(ledger.map((r) => [r.kind, r.amount])).toEqual([['USAGE', -handle.creditsReserved]]);
    const [saved] = await t.platform.db.select().from(generations).where(eq(generations.requestId, handle.jobId));
    expect(saved).toMatchObject({ kind: 'VIDEO', prompt: 'waves on a beach', output: { videos: done.output.videos } });
    // A second run of the same job step charges nothing more.
    await t.services.media.pollJob(handle.jobId);
    await t.services.media.runJob(handle.jobId);
    expect(await ledgerOf(t, handle.jobId)).toHaveLength(1);
    expect(await t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, handle.jobId))).toHaveLength(1);
  });

  it('validates controls against the model and refuses with 400, charging nothing', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    for (const [payload, field] of [
      [{ durationSeconds: 11 }, 'durationSeconds'],
      [{ endImageUrl: 'data:image/png;base64,AAAA' }, 'endImageUrl'],
      [{ aspectRatio: '2:1' }, 'aspectRatio'],
      [{ seed: 1.5 }, 'seed'],
      [{ extra: 'x' }, 'extra'],
      // The built-in provider sends no extra key upstream.
      [{ extra: { mode: 'pro' } }, 'extra.mode is not taken by model local/video; it takes: no extra keys.'],
      [{ colour: 'red' }, 'colour'],
    ] as const) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/v1/ai/video',
        headers: bearer(accessToken),
        payload: { model: 'local/video', prompt: 'x', ...payload },
      });
      expect(response.statusCode, field).toBe(400);
      expect(response.body).toContain(field);
    }
    const wrongType = await t.app.inject({ method: 'POST', url: '/v1/ai/video', headers: bearer(accessToken), payload: { model: 'local/image', prompt: 'x' } });
    expect(wrongType.statusCode).toBe(400);
    expect(await walletState(t, user.id)).toEqual(before);
    await setBalance(t, user.id, 0);
    const broke = await t.app.inject({ method: 'POST', url: '/v1/ai/video', headers: bearer(accessToken), payload: { model: 'local/video', prompt: 'x' } });
    expect(broke.statusCode).toBe(429);
    expect(json(await t.app.inject({ method: 'GET', url: '/v1/jobs', headers: bearer(accessToken) })).items).toEqual([]);
  });

  it('cancel refunds the reservation; a finished job cannot be cancelled (409)', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const handle = json(
      await t.app.inject({
        method: 'POST',
        url: '/v1/ai/video',
        headers: bearer(accessToken),
        payload: { model: 'local/video', prompt: 'cancel me', durationSeconds: 1 },
      }),
    );
    // Refunded whether it is still queued here or already at the built-in provider (which confirms every stop).
    const canceled = await cancelJob(accessToken, handle.jobId);
    expect(canceled.statusCode).toBe(200);
    expect(json(canceled)).toMatchObject({ status: 'CANCELED', creditsConsumed: 0 });
    expect(await walletState(t, user.id)).toEqual(before);
    const again = await t.app.inject({ method: 'POST', url: `/v1/jobs/${handle.jobId}/cancel`, headers: bearer(accessToken) });
    expect(again.statusCode).toBe(409);
    expect(json(again).error.message).toContain('already finished');
    // The queued steps find the job closed and do nothing.
    t.clock.advance(60_000);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(json(await getJob(accessToken, handle.jobId)).status).toBe('CANCELED');
    expect(await walletState(t, user.id)).toEqual(before);
  });

  it('lip-sync and extend run as jobs on the local provider from a finished video job', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setPlan(t, user.id, 'studio');
    const source = json(
      await t.app.inject({
        method: 'POST',
        url: '/v1/ai/video',
        headers: bearer(accessToken),
        payload: { model: 'local/video', prompt: 'a speaker', durationSeconds: 1 },
      }),
    );
    await until(accessToken, source.jobId, (job) => job.estimatedSeconds !== null);
    t.clock.advance(60_000);
    await until(accessToken, source.jobId, final);
    const lip = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/video/lip-sync',
      headers: bearer(accessToken),
      payload: { model: 'local/video', jobId: source.jobId, text: 'Hello there, friends.' },
    });
    expect(lip.statusCode, lip.body).toBe(200);
    const extend = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/video/extend',
      headers: bearer(accessToken),
      payload: { model: 'local/video', jobId: source.jobId, prompt: 'the speaker walks away', durationSeconds: 2 },
    });
    expect(extend.statusCode, extend.body).toBe(200);
    for (const id of [json(lip).jobId, json(extend).jobId]) await until(accessToken, id, (job) => job.estimatedSeconds !== null);
    t.clock.advance(60_000);
    const [lipJob, extendJob] = [await until(accessToken, json(lip).jobId, final), await until(accessToken, json(extend).jobId, final)];
    expect(lipJob).toMatchObject({ kind: 'LIP_SYNC', status: 'SUCCEEDED' });
    expect(extendJob).toMatchObject({ kind: 'VIDEO_EXTEND', status: 'SUCCEEDED', output: { videos: [{ durationSeconds: 2 }] } });
    const both = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/video/lip-sync',
      headers: bearer(accessToken),
      payload: { model: 'local/video', jobId: source.jobId, videoUrl: 'https://example.com/v.mp4', text: 'x' },
    });
    expect(both.statusCode).toBe(400);
    const other = await signUp(t.app);
    const foreign = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/video/extend',
      headers: bearer(other.accessToken),
      payload: { model: 'local/video', jobId: source.jobId },
    });
    expect(foreign.statusCode).toBe(404);
  });
});

describe('GET /v1/jobs, GET /v1/jobs/:id, the stream and security', () => {
  it('lists newest first with a cursor, filters, and rejects unknown query keys', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setPlan(t, user.id, 'studio');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      t.clock.advance(1000);
      ids.push(
        json(
          await t.app.inject({
            method: 'POST',
            url: '/v1/ai/video',
            headers: bearer(accessToken),
            payload: { model: 'local/video', prompt: `clip ${i}`, durationSeconds: 1 },
          }),
        ).jobId,
      );
    }
    const first = json(await t.app.inject({ method: 'GET', url: '/v1/jobs?limit=2', headers: bearer(accessToken) }));
    expect(first.items.map((j: any) => j.jobId)).toEqual([ids[2], ids[1]]);
    const second = json(await t.app.inject({ method: 'GET', url: `/v1/jobs?limit=2&cursor=${first.nextCursor}`, headers: bearer(accessToken) }));
    expect(second.items.map((j: any) => j.jobId)).toEqual([ids[0]]);
    expect(second.nextCursor).toBeNull();
    expect(json(await t.app.inject({ method: 'GET', url: '/v1/jobs?kind=IMAGE', headers: bearer(accessToken) })).items).toEqual([]);
    expect((await t.app.inject({ method: 'GET', url: '/v1/jobs?sort=old', headers: bearer(accessToken) })).statusCode).toBe(400);
    expect((await t.app.inject({ method: 'GET', url: '/v1/jobs?limit=101', headers: bearer(accessToken) })).statusCode).toBe(400);
    for (const id of ids) await cancelJob(accessToken, id);
  });

  it('401 without a token, 404 for a foreign or unknown job, 403 for a key without the jobs scope', async () => {
    const owner = await signUp(t.app);
    const other = await signUp(t.app);
    const { jobId } = json(
      await t.app.inject({
        method: 'POST',
        url: '/v1/ai/video',
        headers: bearer(owner.accessToken),
        payload: { model: 'local/video', prompt: 'mine', durationSeconds: 1 },
      }),
    );
    for (const [method, url] of [
      ['GET', '/v1/jobs'],
      ['GET', `/v1/jobs/${jobId}`],
      ['GET', `/v1/jobs/${jobId}/stream`],
      ['POST', `/v1/jobs/${jobId}/cancel`],
    ] as const) {
      expect((await t.app.inject({ method, url })).statusCode, url).toBe(401);
      if (url !== '/v1/jobs') expect((await t.app.inject({ method, url, headers: bearer(other.accessToken) })).statusCode, url).toBe(404);
    }
    expect((await getJob(owner.accessToken, 'not-a-uuid')).statusCode).toBe(404);
    expect((await getJob(owner.accessToken, '01890000-0000-7000-8000-000000000000')).statusCode).toBe(404);
    await setPlan(t, owner.user.id, 'starter');
    const readOnly = await createApiKey(t, owner.accessToken, ['jobs:read']);
    expect((await getJob(readOnly.key, jobId)).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'POST', url: `/v1/jobs/${jobId}/cancel`, headers: bearer(readOnly.key) })).statusCode).toBe(403);
    const writer = await createApiKey(t, owner.accessToken, ['jobs:write']);
    expect((await getJob(writer.key, jobId)).statusCode).toBe(403);
    expect((await t.app.inject({ method: 'POST', url: `/v1/jobs/${jobId}/cancel`, headers: bearer(writer.key) })).statusCode).toBe(200);
  });

  it('streams the current state at once, every change, and ends with the final state (listening server)', async () => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { accessToken } = await signUp(t.app);
    const { jobId } = json(
      await t.app.inject({
        method: 'POST',
        url: '/v1/ai/video',
        headers: bearer(accessToken),
        payload: { model: 'local/video', prompt: 'streamed', durationSeconds: 1 },
      }),
    );
    const response = await fetch(`${address}/v1/jobs/${jobId}/stream`, { headers: bearer(accessToken) });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const reader = response.body!.getReader();
    let text = '';
    const decoder = new TextDecoder();
    let advanced = false;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      if (!advanced && text.includes('"RUNNING"')) {
        advanced = true;
        t.clock.advance(60_000);
      }
    }
    const events = parseSse(text);
    expect(events[0]).toMatchObject({ type: 'job', job: { jobId, status: 'QUEUED' } });
    expect(events.map((e) => e.job.status)).toContain('RUNNING');
    expect(events.at(-1)).toMatchObject({ type: 'job', job: { jobId, status: 'SUCCEEDED', output: { videos: [expect.any(Object)] } } });
    // A finished job streams its final state once and ends.
    const again = await fetch(`${address}/v1/jobs/${jobId}/stream`, { headers: bearer(accessToken) });
    const replay = parseSse(await again.text());
    expect(replay).toHaveLength(1);
    expect(replay[0]!.job.status).toBe('SUCCEEDED');
  });
});
