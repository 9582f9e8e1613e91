import { createHmac, timingSafeEqual } from 'node:crypto';
import Stripe from 'stripe';
import { v7 as uuidv7 } from 'uuid';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookDeliveries } from '../src/db/schema/webhooks.js';
import { emitDomainEvent } from '../src/platform/events/outbox.js';
import { bearer, createTestApp, json, signUp, type TestApp } from './helpers/test-app.js';
import { eventually, startReceiver, type Receiver, type ReceivedDelivery } from './helpers/webhook-receiver.js';

let t: TestApp;
let receiver: Receiver;
const stripe = new Stripe('sk_test_not_used_for_network');

beforeAll(async () => {
  // The receivers listen on loopback over http, which only private networking allows (registration.test.ts checks the refusals).
  [t, receiver] = await Promise.all([createTestApp({ env: { ALLOW_PRIVATE_NETWORK: 'true' }, startJobs: true }), startReceiver()]);
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const SECOND = 1000;
const MINUTE = 60 * SECOND;

async function register(token: string, path: string, events: string[] = ['*']) {
  const response = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: bearer(token), payload: { url: receiver.url(path), events } });
  expect(response.statusCode).toBe(201);
  return json<{ id: string; secret: string }>(response);
}

/** A change and its event, committed together (the way every producer writes to the outbox). */
const emit = (userId: string, name: string, data: Record<string, unknown>) =>
  t.platform.db.transaction(async (tx) => emitDomainEvent(tx, name, data, { userId, at: t.clock.now() }));

const deliveries = async (token: string, hookId: string) =>
  json(await t.app.inject({ method: 'GET', url: `/v1/webhooks/${hookId}/deliveries`, headers: bearer(token) })).items;
const webhook = async (token: string, hookId: string) =>
  json(await t.app.inject({ method: 'GET', url: '/v1/webhooks', headers: bearer(token) })).items.find((h: { id: string }) => h.id === hookId);

/** Waits until the newest delivery of the webhook has `n` recorded attempts. */
const attemptsRecorded = (token: string, hookId: string, n: number, timeoutMs?: number) =>
  eventually(
    async () => {
      const [latest] = await deliveries(token, hookId);
      return latest && latest.attempts.length >= n && latest.status !== 'SENDING' ? latest : undefined;
    },
    `${n} attempts on ${hookId}`,
    timeoutMs,
  );

/** A new access token for the user (the clock moves past the 15-minute token lifetime in these tests). */
async function login(email: string, password: string): Promise<string> {
  const response = await t.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email, password } });
  expect(response.statusCode).toBe(200);
  return json(response).accessToken;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Checks the signature by hand, exactly as the spec tells receivers to. */
function verifyByHand(delivery: ReceivedDelivery, secret: string): number {
  const header = String(delivery.headers['x-service-signature']);
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  expect(match, header).not.toBeNull();
  const timestamp = Number(match![1]);
  expect(delivery.headers['x-service-timestamp']).toBe(String(timestamp));
  const expected = createHmac('sha256', secret).update(`${timestamp}.${delivery.body}`).digest();
  expect(timingSafeEqual(expected, Buffer.from(match![2]!, 'hex'))).toBe(true);
  return timestamp;
}

