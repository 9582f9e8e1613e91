import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { plans } from '../src/db/schema/plans.js';
import { createApiKey, setBalance, setPlan, walletState } from './helpers/gateway.js';
import { bearer, createTestApp, json, signUp, type TestApp } from './helpers/test-app.js';

/** The plan's `concurrentJobs` and `dailyRequests`, enforced with 429 QUOTA_EXCEEDED before anything is reserved. */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
  // Queue messages are stored; no workers take them, so submitted jobs stay open.
  await t.platform.jobs.start({ workers: false });
  const now = t.clock.now();
  await t.platform.db.insert(plans).values({
    slug: 'three-a-day',
    name: 'Three a day',
    interval: 'MONTHLY',
    priceCents: 0,
    currency: 'BDT',
    limits: { dailyRequests: 3 },
    features: { apiAccess: true },
    seedManaged: false,
    createdAt: now,
    updatedAt: now,
  });
  t.services.plans.invalidate();
});
afterAll(async () => t?.close());

async function customer(plan: string) {
  const account = await signUp(t.app);
  await setBalance(t, account.user.id, 100_000_000);
  await setPlan(t, account.user.id, plan);
  return account;
}
const post = (token: string, url: string, payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url, headers: bearer(token), payload });
const video = (token: string, prompt: string) => post(token, '/v1/ai/video', { model: 'local/video', prompt, durationSeconds: 1 });
const text = (token: string) => post(token, '/v1/ai/text', { model: 'local/text', messages: [{ role: 'user', content: 'Say hi' }], maxTokens: 16 });

describe("the plan's concurrentJobs", () => {
  it('lets exactly the limit of a parallel burst of submits through; the others get 429 and reserve nothing', async () => {
    const { accessToken, user } = await customer('starter');
    const before = await walletState(t, user.id);
    const responses = await Promise.all(Array.from({ length: 8 }, (_, i) => video(accessToken, `burst ${i}`)));
    const accepted = responses.filter((r) => r.statusCode === 200).map((r) => json(r));
    const refused = responses.filter((r) => r.statusCode !== 200);
    expect(accepted).toHaveLength(2);
    expect(refused).toHaveLength(6);
    for (const response of refused) {
      expect(response.statusCode).toBe(429);
      expect(json(response).error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { bucket: 'concurrentJobs', limit: 2, open: 2 } });
      expect(json(response).error.message).toContain('Starter');
    }
    const reserved = accepted.reduce((sum, handle) => sum + handle.creditsReserved, 0);
    expect(await walletState(t, user.id)).toEqual({ balance: before.balance - reserved, ledgerSum: before.ledgerSum - reserved });
    expect(json(await t.app.inject({ method: 'GET', url: '/v1/jobs', headers: bearer(accessToken) })).items).toHaveLength(2);

    // A cancelled job frees its place (still queued here: refunded in full).
    const cancel = await t.app.inject({ method: 'POST', url: `/v1/jobs/${accepted[0].jobId}/cancel`, headers: bearer(accessToken) });
    expect(json(cancel)).toMatchObject({ status: 'CANCELED', creditsConsumed: 0 });
    expect((await video(accessToken, 'after the cancel')).statusCode).toBe(200);
    expect((await video(accessToken, 'one too many')).statusCode).toBe(429);
  });

  it('counts async image jobs with video jobs', async () => {
    const { accessToken } = await customer('free');
    expect((await video(accessToken, 'the one job')).statusCode).toBe(200);
    const image = await post(accessToken, '/v1/ai/image', { model: 'local/image', prompt: 'x', width: 64, height: 64, async: true });
    expect(image.statusCode).toBe(429);
    expect(json(image).error.details).toMatchObject({ bucket: 'concurrentJobs', limit: 1 });
  });
});

describe("the plan's dailyRequests", () => {
  it('refuses the request after the limit until the next UTC day, charging nothing for the refused one', async () => {
    const { accessToken, user } = await customer('three-a-day');
    for (let i = 0; i < 3; i++) expect((await text(accessToken)).statusCode).toBe(200);
    const before = await walletState(t, user.id);
    const refused = await text(accessToken);
    expect(refused.statusCode).toBe(429);
    expect(json(refused).error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { bucket: 'dailyRequests', limit: 3, used: 3 } });
    // Every metered surface counts: a video submit is refused the same way.
    expect(json(await video(accessToken, 'over the day')).error.details).toMatchObject({ bucket: 'dailyRequests' });
    expect(await walletState(t, user.id)).toEqual(before);
    const me = json(await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(accessToken) }));
    expect(me.activeSubscription.usage.dailyRequestsUsed).toBe(3);

    // An API key outlives the access token across the day's end.
    const key = await createApiKey(t, accessToken, ['ai:text']);
    expect((await text(key.key)).statusCode).toBe(429);
    const now = t.clock.now();
    t.clock.advance(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1) - now.getTime() + 1000);
    expect((await text(key.key)).statusCode).toBe(200);
  });

  it('does not count requests that were refunded in full (a refused video leaves the count as it was)', async () => {
    const { accessToken, user } = await customer('three-a-day');
    await setBalance(t, user.id, 0);
    // Refused for the balance: reserved nothing, so the wallet's count of today's requests does not move.
    expect((await video(accessToken, 'no money')).statusCode).toBe(429);
    await setBalance(t, user.id, 100_000_000);
    t.clock.advance(10_000);
    for (let i = 0; i < 3; i++) expect((await text(accessToken)).statusCode).toBe(200);
  });
});
