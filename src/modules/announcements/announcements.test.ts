import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { notifications } from '../../db/schema/notifications.js';
import { setPlan } from '../../../test/helpers/gateway.js';
import { waitForQueue } from '../../../test/helpers/jobs.js';
import { createAnnouncementsService } from './service.js';
import { bearer, createTestApp, json, signUp, signUpAs, type TestApp } from '../../../test/helpers/test-app.js';

let t: TestApp;
let superAdmin: Awaited<ReturnType<typeof signUpAs>>;
let admin: Awaited<ReturnType<typeof signUpAs>>;

beforeAll(async () => {
  t = await createTestApp({ startJobs: true });
  superAdmin = await signUpAs(t, 'SUPER_ADMIN');
  admin = await signUpAs(t, 'ADMIN');
});
afterAll(async () => t?.close());

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
// Access tokens live 15 minutes: the clock moves 8 in all.
const create = (body: object, token = superAdmin.accessToken) =>
  t.app.inject({ method: 'POST', url: '/v1/admin/announcements', headers: bearer(token), payload: body });
const banners = async (token?: string): Promise<Array<{ id: string; title: string; level: string }>> => {
  const response = await t.app.inject({ method: 'GET', url: '/v1/announcements', headers: token ? bearer(token) : {} });
  expect(response.statusCode).toBe(200);
  return json(response).items;
};
const titles = async (token?: string) => (await banners(token)).map((b) => b.title);
const onPlan = async (userId: string, slug: string) => {
  await setPlan(t, userId, slug);
  t.services.subscriptions.forgetCached(userId);
};
const inbox = async (userId: string, announcementId: string) =>
  t.platform.db
    .select()
    .from(notifications)
    .where(and(eq(notifications.userId, userId), eq(notifications.type, 'ANNOUNCEMENT')))
    .then((rows) => rows.filter((n) => n.payload.announcementId === announcementId));

