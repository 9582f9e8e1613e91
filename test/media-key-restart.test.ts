import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import type { BuiltApp } from '../src/app.js';
import { gatewayIdempotency } from '../src/db/schema/gateway.js';
import { jobs } from '../src/db/schema/jobs.js';
import { usageRecords } from '../src/db/schema/usage.js';
import type { Principal } from '../src/platform/auth/plugin.js';
import type { MediaCallOptions } from '../src/modules/gateway/media/common.js';
import { ledgerOf, setBalance, walletState } from './helpers/gateway.js';
import { sharedDatabase, type SharedDatabase } from './helpers/shared-database.js';
import { bearer, json, signUp } from './helpers/test-app.js';

/**
 * A job submitted with an Idempotency-Key, by an instance that dies before it answers. The job, its queue message (and
 * for a video its reservation) and the key's answer commit together, so the retry on another instance replays the
 * job's handle: one job, run once, charged once. The dying instance is the submit as the route runs it (the key taken,
 * the job queued under the key's request id) with nothing after it, as a killed process leaves it.
 */
let shared: SharedDatabase;

beforeAll(async () => {
  shared = await sharedDatabase('key-restart');
});
afterAll(async () => shared?.close());

/** An instance that queues jobs but runs none: they wait for the next instance's workers. */
async function queuingInstance(): Promise<BuiltApp> {
  const instance = await shared.instance();
  await instance.platform.jobs.start({ workers: false });
  return instance;
}

const principalOf = (userId: string): Principal => ({ userId, role: 'USER', sessionId: null, via: 'access_token', scopes: null, apiKeyId: null });

/** Takes the key and runs the submit under it, then stops: what a process killed right after the submit leaves. */
async function submitThenDie(
  instance: BuiltApp,
  userId: string,
  key: string,
  route: string,
  body: Record<string, unknown>,
  submit: (principal: Principal, options: MediaCallOptions) => Promise<unknown>,
) {
  const idempotency = instance.services.gateway.idempotency;
  const begun = await idempotency.begin({ userId, key, route, body });
  if (begun.kind !== 'new') throw new Error('the key was already taken');
  const entry = { userId, key, requestId: begun.requestId };
  const scope = {
    idempotencyKey: key,
    chargeQuery: (response: Record<string, unknown> | null) => idempotency.chargeQuery(entry, response),
    committed: () => undefined,
  };
  return { requestId: begun.requestId, handle: await submit(principalOf(userId), { request: { requestId: begun.requestId, key: scope } }) };
}

