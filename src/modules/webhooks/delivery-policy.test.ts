import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookAttempts, webhookDeliveries, webhookEndpoints } from '../../db/schema/webhooks.js';
import { emitDomainEvent } from '../../platform/events/outbox.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { eventually, startReceiver, type Receiver } from '../../../test/helpers/webhook-receiver.js';

/** With ALLOW_PRIVATE_NETWORK=true, the delivery-time check agrees with registration: plain http reaches private hosts only. */
let t: TestApp;
let receiver: Receiver;
beforeAll(async () => {
  [t, receiver] = await Promise.all([createTestApp({ env: { ALLOW_PRIVATE_NETWORK: 'true' }, startJobs: true }), startReceiver()]);
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const firstAttemptOf = (hookId: string) =>
  eventually(async () => {
    const [delivery] = await t.platform.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.webhookId, hookId));
    if (!delivery || delivery.attemptCount < 1) return undefined;
    const [attempt] = await t.platform.db.select().from(webhookAttempts).where(eq(webhookAttempts.deliveryId, delivery.id));
    return attempt ? { delivery, attempt } : undefined;
  }, `the first attempt on ${hookId}`);

describe('delivery-time check with private networking allowed', () => {
  it('does not deliver over http to a registered host that is now a public address, and still delivers to a loopback one', async () => {
    const { accessToken, user } = await signUp(t.app);
    const inside = await t.app.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: bearer(accessToken),
      payload: { url: receiver.url('/inside'), events: ['*'] },
    });
    expect(inside.statusCode).toBe(201);
    // Written as a fixture: registration refuses this URL now; it stands for a name that resolved inside the network when
    // it was registered and resolves to a public address today.
    const [moved] = await t.platform.db
      .insert(webhookEndpoints)
      .values({ userId: user.id, url: 'http://93.184.216.34/hook', events: ['*'], secret: 'whsec_fixture_moved_host' })
      .returning();

    await t.platform.db.transaction((tx) => emitDomainEvent(tx, 'job.succeeded', { jobId: 'x' }, { userId: user.id, at: t.clock.now() }));

    const received = await eventually(() => receiver.to('/inside')[0], 'the loopback delivery');
    expect(JSON.parse(received.body)).toMatchObject({ event: 'job.succeeded', data: { jobId: 'x' } });
    const { delivery, attempt } = await firstAttemptOf(moved!.id);
    expect(delivery).toMatchObject({ status: 'PENDING', attemptCount: 1, lastStatusCode: null });
    expect(attempt).toMatchObject({
      succeeded: 'FAILED',
      statusCode: null,
      error: 'Plain http reaches private and loopback hosts only, and 93.184.216.34 is a public address: use https.',
    });
    const listed = json(await t.app.inject({ method: 'GET', url: `/v1/webhooks/${moved!.id}/deliveries`, headers: bearer(accessToken) })).items;
    expect(listed[0].attempts[0]).toMatchObject({ succeeded: false, statusCode: null });
  });
});
