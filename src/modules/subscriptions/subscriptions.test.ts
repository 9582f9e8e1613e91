import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { plans } from '../../db/schema/plans.js';
import { subscriptions } from '../../db/schema/subscriptions.js';
import { walletLedger, wallets } from '../../db/schema/wallet.js';
import { DAY_MS } from '../../platform/clock/clock.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { catalogFixtures } from '../../../test/helpers/catalog-fixtures.js';

let t: TestApp;
let f: ReturnType<typeof catalogFixtures>;
beforeAll(async () => {
  t = await createTestApp();
  f = catalogFixtures(t);
});
afterAll(async () => t?.close());

const me = async (token: string) => json(await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(token) }));

async function grantsOf(userId: string) {
  const [w] = await t.platform.db.select().from(wallets).where(eq(wallets.ownerId, userId));
  if (!w) return [];
  return t.platform.db.select().from(walletLedger).where(eq(walletLedger.walletId, w.id));
}

describe('the sign-up plan', () => {
  it('gives a new account the signupDefault plan and its allowance as a GRANT, shown on /v1/users/me', async () => {
    const { user, accessToken } = await signUp(t.app);
    const rows = await t.platform.db.select().from(subscriptions).where(eq(subscriptions.userId, user.id));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 'ACTIVE', origin: 'SIGNUP', endsAt: null });
    expect((await grantsOf(user.id)).map((r) => [r.kind, r.amount, r.note])).toEqual([['GRANT', 1_000_000, 'Free plan allowance']]);

    const body = await me(accessToken);
    expect(body.user.id).toBe(user.id);
    expect(body.activeSubscription).toEqual({
      id: rows[0]!.id,
      status: 'ACTIVE',
      startsAt: rows[0]!.startsAt.toISOString(),
      endsAt: null,
      autoRenew: false,
      nextPlanId: null,
      usage: { tokensUsed: 0, storageMbUsed: 0, imageCreditsUsed: 0, videoCreditsUsed: 0, dailyRequestsUsed: 0, monthlyRequestsUsed: 0 },
      plan: { slug: 'free', name: 'Free', interval: 'MONTHLY', priceCents: 0, currency: 'BDT' },
    });
  });

  it('grants it only once, even when the hook runs again', async () => {
    const { user } = await signUp(t.app);
    const again = await t.platform.db.transaction((tx) => t.services.subscriptions.grantSignupPlan(tx, user.id));
    expect(again).toBeNull();
    expect(await t.platform.db.$count(subscriptions, eq(subscriptions.userId, user.id))).toBe(1);
    expect((await grantsOf(user.id)).filter((r) => r.kind === 'GRANT')).toHaveLength(1);
  });

  it('gives nothing when no plan is marked signupDefault', async () => {
    await t.platform.db.update(plans).set({ status: 'ARCHIVED' }).where(eq(plans.slug, 'free'));
    t.services.plans.invalidate();
    try {
      const { user, accessToken } = await signUp(t.app);
      expect((await me(accessToken)).activeSubscription).toBeNull();
      expect(await grantsOf(user.id)).toEqual([]);
    } finally {
      await t.platform.db.update(plans).set({ status: 'ACTIVE' }).where(eq(plans.slug, 'free'));
      t.services.plans.invalidate();
    }
  });
});

/**
 * Runs a write that bypasses the service (as an operator's SQL would) and waits until the subscription cache heard of
 * it: the table's trigger announces the change on commit, delivered asynchronously on PostgreSQL.
 */
async function writtenBehindTheService(userId: string, write: () => Promise<unknown>): Promise<void> {
  let heardIt: () => void = () => undefined;
  const heard = new Promise<void>((resolve) => (heardIt = resolve));
  const stop = await t.platform.events.subscribe('cache_subscriptions', (key) => {
    if (key === userId) heardIt();
  });
  await write();
  await heard;
  await stop();
}