describe('delivery', () => {
  it('retries a failing receiver on the clock, with one delivery id and a fresh valid signature on every attempt', async () => {
    const { accessToken, user } = await signUp(t.app);
    receiver.answer('/flaky', (n) => ({ status: n <= 3 ? 500 : 204 }));
    const hook = await register(accessToken, '/flaky', ['job.succeeded']);
    const jobId = uuidv7();
    const emittedAt = t.clock.now();
    await emit(user.id, 'job.succeeded', { jobId, status: 'SUCCEEDED' });

    const first = await attemptsRecorded(accessToken, hook.id, 1);
    expect(first).toMatchObject({
      status: 'PENDING',
      attemptCount: 1,
      lastStatusCode: 500,
      nextAttemptAt: new Date(t.clock.now().getTime() + 5 * SECOND).toISOString(),
    });
    // nothing more happens until the clock reaches the retry time
    await sleep(1200);
    expect(receiver.to('/flaky')).toHaveLength(1);
    for (const [wait, n] of [
      [5 * SECOND, 2],
      [30 * SECOND, 3],
      [2 * MINUTE, 4],
    ] as const) {
      t.clock.advance(wait);
      await attemptsRecorded(accessToken, hook.id, n);
    }
    const [delivery] = await deliveries(accessToken, hook.id);
    expect(delivery).toMatchObject({ event: 'job.succeeded', status: 'SUCCEEDED', attemptCount: 4, lastStatusCode: 204, nextAttemptAt: null });
    expect(delivery.attempts.map((a: { statusCode: number; succeeded: boolean }) => [a.statusCode, a.succeeded])).toEqual([
      [500, false],
      [500, false],
      [500, false],
      [204, true],
    ]);
    expect(delivery.attempts[0].error).toMatch(/answered 500; only a 2xx answer counts/);

    const received = receiver.to('/flaky');
    expect(received).toHaveLength(4);
    expect(new Set(received.map((r) => r.headers['x-service-delivery']))).toEqual(new Set([delivery.id]));
    expect(new Set(received.map((r) => r.body)).size).toBe(1);
    expect(JSON.parse(received[0]!.body)).toEqual({ event: 'job.succeeded', createdAt: emittedAt.toISOString(), data: { jobId, status: 'SUCCEEDED' } });
    const timestamps = received.map((r) => {
      expect(r.headers['x-service-event']).toBe('job.succeeded');
      expect(r.headers['content-type']).toBe('application/json');
      const timestamp = verifyByHand(r, hook.secret);
      // the package receivers commonly use agrees (its tolerance measured from the attempt's own time)
      const event = stripe.webhooks.constructEvent(r.body, String(r.headers['x-service-signature']), hook.secret, 300, undefined, timestamp) as unknown as {
        data: { jobId: string };
      };
      expect(event.data.jobId).toBe(jobId);
      expect(() => stripe.webhooks.constructEvent(r.body, String(r.headers['x-service-signature']), 'whsec_wrong', 300, undefined, timestamp)).toThrow();
      return timestamp;
    });
    // each attempt signed afresh with its own time: 0 s, +5 s, +35 s, +155 s
    expect(timestamps.map((ts) => ts - timestamps[0]!)).toEqual([0, 5, 35, 155]);
    expect(delivery.attempts.map((a: { signedAt: string }) => Date.parse(a.signedAt) / 1000)).toEqual(timestamps);
    expect(await webhook(accessToken, hook.id)).toMatchObject({ status: 'ACTIVE', failureCount: 0 });
  });

  it('disables the webhook after the sixth failed attempt; re-enabling resets the count and resend replays the original body', async () => {
    const { user, email, password } = await signUp(t.app);
    let accessToken = await login(email, password);
    let healthy = false;
    receiver.answer('/down', () => ({ status: healthy ? 200 : 503 }));
    const hook = await register(accessToken, '/down');
    await emit(user.id, 'generation.persisted', { generationId: uuidv7() });

    await attemptsRecorded(accessToken, hook.id, 1);
    for (const [i, wait] of [5 * SECOND, 30 * SECOND, 2 * MINUTE, 10 * MINUTE, 60 * MINUTE].entries()) {
      expect(await webhook(accessToken, hook.id)).toMatchObject({ status: 'ACTIVE', failureCount: i + 1 });
      t.clock.advance(wait);
      accessToken = await login(email, password);
      await attemptsRecorded(accessToken, hook.id, i + 2);
    }
    const [failed] = await deliveries(accessToken, hook.id);
    expect(failed).toMatchObject({ status: 'FAILED', attemptCount: 6, nextAttemptAt: null });
    const disabled = await webhook(accessToken, hook.id);
    expect(disabled).toMatchObject({ status: 'DISABLED', failureCount: 6, disabledAt: expect.any(String) });
    expect(disabled.disabledReason).toMatch(/after 6 failed attempts/);

    // no seventh attempt, and a new event is not delivered to a disabled webhook
    t.clock.advance(6 * 60 * MINUTE);
    accessToken = await login(email, password);
    await emit(user.id, 'generation.persisted', { generationId: uuidv7() });
    await t.services.webhooks.runOnce();
    await sleep(1200);
    expect(receiver.to('/down')).toHaveLength(6);
    expect(await deliveries(accessToken, hook.id)).toHaveLength(1);
    const refused = await t.app.inject({ method: 'POST', url: `/v1/webhooks/${hook.id}/deliveries/${failed.id}/resend`, headers: bearer(accessToken) });
    expect(refused.statusCode).toBe(400);
    expect(json(refused).error.message).toMatch(/disabled/);

    const reenabled = json(
      await t.app.inject({ method: 'PATCH', url: `/v1/webhooks/${hook.id}`, headers: bearer(accessToken), payload: { status: 'ACTIVE' } }),
    );
    expect(reenabled).toMatchObject({ status: 'ACTIVE', failureCount: 0, disabledAt: null });
    healthy = true;
    const resent = await t.app.inject({ method: 'POST', url: `/v1/webhooks/${hook.id}/deliveries/${failed.id}/resend`, headers: bearer(accessToken) });
    expect(resent.statusCode).toBe(201);
    expect(json(resent)).toMatchObject({ resendOf: failed.id, status: 'PENDING', event: 'generation.persisted' });
    const replayed = await eventually(() => receiver.to('/down')[6], 'the resend');
    expect(replayed.body).toBe(receiver.to('/down')[0]!.body);
    expect(replayed.headers['x-service-delivery']).toBe(json(resent).id);
    verifyByHand(replayed, hook.secret);
    await attemptsRecorded(accessToken, hook.id, 1);
    expect((await deliveries(accessToken, hook.id))[0]).toMatchObject({ id: json(resent).id, status: 'SUCCEEDED' });
    const missing = await t.app.inject({ method: 'POST', url: `/v1/webhooks/${hook.id}/deliveries/${uuidv7()}/resend`, headers: bearer(accessToken) });
    expect(missing.statusCode).toBe(404);
  });

  it('counts a redirect as a failure and does not follow it', async () => {
    const { accessToken, user } = await signUp(t.app);
    receiver.answer('/moved', () => ({ status: 302, headers: { location: '/moved-here' } }));
    const hook = await register(accessToken, '/moved');
    await emit(user.id, 'job.failed', { jobId: uuidv7() });
    const delivery = await attemptsRecorded(accessToken, hook.id, 1);
    expect(delivery).toMatchObject({ status: 'PENDING', lastStatusCode: 302 });
    expect(delivery.attempts[0]).toMatchObject({ statusCode: 302, succeeded: false, error: expect.stringMatching(/redirect.*count as a failure/) });
    expect(receiver.to('/moved-here')).toHaveLength(0);
    expect(await webhook(accessToken, hook.id)).toMatchObject({ failureCount: 1 });
  });

  it("a slow receiver does not delay another webhook's deliveries, and its attempt times out after 10 s", async () => {
    const { accessToken, user } = await signUp(t.app);
    receiver.answer('/slow', () => ({ status: 200, delayMs: 11_000 }));
    const slow = await register(accessToken, '/slow');
    const fast = await register(accessToken, '/fast');
    const started = Date.now();
    for (let i = 0; i < 3; i++) await emit(user.id, 'job.succeeded', { jobId: uuidv7() });
    await eventually(() => receiver.to('/fast').length === 3, 'three fast deliveries', 5000);
    expect(Date.now() - started).toBeLessThan(5000);
    // the slow receiver's first attempt may arrive after the fast ones (they go out in parallel); it holds one
    // attempt at a time and has not answered any
    await eventually(() => receiver.to('/slow').length > 0, 'the slow attempt to arrive', 3000);
    expect(receiver.to('/slow')).toHaveLength(1);
    await eventually(
      async () => (await deliveries(accessToken, fast.id)).filter((d: { status: string }) => d.status === 'SUCCEEDED').length === 3,
      'three recorded successes',
      3000,
    );
    expect(Date.now() - started).toBeLessThan(6000);
    const timedOut = await eventually(
      async () => (await deliveries(accessToken, slow.id)).find((d: { attempts: unknown[] }) => d.attempts.length === 1),
      'the slow attempt',
      20_000,
    );
    expect(timedOut.attempts[0]).toMatchObject({ statusCode: null, succeeded: false, error: expect.stringMatching(/did not answer in time \(limit 10 s\)/) });
    expect(timedOut.attempts[0].durationMs).toBeGreaterThanOrEqual(9_900);
  }, 30_000);

  it('a busy webhook is not paced by the queue: twenty events reach a fast receiver in a few seconds, each once', async () => {
    const { accessToken, user } = await signUp(t.app);
    const hook = await register(accessToken, '/busy', ['job.succeeded']);
    const jobIds = Array.from({ length: 20 }, () => uuidv7());
    const started = Date.now();
    for (const jobId of jobIds) await emit(user.id, 'job.succeeded', { jobId });
    await eventually(() => receiver.to('/busy').length === 20, 'twenty deliveries', 10_000);
    expect(Date.now() - started).toBeLessThan(6_000);
    expect(new Set(receiver.to('/busy').map((r) => JSON.parse(r.body).data.jobId))).toEqual(new Set(jobIds));
    await eventually(async () => (await deliveries(accessToken, hook.id)).every((d: { status: string }) => d.status === 'SUCCEEDED'), 'all recorded');
  });

  it('a backlog longer than one turn (50 deliveries) flows on: nothing is claimed and left to hold the webhook for its lease', async () => {
    const { accessToken, user } = await signUp(t.app);
    const hook = await register(accessToken, '/backlog', ['job.failed']);
    const jobIds = Array.from({ length: 130 }, () => uuidv7());
    await t.platform.db.transaction(async (tx) => {
      for (const jobId of jobIds) await emitDomainEvent(tx, 'job.failed', { jobId }, { userId: user.id, at: t.clock.now() });
    });
    // Well under the 60 s claim lease: a delivery claimed at a turn's end and not sent would stall the rest that long.
    await eventually(() => receiver.to('/backlog').length >= 130, '130 deliveries', 30_000);
    expect(
      receiver
        .to('/backlog')
        .map((r) => JSON.parse(r.body).data.jobId)
        .sort(),
    ).toEqual([...jobIds].sort());
    const statuses = async () =>
      (await t.platform.db.select({ status: webhookDeliveries.status }).from(webhookDeliveries).where(eq(webhookDeliveries.webhookId, hook.id))).map(
        (d) => d.status,
      );
    await eventually(async () => (await statuses()).every((status) => status === 'SUCCEEDED'), 'all recorded');
    expect(await statuses()).toHaveLength(130);
  });
});

