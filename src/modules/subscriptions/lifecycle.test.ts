import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { randomUUID } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { notifications } from '../../db/schema/notifications.js';
import { subscriptionChanges, subscriptions } from '../../db/schema/subscriptions.js';
import { createTestApp, json, type TestApp } from '../../../test/helpers/test-app.js';
import { mailsTo } from '../../../test/helpers/outbox.js';
import { SUBSCRIPTIONS_CHANGED_CHANNEL } from './context.js';
import { createSubscriptionBillingService } from './billing.js';
import { subscriptionJobs } from './jobs.js';
import { fakePayments, subscriptionFixtures, type FakePayments } from '../../../test/helpers/subscriptions.js';

let t: TestApp;
let pay: FakePayments;
let f: ReturnType<typeof subscriptionFixtures>;
let ids: Record<'free' | 'starter' | 'pro', string>;

beforeAll(async () => {
  t = await createTestApp();
  t.clock.set(new Date('2027-03-01T00:00:00Z'));
  pay = fakePayments(t);
  f = subscriptionFixtures(t);
  ids = { free: await f.planId('free'), starter: await f.planId('starter'), pro: await f.planId('pro') };
});
afterAll(async () => t?.close());
beforeEach(() => pay.connect());

type Customer = Awaited<ReturnType<typeof f.customer>>;
const runDue = () => t.services.subscriptionBilling.runDue();
const at = (iso: string) => t.clock.set(new Date(iso));
const rowsOf = (userId: string) => t.platform.db.select().from(subscriptions).where(eq(subscriptions.userId, userId));

async function buy(c: Customer, planId: string, provider = 'card_global') {
  const answer = json(await f.switchTo(await c.token(), { planId, provider }));
  expect(await pay.pay(answer.paymentId)).toMatchObject({ status: 'fulfilled' });
  return answer as { subscriptionId: string; paymentId: string };
}
const me = async (c: Customer) => f.me(await c.token());

