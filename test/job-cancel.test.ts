import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { jobs } from '../src/db/schema/jobs.js';
import { ledgerOf, setBalance, walletState } from './helpers/gateway.js';
import { bearer, createTestApp, json, signUp, type TestApp } from './helpers/test-app.js';

/**
 * Who pays for a cancelled video job: nobody while the provider never got it or confirms it stopped the task unbilled
 * (the built-in provider always does); the provider-specific charges are in the media-*.test.ts files.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
  // Steps are run by hand below; no workers take the queue's messages.
  await t.platform.jobs.start({ workers: false });
});
afterAll(async () => t?.close());

const submit = async (token: string) => {
  const response = await t.app.inject({
    method: 'POST',
    url: '/v1/ai/video',
    headers: bearer(token),
    payload: { model: 'local/video', prompt: 'a cancelled clip', durationSeconds: 1 },
  });
  expect(response.statusCode, response.body).toBe(200);
  return json<{ jobId: string; creditsReserved: number }>(response);
};
const cancel = (token: string, id: string) => t.app.inject({ method: 'POST', url: `/v1/jobs/${id}/cancel`, headers: bearer(token) });

describe('POST /v1/jobs/:id/cancel of a video job', () => {
  it('refunds in full a job the provider confirms it stopped', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setBalance(t, user.id, 10_000_000);
    const before = await walletState(t, user.id);
    const { jobId, creditsReserved } = await submit(accessToken);
    await t.services.media.runJob(jobId);
    expect((await walletState(t, user.id)).balance).toBe(before.balance - creditsReserved);
    const canceled = await cancel(accessToken, jobId);
    expect(json(canceled)).toMatchObject({ status: 'CANCELED', creditsConsumed: 0, errorMessage: expect.stringContaining('stopped it unbilled') });
    expect((await ledgerOf(t, jobId)).map((r) => r.kind)).toEqual(['USAGE', 'REFUND']);
    expect(await walletState(t, user.id)).toEqual(before);
  });

  it('answers 409 while its run step hands it to the provider, and settles it once the step is done', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setBalance(t, user.id, 10_000_000);
    const before = await walletState(t, user.id);
    const { jobId, creditsReserved } = await submit(accessToken);
    // As a run step does before it calls the provider.
    await t.platform.db.update(jobs).set({ startedAt: t.clock.now() }).where(eq(jobs.id, jobId));
    const busy = await cancel(accessToken, jobId);
    expect(busy.statusCode).toBe(409);
    expect(json(busy).error.message).toContain('being handed to the provider');
    expect((await t.platform.db.select({ status: jobs.status }).from(jobs).where(eq(jobs.id, jobId)))[0]!.status).toBe('QUEUED');
    expect((await walletState(t, user.id)).balance).toBe(before.balance - creditsReserved);
    await t.services.media.runJob(jobId);
    expect(json(await cancel(accessToken, jobId))).toMatchObject({ status: 'CANCELED', creditsConsumed: 0 });
    expect(await walletState(t, user.id)).toEqual(before);
  });
});
