import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookDeliveries, webhookEndpoints } from '../../db/schema/webhooks.js';
import { claimUndispatchedEvents, emitDomainEvent } from '../../platform/events/outbox.js';
import { workWaiting } from './delivery-claims.js';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

const waiting = () => workWaiting({ db: t.platform.db, clock: t.clock });
const dispatchAll = async () => {
  while ((await claimUndispatchedEvents(t.platform.db, 100, t.clock.now())).length > 0) {
    // the outbox is drained a batch at a time
  }
};

describe('workWaiting', () => {
  it('says whether events wait for dispatch and deliveries of active webhooks are due, and nothing else', async () => {
    const { user } = await signUp(t.app);
    await dispatchAll();
    expect(await waiting()).toEqual({ events: false, due: false });

    await emitDomainEvent(t.platform.db, 'job.succeeded', { jobId: 'j1' }, { userId: user.id });
    expect(await waiting()).toEqual({ events: true, due: false });
    await dispatchAll();

    const [webhook] = await t.platform.db
      .insert(webhookEndpoints)
      .values({ userId: user.id, url: 'https://hooks.example.com/in', events: ['*'], secret: 'whsec_test' })
      .returning();
    const now = t.clock.now();
    const [delivery] = await t.platform.db
      .insert(webhookDeliveries)
      .values({ webhookId: webhook!.id, eventId: crypto.randomUUID(), event: 'job.succeeded', body: '{}', dueAt: new Date(now.getTime() + 60_000) })
      .returning();
    expect(await waiting(), 'a delivery due in a minute is not due yet').toEqual({ events: false, due: false });

    t.clock.advance(60_000);
    expect(await waiting()).toEqual({ events: false, due: true });

    await t.platform.db.update(webhookEndpoints).set({ status: 'DISABLED' }).where(eq(webhookEndpoints.id, webhook!.id));
    expect(await waiting(), 'a disabled webhook gets no attempt').toEqual({ events: false, due: false });

    await t.platform.db.update(webhookEndpoints).set({ status: 'ACTIVE' }).where(eq(webhookEndpoints.id, webhook!.id));
    await t.platform.db.update(webhookDeliveries).set({ status: 'SUCCEEDED' }).where(eq(webhookDeliveries.id, delivery!.id));
    expect(await waiting(), 'a finished delivery is not due').toEqual({ events: false, due: false });
  });
});