describe('banners for the viewer', () => {
  it('shows an announcement inside its window only, by the clock', async () => {
    const now = t.clock.now().getTime();
    const created = await create({
      title: 'Maintenance',
      body: 'Down for an hour.',
      level: 'WARNING',
      startsAt: new Date(now + 4 * MINUTE).toISOString(),
      endsAt: new Date(now + 8 * MINUTE).toISOString(),
    });
    expect(created.statusCode).toBe(201);
    expect(json(created)).toMatchObject({
      title: 'Maintenance',
      level: 'WARNING',
      audience: 'EVERYONE',
      plans: [],
      link: null,
      notification: { requestedAt: null, recipients: 0 },
    });
    expect(await titles()).not.toContain('Maintenance');
    t.clock.advance(4 * MINUTE);
    expect(await titles()).toContain('Maintenance');
    t.clock.advance(4 * MINUTE);
    expect(await titles()).not.toContain('Maintenance');
  });

  it('audiences: everyone sees EVERYONE, signed-in viewers SIGNED_IN, viewers on a listed plan PLANS; critical first', async () => {
    const pro = await signUp(t.app);
    const free = await signUp(t.app);
    await onPlan(pro.user.id, 'pro');
    for (const body of [
      { title: 'All', body: 'x' },
      { title: 'Members', body: 'x', audience: 'SIGNED_IN', link: 'https://example.com/news' },
      { title: 'Pro', body: 'x', audience: 'PLANS', plans: ['pro'] },
      { title: 'Outage', body: 'x', level: 'CRITICAL' },
    ]) {
      expect((await create(body)).statusCode).toBe(201);
    }
    const anonymous = await titles();
    expect(anonymous).toEqual(expect.arrayContaining(['All', 'Outage']));
    expect(anonymous).not.toContain('Members');
    expect(anonymous).not.toContain('Pro');
    expect(anonymous[0]).toBe('Outage');
    expect(await titles(free.accessToken)).toEqual(expect.arrayContaining(['All', 'Members', 'Outage']));
    expect(await titles(free.accessToken)).not.toContain('Pro');
    expect(await titles(pro.accessToken)).toEqual(expect.arrayContaining(['All', 'Members', 'Pro', 'Outage']));
    expect(await titles('stale-token')).toEqual(anonymous);
  });

  it('refuses bad input and changes nothing; ADMIN reads but does not change', async () => {
    const before = json(await t.app.inject({ method: 'GET', url: '/v1/admin/announcements?limit=100', headers: bearer(admin.accessToken) })).items.length;
    expect((await create({ title: 'x', body: 'x' }, admin.accessToken)).statusCode).toBe(403);
    const noPlans = await create({ title: 'x', body: 'x', audience: 'PLANS' });
    expect(noPlans.statusCode).toBe(400);
    expect(json(noPlans).error.details).toMatchObject({ field: 'plans' });
    expect((await create({ title: 'x', body: 'x', audience: 'PLANS', plans: ['platinum'] })).statusCode).toBe(400);
    expect((await create({ title: 'x', body: 'x', plans: ['pro'] })).statusCode).toBe(400);
    expect((await create({ title: 'x', body: 'x', level: 'LOUD' })).statusCode).toBe(400);
    expect((await create({ title: 'x', body: 'x', link: 'javascript:alert(1)' })).statusCode).toBe(400);
    const now = t.clock.now().getTime();
    expect((await create({ title: 'x', body: 'x', startsAt: new Date(now).toISOString(), endsAt: new Date(now - HOUR).toISOString() })).statusCode).toBe(400);
    const after = json(await t.app.inject({ method: 'GET', url: '/v1/admin/announcements?limit=100', headers: bearer(admin.accessToken) })).items.length;
    expect(after).toBe(before);
    expect(
      (await t.app.inject({ method: 'GET', url: '/v1/admin/announcements/0190a000-0000-7000-8000-000000000000', headers: bearer(admin.accessToken) }))
        .statusCode,
    ).toBe(404);
  });

  it('every change is audited with before and after; the admin list is cursor-paged', async () => {
    const { id } = json(await create({ title: 'Audited', body: 'v1' }));
    const patched = await t.app.inject({
      method: 'PATCH',
      url: `/v1/admin/announcements/${id}`,
      headers: bearer(superAdmin.accessToken),
      payload: { body: 'v2', level: 'WARNING' },
    });
    expect(patched.statusCode).toBe(200);
    expect(json(patched)).toMatchObject({ body: 'v2', level: 'WARNING', title: 'Audited' });
    expect(await titles()).toContain('Audited');
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/admin/announcements/${id}`, headers: bearer(superAdmin.accessToken) })).statusCode).toBe(200);
    expect(await titles()).not.toContain('Audited');

    const audit = json(
      await t.app.inject({ method: 'GET', url: `/v1/admin/audit?targetType=announcement&targetId=${id}`, headers: bearer(admin.accessToken) }),
    );
    expect(audit.items.map((e: { action: string }) => e.action)).toEqual(['announcement.delete', 'announcement.update', 'announcement.create']);
    expect(audit.items[1]).toMatchObject({
      actor: { userId: superAdmin.user.id },
      before: { body: 'v1', level: 'INFO' },
      after: { body: 'v2', level: 'WARNING' },
    });
    expect(audit.items[0]).toMatchObject({ before: { body: 'v2' }, after: null });

    const first = json(await t.app.inject({ method: 'GET', url: '/v1/admin/announcements?limit=2', headers: bearer(admin.accessToken) }));
    expect(first.items).toHaveLength(2);
    const second = json(
      await t.app.inject({ method: 'GET', url: `/v1/admin/announcements?limit=2&cursor=${first.nextCursor}`, headers: bearer(admin.accessToken) }),
    );
    expect(second.items.map((a: { id: string }) => a.id)).not.toContain(first.items[0].id);
  });
});

describe('the ANNOUNCEMENT notification', () => {
  it('goes once to each member of the audience, in batches, not to users who switched it off, even when asked again', async () => {
    const pro = await signUp(t.app);
    const proOptedOut = await signUp(t.app);
    const free = await signUp(t.app);
    await onPlan(pro.user.id, 'pro');
    await onPlan(proOptedOut.user.id, 'pro');
    await t.services.notifications.updatePrefs(proOptedOut.user.id, { inAppCommunityActivity: false });

    const { id } = json(await create({ title: 'Pro news', body: 'New models', audience: 'PLANS', plans: ['pro'] }));
    const notify = () => t.app.inject({ method: 'POST', url: `/v1/admin/announcements/${id}/notify`, headers: bearer(superAdmin.accessToken) });
    const [first, second] = await Promise.all([notify(), notify()]);
    expect([first.statusCode, second.statusCode]).toEqual([202, 202]);
    expect([json(first).queued, json(second).queued].sort()).toEqual([false, true]);
    await waitForQueue(t.platform.db, 'announcements.notify');
    // A retried job or a late repeat sends nothing more.
    await t.services.announcements.runNotificationRound(id);
    const third = await notify();
    const written = (await t.platform.db.select().from(notifications).where(eq(notifications.type, 'ANNOUNCEMENT'))).filter(
      (n) => n.payload.announcementId === id,
    );
    // Every user on the pro plan (earlier tests made some) but the one who switched it off, each once.
    expect(new Set(written.map((n) => n.userId)).size).toBe(written.length);
    expect(json(third)).toMatchObject({ queued: false, announcement: { notification: { recipients: written.length, sentAt: expect.any(String) } } });

    expect(await inbox(pro.user.id, id)).toHaveLength(1);
    expect((await inbox(pro.user.id, id))[0]).toMatchObject({ title: 'Pro news', body: 'New models', payload: { announcementId: id, level: 'INFO' } });
    expect(await inbox(proOptedOut.user.id, id)).toHaveLength(0);
    expect(await inbox(free.user.id, id)).toHaveLength(0);
    const list = json(await t.app.inject({ method: 'GET', url: '/v1/notifications', headers: bearer(pro.accessToken) }));
    expect(list.items.some((n: { type: string; payload: { announcementId?: string } }) => n.type === 'ANNOUNCEMENT' && n.payload.announcementId === id)).toBe(
      true,
    );

    const audit = json(
      await t.app.inject({ method: 'GET', url: `/v1/admin/audit?action=announcement.notify&targetId=${id}`, headers: bearer(admin.accessToken) }),
    );
    expect(audit.items).toHaveLength(1);
  });

  it('notify on create reaches every signed-in account across batches; CRITICAL ignores the preference; an ended one is refused', async () => {
    const optedOut = await signUp(t.app);
    await t.services.notifications.updatePrefs(optedOut.user.id, { inAppCommunityActivity: false });
    // A second service over the same database with batches of 3 runs the round beside the app's worker (batches of
    // 500): each batch commits with the cursor it started from, so the two never notify anyone twice.
    const small = createAnnouncementsService({
      db: t.platform.db,
      clock: t.clock,
      audit: t.services.audit,
      notifications: t.services.notifications,
      queue: t.platform.jobs,
      planOf: async () => null,
      planExists: async () => true,
      userIdsAfter: (afterId, limit) => t.services.auth.data.users.activeUserIdsAfter(afterId, limit),
      batchSize: 3,
    });
    const actor = { userId: superAdmin.user.id, role: 'SUPER_ADMIN' };
    const created = await small.create(actor, { title: 'Security fix', body: 'Update now', level: 'CRITICAL', audience: 'SIGNED_IN', notify: true });
    const { id } = created;
    expect(created.notification.requestedAt).toEqual(expect.any(String));
    await small.runNotificationRound(id);
    await waitForQueue(t.platform.db, 'announcements.notify');
    const view = json(await t.app.inject({ method: 'GET', url: `/v1/admin/announcements/${id}`, headers: bearer(admin.accessToken) }));
    const accounts = await t.services.auth.data.users.activeUserIdsAfter(null, 10_000);
    expect(accounts.length).toBeGreaterThan(5);
    expect(view.notification).toMatchObject({ recipients: accounts.length, sentAt: expect.any(String) });
    for (const userId of accounts) expect(await inbox(userId, id)).toHaveLength(1);
    expect(await inbox(optedOut.user.id, id)).toHaveLength(1);

    const now = t.clock.now().getTime();
    const ended = json(await create({ title: 'Old', body: 'x', startsAt: new Date(now - 2 * HOUR).toISOString(), endsAt: new Date(now - HOUR).toISOString() }));
    const refused = await t.app.inject({ method: 'POST', url: `/v1/admin/announcements/${ended.id}/notify`, headers: bearer(superAdmin.accessToken) });
    expect(refused.statusCode).toBe(409);
    expect((await t.app.inject({ method: 'POST', url: `/v1/admin/announcements/${ended.id}/notify`, headers: bearer(admin.accessToken) })).statusCode).toBe(
      403,
    );
  });
});