async function finished(instance: BuiltApp, accessToken: string, jobId: string) {
  for (let i = 0; ; i++) {
    const job = json(await instance.app.inject({ method: 'GET', url: `/v1/jobs/${jobId}`, headers: bearer(accessToken) }));
    if (job.status === 'SUCCEEDED' || job.status === 'FAILED') return job;
    if (i > 200) throw new Error(`job stuck: ${JSON.stringify(job)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** After the retry: one job for the user, charged once (one ledger row, one usage record), the wallet consistent. */
async function chargedOnce(instance: BuiltApp, userId: string, jobId: string, balanceBefore: number, charged: number) {
  const t = instance as never;
  expect(await instance.platform.db.select({ id: jobs.id }).from(jobs).where(eq(jobs.userId, userId))).toEqual([{ id: jobId }]);
  expect(await ledgerOf(t, jobId)).toHaveLength(1);
  expect(await instance.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, jobId))).toHaveLength(1);
  const wallet = await walletState(t, userId);
  expect(wallet.balance).toBe(balanceBefore - charged);
  expect(wallet.ledgerSum).toBe(wallet.balance);
}

// Each case starts two instances of the service.
describe('a keyed job submit whose instance died before answering', { timeout: 90_000 }, () => {
  it('async image: a retry before the job started, past the grace that frees an unreserved key, replays the job; it runs once and is charged once', async () => {
    const first = await queuingInstance();
    const { accessToken, user } = await signUp(first.app);
    await setBalance(first as never, user.id, 10_000_000);
    const body = { model: 'local/image', prompt: 'queued before the crash', count: 1, width: 64, height: 64, async: true };
    const { requestId, handle } = await submitThenDie(first, user.id, 'image-crash-1', '/v1/ai/image', body, (p, options) =>
      first.services.media.image.submit(p, body, options),
    );
    expect(handle).toEqual({ jobId: requestId, status: 'QUEUED' });
    await first.app.close();

    // No worker has run the job, so nothing is reserved under the key's request id yet: the key must not be freed.
    shared.clock.advance(2 * 60_000);
    const second = await queuingInstance();
    try {
      const retry = await second.app.inject({
        method: 'POST',
        url: '/v1/ai/image',
        headers: { ...bearer(accessToken), 'idempotency-key': 'image-crash-1' },
        payload: body,
      });
      expect(retry.statusCode, retry.body).toBe(200);
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(json(retry)).toEqual(handle);
    } finally {
      await second.app.close();
    }

    const worker = await shared.instance({ startJobs: true });
    try {
      const job = await finished(worker, accessToken, requestId);
      expect(job).toMatchObject({ status: 'SUCCEEDED' });
      await chargedOnce(worker, user.id, requestId, 10_000_000, job.creditsConsumed);
    } finally {
      await worker.app.close();
    }
  });

  it('video: the retry replays the job handle at once rather than answering 409 for the reservation lease; charged once', async () => {
    const first = await queuingInstance();
    const { accessToken, user } = await signUp(first.app);
    await setBalance(first as never, user.id, 10_000_000);
    const body = { model: 'local/video', prompt: 'reserved before the crash', durationSeconds: 1 };
    const { requestId, handle } = await submitThenDie(first, user.id, 'video-crash-1', '/v1/ai/video', body, (p, options) =>
      first.services.media.video.submit(p, body, options),
    );
    expect(handle).toMatchObject({ jobId: requestId, status: 'QUEUED', creditsReserved: expect.any(Number) });
    await first.app.close();

    const second = await shared.instance({ startJobs: true });
    try {
      const retry = await second.app.inject({
        method: 'POST',
        url: '/v1/ai/video',
        headers: { ...bearer(accessToken), 'idempotency-key': 'video-crash-1' },
        payload: body,
      });
      expect(retry.statusCode, retry.body).toBe(200);
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(json(retry)).toEqual(handle);
      shared.clock.advance(60_000); // the built-in provider renders on the service's clock
      const job = await finished(second, accessToken, requestId);
      expect(job).toMatchObject({ status: 'SUCCEEDED', creditsConsumed: (handle as { creditsReserved: number }).creditsReserved });
      await chargedOnce(second, user.id, requestId, 10_000_000, job.creditsConsumed);
    } finally {
      await second.app.close();
    }
  });

  it('video: a submit that died before its job committed left nothing charged, and its key is free for the retry once the grace is over', async () => {
    const first = await queuingInstance();
    const { accessToken, user } = await signUp(first.app);
    await setBalance(first as never, user.id, 10_000_000);
    const body = { model: 'local/video', prompt: 'died while preparing', durationSeconds: 1 };
    // Still checking and keeping its sources when it died: the key was taken, nothing else was written.
    await first.services.gateway.idempotency.begin({ userId: user.id, key: 'video-crash-2', route: '/v1/ai/video', body });
    await first.app.close();

    shared.clock.advance(2 * 60_000);
    const second = await queuingInstance();
    try {
      const retry = await second.app.inject({
        method: 'POST',
        url: '/v1/ai/video',
        headers: { ...bearer(accessToken), 'idempotency-key': 'video-crash-2' },
        payload: body,
      });
      expect(retry.statusCode, retry.body).toBe(200);
      expect(retry.headers['idempotent-replayed']).toBeUndefined();
      expect(await second.platform.db.select({ id: jobs.id }).from(jobs).where(eq(jobs.userId, user.id))).toEqual([{ id: json(retry).jobId }]);
      const [key] = await second.platform.db
        .select()
        .from(gatewayIdempotency)
        .where(and(eq(gatewayIdempotency.userId, user.id), eq(gatewayIdempotency.key, 'video-crash-2')));
      expect(key).toMatchObject({ status: 'COMPLETED', requestId: json(retry).jobId, response: json(retry) });
      expect((await second.app.inject({ method: 'POST', url: `/v1/jobs/${json(retry).jobId}/cancel`, headers: bearer(accessToken) })).statusCode).toBe(200);
    } finally {
      await second.app.close();
    }
  });

  it('a submit whose key a retry took over meanwhile queues nothing: 409, no job, no reservation', async () => {
    const instance = await queuingInstance();
    try {
      const { user } = await signUp(instance.app);
      await setBalance(instance as never, user.id, 10_000_000);
      const body = { model: 'local/video', prompt: 'overtaken', durationSeconds: 1 };
      const idempotency = instance.services.gateway.idempotency;
      const slow = await idempotency.begin({ userId: user.id, key: 'video-overtaken', route: '/v1/ai/video', body });
      if (slow.kind !== 'new') throw new Error('the key was already taken');
      // The slow request's hold was judged dead and the key taken by a retry, which holds it now.
      await instance.platform.db.delete(gatewayIdempotency).where(and(eq(gatewayIdempotency.userId, user.id), eq(gatewayIdempotency.key, 'video-overtaken')));
      const retry = await idempotency.begin({ userId: user.id, key: 'video-overtaken', route: '/v1/ai/video', body });
      expect(retry.kind).toBe('new');

      const entry = { userId: user.id, key: 'video-overtaken', requestId: slow.requestId };
      const scope = {
        idempotencyKey: 'video-overtaken',
        chargeQuery: (response: Record<string, unknown> | null) => idempotency.chargeQuery(entry, response),
        committed: () => undefined,
      };
      const err = await instance.services.media.video
        .submit(principalOf(user.id), body as never, { request: { requestId: slow.requestId, key: scope } })
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ statusCode: 409, code: 'CONFLICT' });
      expect(await instance.platform.db.select({ id: jobs.id }).from(jobs).where(eq(jobs.userId, user.id))).toEqual([]);
      expect(await instance.services.wallet.reservation(slow.requestId)).toBeFalsy();
      expect(await walletState(instance as never, user.id)).toEqual({ balance: 10_000_000, ledgerSum: 10_000_000 });
    } finally {
      await instance.app.close();
    }
  });
});
