import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BuiltApp } from '../src/app.js';
import { domainEvents } from '../src/db/schema/platform.js';
import { webhookAttempts, webhookDeliveries } from '../src/db/schema/webhooks.js';
import { emitDomainEvent } from '../src/platform/events/outbox.js';
import { sharedDatabase, type SharedDatabase } from './helpers/shared-database.js';
import { bearer, json, signUp } from './helpers/test-app.js';
import { eventually, startReceiver, type Receiver } from './helpers/webhook-receiver.js';

let shared: SharedDatabase;
let receiver: Receiver;

beforeAll(async () => {
  shared = await sharedDatabase('webhooks-restart');
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await shared?.close();
});

/** One server instance on the shared database; `startJobs: false` is an instance that dies before any background work. */
const instance = (startJobs: boolean, env: Record<string, string> = { ALLOW_PRIVATE_NETWORK: 'true' }): Promise<BuiltApp> =>
  shared.instance({ startJobs, env });

describe('a crash between a change and its delivery loses no event', () => {
  it('the committed outbox row survives the instance and a new instance on the same database delivers it', async () => {
    const first = await instance(false);
    const { accessToken } = await signUp(first.app);
    const created = await first.app.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: bearer(accessToken),
      payload: { url: receiver.url('/restart'), events: ['generation.persisted'] },
    });
    expect(created.statusCode).toBe(201);
    const hook = json(created);
    const answer = await first.app.inject({
      method: 'POST',
      url: '/v1/ai/text',
      headers: bearer(accessToken),
      payload: { model: 'local/text', messages: [{ role: 'user', content: 'Remember me' }] },
    });
    expect(answer.statusCode).toBe(200);
    // the change committed with its event; the instance goes away before anything was dispatched
    const pending = await first.platform.db.select().from(domainEvents).where(eq(domainEvents.name, 'generation.persisted'));
    expect(pending).toHaveLength(1);
    expect(pending[0]!.dispatchedAt).toBeNull();
    await first.app.close();

    const second = await instance(true);
    try {
      const received = await eventually(() => receiver.to('/restart')[0], 'the delivery after the restart');
      expect(JSON.parse(received.body)).toMatchObject({ event: 'generation.persisted', data: { generationId: pending[0]!.data.generationId } });
      const [event] = await second.platform.db.select().from(domainEvents).where(eq(domainEvents.id, pending[0]!.id));
      expect(event!.dispatchedAt).not.toBeNull();
      await eventually(
        async () => (await second.platform.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.webhookId, hook.id)))[0]?.status === 'SUCCEEDED',
        'the recorded success',
      );
    } finally {
      await second.app.close();
    }
  });

  it('a delivery claimed by an instance that died mid-attempt is taken over once its lease runs out', async () => {
    const app = await instance(true);
    try {
      const { accessToken } = await signUp(app.app);
      const hook = json(
        await app.app.inject({ method: 'POST', url: '/v1/webhooks', headers: bearer(accessToken), payload: { url: receiver.url('/orphan'), events: ['*'] } }),
      );
      // what a dead instance leaves behind: the delivery held by its claim, lease running
      const now = shared.clock.now();
      const [orphan] = await app.platform.db
        .insert(webhookDeliveries)
        .values({
          webhookId: hook.id,
          eventId: '01900000-0000-7000-8000-000000000001',
          event: 'job.succeeded',
          body: '{"event":"job.succeeded","createdAt":"2026-01-01T00:00:00.000Z","data":{"jobId":"x"}}',
          status: 'SENDING',
          claim: 'dead-instance:sending',
          dueAt: new Date(now.getTime() + 60_000),
          createdAt: now,
          updatedAt: now,
        })
        .returning();
      await app.services.webhooks.runOnce();
      await new Promise((resolve) => setTimeout(resolve, 800));
      expect(receiver.to('/orphan')).toHaveLength(0);
      shared.clock.advance(61_000);
      const received = await eventually(() => receiver.to('/orphan')[0], 'the taken-over delivery');
      expect(received.headers['x-service-delivery']).toBe(orphan!.id);
    } finally {
      await app.app.close();
    }
  });
});

describe('every delivery is checked when it is sent', () => {
  it('an instance without private networking refuses a loopback receiver registered earlier, records the failure and never connects', async () => {
    const permissive = await instance(false);
    const { accessToken, user } = await signUp(permissive.app);
    const hook = json(
      await permissive.app.inject({
        method: 'POST',
        url: '/v1/webhooks',
        headers: bearer(accessToken),
        payload: { url: receiver.url('/inside').replace('http:', 'https:'), events: ['*'] },
      }),
    );
    await permissive.app.close();

    const strict = await instance(true, {});
    try {
      await strict.platform.db.transaction((tx) => emitDomainEvent(tx, 'job.succeeded', { jobId: 'x' }, { userId: user.id, at: shared.clock.now() }));
      const delivery = await eventually(async () => {
        const [row] = await strict.platform.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.webhookId, hook.id));
        return row && row.attemptCount === 1 ? row : undefined;
      }, 'the refused attempt');
      expect(delivery.status).toBe('PENDING');
      const [attempt] = await strict.platform.db.select().from(webhookAttempts).where(eq(webhookAttempts.deliveryId, delivery.id));
      expect(attempt).toMatchObject({
        succeeded: 'FAILED',
        statusCode: null,
        error: expect.stringMatching(/address 127\.0\.0\.1 \(loopback\).*is not allowed/),
      });
      expect(receiver.to('/inside')).toHaveLength(0);
    } finally {
      await strict.app.close();
    }
  });
});