describe('subscription status table', () => {
  it('none → TRIALING: POST /v1/subscriptions/trial grants the allowance; once per user; the trial ends without grace', async () => {
    at('2027-03-01T00:00:00Z');
    const c = await f.customer();
    const noTrial = await f.inject(c.accessToken, 'POST', '/v1/subscriptions/trial', { planId: ids.starter });
    expect(noTrial.statusCode).toBe(400);
    expect(json(noTrial).error.message).toBe('The Starter plan has no free trial.');
    expect((await f.inject(c.accessToken, 'POST', '/v1/subscriptions/trial', { planId: 'pro' })).statusCode).toBe(404);

    const response = await f.inject(c.accessToken, 'POST', '/v1/subscriptions/trial', { planId: ids.pro });
    expect(response.statusCode).toBe(201);
    const trial = json(response);
    expect(trial).toMatchObject({
      status: 'TRIALING',
      plan: { slug: 'pro' },
      startsAt: '2027-03-01T00:00:00.000Z',
      endsAt: '2027-03-04T00:00:00.000Z',
      autoRenew: false,
    });
    expect((await f.grants({ userId: c.user.id })).map((g) => [g.amount, g.note])).toEqual([
      [1_000_000, 'Free plan allowance'],
      [35_000_000, 'Pro trial plan allowance'],
    ]);
    expect(await me(c)).toMatchObject({ id: trial.id, status: 'TRIALING' });
    const again = await f.inject(c.accessToken, 'POST', '/v1/subscriptions/trial', { planId: ids.pro });
    expect(json(again).error.message).toMatch(/already used your free trial/);

    at('2027-03-04T00:00:00Z');
    await runDue();
    expect((await rowsOf(c.user.id)).find((r) => r.id === trial.id)!.status).toBe('EXPIRED');
    expect((await me(c))!.plan.slug).toBe('free');
    expect((await t.services.wallet.balance({ userId: c.user.id })).tokens).toBe(36_000_000); // the wallet is kept
    const later = await f.inject(await c.token(), 'POST', '/v1/subscriptions/trial', { planId: ids.pro });
    expect(later.statusCode).toBe(400);
  });

  it('a trial is refused while a paid plan runs; two trials at once give one', async () => {
    const paid = await f.customer();
    await buy(paid, ids.starter);
    const refused = await f.inject(await paid.token(), 'POST', '/v1/subscriptions/trial', { planId: ids.pro });
    expect(json(refused).error.message).toBe('You already have a paid plan; trials are for trying a plan before buying one.');

    const racer = await f.customer();
    const both = await Promise.all([0, 1].map(() => f.inject(racer.accessToken, 'POST', '/v1/subscriptions/trial', { planId: ids.pro })));
    expect(both.map((r) => r.statusCode).sort()).toEqual([201, 400]);
    expect((await f.grants({ userId: racer.user.id })).length).toBe(2);
  });

  it('PENDING → ACTIVE when the gateway confirms the plan payment', async () => {
    const c = await f.customer();
    const answer = json(await f.switchTo(c.accessToken, { planId: ids.starter, provider: 'card_global' }));
    expect((await rowsOf(c.user.id)).find((r) => r.id === answer.subscriptionId)).toMatchObject({ status: 'PENDING', cycle: 0 });
    await pay.pay(answer.paymentId);
    expect((await rowsOf(c.user.id)).find((r) => r.id === answer.subscriptionId)).toMatchObject({ status: 'ACTIVE', cycle: 1, cycleValueCents: 49_900 });
  });

  it('ACTIVE → CANCELED: access continues until endsAt, future cycles stop, autoRenew false, subscription.canceled emitted', async () => {
    at('2027-03-01T00:00:00Z');
    const c = await f.customer();
    const { subscriptionId } = await buy(c, ids.starter, 'dcb'); // a channel that renews by itself
    expect((await me(c))!.autoRenew).toBe(true);
    const response = await f.inject(await c.token(), 'POST', `/v1/subscriptions/${subscriptionId}/cancel`);
    expect(response.statusCode).toBe(200);
    expect(json(response)).toMatchObject({ id: subscriptionId, status: 'CANCELED', autoRenew: false, endsAt: '2027-04-01T00:00:00.000Z' });
    expect(await me(c)).toMatchObject({ id: subscriptionId, status: 'CANCELED', plan: { slug: 'starter' } });
    const [event] = await f.events('subscription.canceled', c.user.id);
    expect(event!.data).toEqual({ subscriptionId, planId: ids.starter, endsAt: '2027-04-01T00:00:00.000Z', reason: 'customer' });
    expect((await f.inject(await c.token(), 'POST', `/v1/subscriptions/${subscriptionId}/cancel`)).statusCode).toBe(400);
    const free = (await rowsOf(c.user.id)).find((r) => r.planId === ids.free)!;
    expect(json(await f.inject(await c.token(), 'POST', `/v1/subscriptions/${free.id}/cancel`)).error.message).toMatch(/free plan has no billing to cancel/);

    at('2027-04-01T00:00:00Z');
    await runDue();
    expect((await rowsOf(c.user.id)).find((r) => r.id === subscriptionId)!.status).toBe('CANCELED');
    expect((await me(c))!.plan.slug).toBe('free');
    expect(await f.events('subscription.renewal_due', c.user.id)).toEqual([]);
    expect(await f.grants({ userId: c.user.id })).toHaveLength(2);
  });

  it('ACTIVE → upgrade: a new plan effective now, prorated, tokens carried over', async () => {
    at('2027-03-01T00:00:00Z');
    const c = await f.customer();
    const { subscriptionId } = await buy(c, ids.starter);
    at('2027-03-11T00:00:00Z');
    const answer = json(await f.inject(await c.token(), 'POST', `/v1/subscriptions/${subscriptionId}/upgrade`, { planId: ids.pro, provider: 'card_global' }));
    expect(answer).toMatchObject({ amountDueCents: 116_097, subscriptionId });
    await pay.pay(answer.paymentId);
    expect(await me(c)).toMatchObject({ id: subscriptionId, status: 'ACTIVE', plan: { slug: 'pro' }, endsAt: '2027-04-11T00:00:00.000Z' });
    expect((await t.services.wallet.balance({ userId: c.user.id })).tokens).toBe(1_000_000 + 10_000_000 + 35_000_000);
  });

  it('ACTIVE → downgrade: paid now, the current tier kept until effectiveAt, then the new plan and its allowance, once', async () => {
    at('2027-03-01T00:00:00Z');
    const c = await f.customer();
    const { subscriptionId } = await buy(c, ids.pro);
    at('2027-03-11T00:00:00Z');
    const answer = json(
      await f.inject(await c.token(), 'POST', `/v1/subscriptions/${subscriptionId}/downgrade`, { planId: ids.starter, provider: 'card_global' }),
    );
    expect(answer).toMatchObject({ kind: 'downgrade', scheduled: true, amountDueCents: 49_900, effectiveAt: '2027-04-01T00:00:00.000Z' });
    expect(await pay.pay(answer.paymentId)).toMatchObject({ status: 'fulfilled', applied: false });
    expect(await me(c)).toMatchObject({ plan: { slug: 'pro' }, nextPlanId: ids.starter });

    at('2027-03-31T23:59:59Z');
    await runDue();
    expect((await me(c))!.plan.slug).toBe('pro');
    at('2027-04-01T00:00:00Z');
    await Promise.all([runDue(), runDue()]);
    await runDue();
    expect(await me(c)).toMatchObject({
      id: subscriptionId,
      status: 'ACTIVE',
      plan: { slug: 'starter' },
      startsAt: '2027-04-01T00:00:00.000Z',
      endsAt: '2027-05-01T00:00:00.000Z',
      nextPlanId: null,
    });
    expect((await f.grants({ userId: c.user.id })).map((g) => [g.amount, g.paymentId])).toEqual([
      [1_000_000, null],
      [35_000_000, expect.any(String)],
      [10_000_000, answer.paymentId],
    ]);
  });

  it('ACTIVE → switch to a free plan: scheduled, nothing to pay; at the end of the paid cycle the account is on it', async () => {
    at('2027-03-01T00:00:00Z');
    const c = await f.customer();
    const { subscriptionId } = await buy(c, ids.starter);
    const answer = json(await f.switchTo(await c.token(), { planId: ids.free }));
    expect(answer).toMatchObject({ scheduled: true, amountDueCents: 0, effectiveAt: '2027-04-01T00:00:00.000Z' });
    at('2027-04-01T00:00:00Z');
    await runDue();
    expect((await rowsOf(c.user.id)).find((r) => r.id === subscriptionId)).toMatchObject({ status: 'EXPIRED' });
    expect((await me(c))!.plan.slug).toBe('free');
    expect(await f.events('subscription.renewal_due', c.user.id)).toEqual([]);
  });

  it('ACTIVE → GRACE when a paid cycle ends unpaid (access continues 3 days) → EXPIRED: free plan, wallet kept', async () => {
    at('2027-03-01T00:00:00Z');
    const c = await f.customer();
    const { subscriptionId } = await buy(c, ids.starter);
    at('2027-04-01T00:00:00Z');
    await Promise.all([runDue(), runDue()]);
    expect(await me(c)).toMatchObject({ id: subscriptionId, status: 'GRACE', plan: { slug: 'starter' } });
    expect((await f.list(await c.token()))[0]).toMatchObject({ status: 'GRACE', graceEndsAt: '2027-04-04T00:00:00.000Z' });
    expect(await f.events('subscription.renewal_due', c.user.id)).toEqual([]); // the card gateway never renews
    const balance = (await t.services.wallet.balance({ userId: c.user.id })).tokens;

    at('2027-04-03T23:59:59Z');
    await runDue();
    expect((await me(c))!.status).toBe('GRACE');
    at('2027-04-04T00:00:00Z');
    await Promise.all([runDue(), runDue()]);
    expect((await rowsOf(c.user.id)).find((r) => r.id === subscriptionId)!.status).toBe('EXPIRED');
    expect((await me(c))!.plan.slug).toBe('free');
    expect((await t.services.wallet.balance({ userId: c.user.id })).tokens).toBe(balance);
    const events = await f.events('subscription.canceled', c.user.id);
    expect(events.map((e) => e.data)).toEqual([{ subscriptionId, planId: ids.starter, endsAt: '2027-04-01T00:00:00.000Z', reason: 'unpaid' }]);
  });

  it('a channel that renews by itself: GRACE with one renewal request, then the confirmed charge renews once', async () => {
    at('2027-03-01T00:00:00Z');
    const c = await f.customer();
    const { subscriptionId } = await buy(c, ids.starter, 'dcb');
    at('2027-04-01T00:00:30Z');
    await Promise.all([runDue(), runDue()]);
    await runDue();
    const requests = await f.events('subscription.renewal_due', c.user.id);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.data).toMatchObject({ subscriptionId, cycle: 1, planId: ids.starter, amountCents: 49_900, currency: 'BDT', channel: 'dcb' });
    expect((await me(c))!.status).toBe('GRACE');

    const paymentId = randomUUID();
    expect(await pay.payRenewal(requests[0]!, paymentId)).toMatchObject({ status: 'fulfilled', applied: true });
    expect(await pay.payRenewal(requests[0]!, paymentId)).toMatchObject({ status: 'already_fulfilled' });
    expect(await pay.payRenewal(requests[0]!)).toMatchObject({ status: 'unfulfillable' }); // a second charge for the same cycle
    expect(await me(c)).toMatchObject({ status: 'ACTIVE', startsAt: '2027-04-01T00:00:00.000Z', endsAt: '2027-05-01T00:00:00.000Z', autoRenew: true });
    await runDue();
    const grants = await f.grants({ userId: c.user.id });
    expect(grants.map((g) => [g.amount, g.idempotencyKey])).toEqual([
      [1_000_000, `signup-grant:${c.user.id}`],
      [10_000_000, `plan-grant:${subscriptionId}:1`],
      [10_000_000, `plan-grant:${subscriptionId}:2`],
    ]);
  });

  it('the lifecycle job run twice at once, and again, grants once and requests one renewal', async () => {
    at('2027-03-01T00:00:00Z');
    const c = await f.customer();
    const { subscriptionId } = await buy(c, ids.pro, 'dcb');
    const [job] = subscriptionJobs(t.services.subscriptionBilling);
    expect(job!.options?.cron).toBe('* * * * *');
    at('2027-04-01T00:00:00Z');
    await Promise.all([job!.handler({}, { id: 'a', retryCount: 0 }), job!.handler({}, { id: 'b', retryCount: 0 })]);
    await job!.handler({}, { id: 'a', retryCount: 1 });
    const [request, ...more] = await f.events('subscription.renewal_due', c.user.id);
    expect(more).toEqual([]);
    await Promise.all([pay.payRenewal(request!, request!.id), pay.payRenewal(request!, request!.id)]);
    await Promise.all([job!.handler({}, { id: 'c', retryCount: 0 }), job!.handler({}, { id: 'd', retryCount: 0 })]);
    expect((await f.grants({ userId: c.user.id })).filter((g) => g.idempotencyKey.startsWith(`plan-grant:${subscriptionId}`))).toHaveLength(2);
    const opened = await t.platform.db
      .select()
      .from(subscriptionChanges)
      .where(and(eq(subscriptionChanges.subscriptionId, subscriptionId), eq(subscriptionChanges.kind, 'RENEWAL')));
    expect(opened.map((r) => r.status)).toEqual(['APPLIED']);
  });
});