describe('activeFor', () => {
  it('counts ACTIVE, TRIALING and GRACE (and CANCELED until its end); the newest wins; expiry falls back', async () => {
    const { user } = await signUp(t.app);
    const pro = (await t.services.plans.getBySlug('pro'))!;
    const free = (await t.services.plans.getBySlug('free'))!;
    expect((await t.services.subscriptions.activeFor(user.id))!.plan.slug).toBe('free');

    let trial = { id: '' };
    await writtenBehindTheService(
      user.id,
      async () => (trial = await f.subscribe(user.id, pro.id, 'TRIALING', new Date(t.clock.now().getTime() + 3 * DAY_MS))),
    );
    expect(await t.services.subscriptions.activeFor(user.id)).toMatchObject({ subscription: { id: trial.id, status: 'TRIALING' }, plan: { slug: 'pro' } });
    expect(await t.services.subscriptions.activePlanId(user.id)).toBe(pro.id);

    for (const status of ['GRACE', 'ACTIVE'] as const) {
      await writtenBehindTheService(user.id, () => t.platform.db.update(subscriptions).set({ status }).where(eq(subscriptions.id, trial.id)));
      expect((await t.services.subscriptions.activeFor(user.id))!.subscription.status).toBe(status);
    }
    await writtenBehindTheService(user.id, () => t.platform.db.update(subscriptions).set({ status: 'CANCELED' }).where(eq(subscriptions.id, trial.id)));
    expect((await t.services.subscriptions.activeFor(user.id))!.plan.slug).toBe('pro');
    t.clock.advance(4 * DAY_MS);
    expect((await t.services.subscriptions.activeFor(user.id))!.plan.id).toBe(free.id);

    for (const status of ['PENDING', 'PAST_DUE', 'EXPIRED'] as const) {
      let row: { id: string } | undefined;
      await writtenBehindTheService(user.id, async () => (row = await f.subscribe(user.id, pro.id, status)));
      expect((await t.services.subscriptions.activeFor(user.id))!.plan.slug, status).toBe('free');
      await writtenBehindTheService(user.id, () => t.platform.db.delete(subscriptions).where(eq(subscriptions.id, row!.id)));
    }
    await writtenBehindTheService(user.id, () => f.expireAll(user.id));
    expect(await t.services.subscriptions.activeFor(user.id)).toBeNull();
    expect(await t.services.subscriptions.activePlanId(user.id)).toBeNull();
  });

  it('shows usage of the current cycle, today and this month on /v1/users/me', async () => {
    const { user, accessToken } = await signUp(t.app);
    const wallet = t.services.wallet;
    for (const [tokens, actual] of [
      [100_000, 40_000],
      [50_000, 50_000],
    ]) {
      const requestId = `req_${randomUUID()}`;
      await wallet.reserve({ userId: user.id, tokens: tokens!, requestId });
      await wallet.settle({ requestId, actualTokens: actual! });
    }
    const failed = `req_${randomUUID()}`;
    await wallet.reserve({ userId: user.id, tokens: 10_000, requestId: failed });
    await wallet.release({ requestId: failed });
    const usage = (await me(accessToken)).activeSubscription.usage;
    expect(usage).toMatchObject({ tokensUsed: 90_000, dailyRequestsUsed: 2, monthlyRequestsUsed: 2 });
  });

  it('shows a workspace subscription’s workspaceId and meters the workspace wallet', async () => {
    const { user, accessToken } = await signUp(t.app);
    const studio = (await t.services.plans.getBySlug('studio'))!;
    const row = await f.subscribe(user.id, studio.id);
    const workspaceId = randomUUID();
    await t.platform.db.update(subscriptions).set({ workspaceId }).where(eq(subscriptions.id, row.id));
    await t.services.wallet.credit({ workspaceId, kind: 'GRANT', amount: 500_000, idempotencyKey: `ws:${workspaceId}` });
    const requestId = `req_${randomUUID()}`;
    await t.services.wallet.reserve({ workspaceId, tokens: 70_000, requestId });
    const view = (await me(accessToken)).activeSubscription;
    expect(view).toMatchObject({ id: row.id, workspaceId, plan: { slug: 'studio' }, usage: { tokensUsed: 70_000, dailyRequestsUsed: 1 } });
  });
});