describe('the outbox feeds the deliveries', () => {
  it('delivers a committed change, nothing for a rolled-back one, only subscribed and published events', async () => {
    const { accessToken, user } = await signUp(t.app);
    const all = await register(accessToken, '/all');
    const failedOnly = await register(accessToken, '/failed-only', ['job.failed']);
    await t.platform.db
      .transaction(async (tx) => {
        await emitDomainEvent(tx, 'job.succeeded', { jobId: 'rolled-back' }, { userId: user.id, at: t.clock.now() });
        throw new Error('the change fails');
      })
      .catch(() => undefined);
    await emit(user.id, 'subscription.renewal_due', { subscriptionId: uuidv7() }); // internal: never published
    await emit(user.id, 'job.succeeded', { jobId: 'committed' });
    await eventually(() => receiver.to('/all').length === 1, 'the committed event');
    await t.services.webhooks.runOnce();
    await sleep(700);
    expect(receiver.to('/all').map((r) => JSON.parse(r.body).data.jobId)).toEqual(['committed']);
    expect(await deliveries(accessToken, failedOnly.id)).toEqual([]);
    expect(await deliveries(accessToken, all.id)).toHaveLength(1);
  });

  it('delivers generation.persisted from a real text generation, scoped to its user', async () => {
    const { accessToken, user } = await signUp(t.app);
    const other = await signUp(t.app);
    await register(accessToken, '/generations', ['generation.persisted']);
    await register(other.accessToken, '/someone-else');
    const answer = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/text',
      headers: bearer(accessToken),
      payload: { model: 'local/text', messages: [{ role: 'user', content: 'Say hello' }] },
    });
    expect(answer.statusCode).toBe(200);
    const received = await eventually(() => receiver.to('/generations')[0], 'the generation event');
    const body = JSON.parse(received.body);
    expect(body).toMatchObject({ event: 'generation.persisted', data: { generationId: expect.any(String), kind: 'TEXT' } });
    expect(received.headers['x-service-event']).toBe('generation.persisted');
    await sleep(700);
    expect(receiver.to('/someone-else')).toHaveLength(0);
    expect(user.id).not.toBe(other.user.id);
  });

  it('delivers job.succeeded from a real async image job with the job id in data', async () => {
    const { accessToken } = await signUp(t.app);
    await register(accessToken, '/jobs', ['job.succeeded', 'job.failed']);
    const submitted = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/image',
      headers: bearer(accessToken),
      payload: { model: 'local/image', prompt: 'a quiet harbour', count: 1, width: 64, height: 64, async: true },
    });
    expect(submitted.statusCode).toBe(200);
    const { jobId } = json(submitted);
    const received = await eventually(() => receiver.to('/jobs')[0], 'the job event', 30_000);
    expect(JSON.parse(received.body)).toMatchObject({ event: 'job.succeeded', data: { jobId, status: 'SUCCEEDED' } });
    expect(received.headers['x-service-event']).toBe('job.succeeded');
  }, 40_000);
});

describe('retention', () => {
  it('purges finished deliveries and dispatched events after 30 days and keeps what still waits', async () => {
    const { accessToken, user, email, password } = await signUp(t.app);
    receiver.answer('/kept', () => ({ status: 500 }));
    const done = await register(accessToken, '/done', ['job.succeeded']);
    await emit(user.id, 'job.succeeded', { jobId: uuidv7() });
    await attemptsRecorded(accessToken, done.id, 1);
    t.clock.advance(31 * 24 * 60 * MINUTE);
    const waiting = await register(await login(email, password), '/kept');
    await emit(user.id, 'job.failed', { jobId: uuidv7() });
    await attemptsRecorded(await login(email, password), waiting.id, 1);

    const purged = await t.services.webhooks.purgeOld();
    expect(purged.deliveries).toBeGreaterThanOrEqual(1);
    expect(purged.events).toBeGreaterThanOrEqual(1);
    const token = await login(email, password);
    expect(await deliveries(token, done.id)).toEqual([]);
    expect((await deliveries(token, waiting.id)).map((d: { status: string }) => d.status)).toEqual(['PENDING']);
  });
});