describe('reminders', () => {
  it('3 days and 1 day before a cycle ends, each once, by mail and as SUBSCRIPTION_EXPIRING; the mail respects emailBillingAlerts', async () => {
    at('2027-05-01T00:00:00Z');
    const c = await f.customer();
    const quiet = await f.customer();
    await buy(c, ids.starter);
    await buy(quiet, ids.starter, 'dcb');
    expect((await f.inject(quiet.accessToken, 'PATCH', '/v1/account/notification-prefs', { emailBillingAlerts: false })).statusCode).toBe(200);
    const inbox = (userId: string) =>
      t.platform.db
        .select()
        .from(notifications)
        .where(and(eq(notifications.userId, userId), eq(notifications.type, 'SUBSCRIPTION_EXPIRING')));

    at('2027-05-28T23:59:00Z');
    await runDue();
    expect(await inbox(c.user.id)).toEqual([]);
    at('2027-05-29T00:00:00Z');
    await Promise.all([runDue(), runDue()]);
    await runDue();
    expect((await inbox(c.user.id)).map((n) => [n.title, n.payload.reminder])).toEqual([['Your Starter plan ends in 3 days', '3d']]);
    expect((await mailsTo(t.platform.db, c.email)).map((m) => m.subject)).toEqual(['Your Starter plan ends in 3 days']);
    expect((await inbox(quiet.user.id)).map((n) => n.title)).toEqual(['Your Starter plan renews in 3 days']);
    expect(await mailsTo(t.platform.db, quiet.email)).toEqual([]);

    at('2027-05-31T00:00:00Z');
    await runDue();
    await runDue();
    expect((await inbox(c.user.id)).map((n) => n.payload.reminder).sort()).toEqual(['1d', '3d']);
    const mails = await mailsTo(t.platform.db, c.email);
    expect(mails.map((m) => m.subject)).toEqual(['Your Starter plan ends tomorrow', 'Your Starter plan ends in 3 days']);
    expect(mails[0]!.text).toMatch(/ends on 2027-06-01\. Renew it to keep your allowance/);
  });

  it('a 3-day trial gets only the 1-day reminder', async () => {
    at('2027-07-01T00:00:00Z');
    const c = await f.customer();
    await f.inject(c.accessToken, 'POST', '/v1/subscriptions/trial', { planId: ids.pro });
    await runDue();
    at('2027-07-03T00:00:00Z');
    await runDue();
    const inbox = await t.platform.db
      .select()
      .from(notifications)
      .where(and(eq(notifications.userId, c.user.id), eq(notifications.type, 'SUBSCRIPTION_EXPIRING')));
    expect(inbox.map((n) => [n.title, n.payload.reminder])).toEqual([['Your Pro trial ends tomorrow', '1d']]);
  });
});

describe('seams', () => {
  it('a workspace subscription’s allowance goes to the workspace wallet', async () => {
    at('2027-08-01T00:00:00Z');
    const c = await f.customer();
    const { subscriptionId } = await buy(c, ids.starter, 'dcb');
    const workspaceId = randomUUID();
    await t.platform.db.update(subscriptions).set({ workspaceId }).where(eq(subscriptions.id, subscriptionId)); // an operator action
    at('2027-09-01T00:00:00Z');
    await runDue();
    const [request] = await f.events('subscription.renewal_due', c.user.id);
    await pay.payRenewal(request!);
    expect((await f.grants({ workspaceId })).map((g) => [g.amount, g.idempotencyKey])).toEqual([[10_000_000, `plan-grant:${subscriptionId}:2`]]);
    expect(await f.me(await c.token())).toMatchObject({ id: subscriptionId, workspaceId, status: 'ACTIVE' });
  });

  it('every change is announced on subscriptions_changed after its commit', async () => {
    const c = await f.customer();
    const heard: unknown[] = [];
    const stop = await t.platform.events.subscribe(SUBSCRIPTIONS_CHANGED_CHANNEL, (payload) => heard.push(payload));
    try {
      await f.inject(c.accessToken, 'POST', '/v1/subscriptions/trial', { planId: ids.pro });
      await vi.waitFor(() => expect(heard).toContainEqual({ userId: c.user.id }));
    } finally {
      await stop();
    }
  });

  it('calls onSubscriptionChanged(userId) after the commit, when the change is visible to other connections', async () => {
    const seen: Array<Promise<{ userId: string; statuses: string[] }>> = [];
    const statusesOf = async (userId: string) => ({ userId, statuses: (await rowsOf(userId)).map((r) => r.status).sort() });
    const billing = createSubscriptionBillingService({
      db: t.platform.db,
      clock: t.clock,
      plans: t.services.plans,
      wallet: t.services.wallet,
      subscriptions: t.services.subscriptions,
      notifications: t.services.notifications,
      mailer: t.platform.mailer,
      userContact: async () => null,
      frontendUrl: 'https://app.example',
      onSubscriptionChanged: (userId) => void seen.push(statusesOf(userId)),
    });
    const c = await f.customer();
    const trial = await billing.startTrial(c.user.id, ids.pro);
    expect(await Promise.all(seen)).toEqual([{ userId: c.user.id, statuses: ['ACTIVE', 'TRIALING'] }]);
    await billing.cancel(c.user.id, trial.id);
    await expect(billing.cancel(c.user.id, trial.id)).rejects.toThrow(/already cancelled/); // a refused change announces nothing
    expect(await Promise.all(seen)).toEqual([
      { userId: c.user.id, statuses: ['ACTIVE', 'TRIALING'] },
      { userId: c.user.id, statuses: ['ACTIVE', 'CANCELED'] },
    ]);
  });
});
