import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import type { NewNotification } from './service.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

const get = (url: string, token: string | null) => t.app.inject({ method: 'GET', url, headers: token ? bearer(token) : {} });
const post = (url: string, token: string | null) => t.app.inject({ method: 'POST', url, headers: token ? bearer(token) : {} });

/** Notifications come from other modules through the service; each one a millisecond apart. */
async function notify(userId: string, count: number, overrides: Partial<NewNotification> = {}) {
  const rows = [];
  for (let i = 0; i < count; i++) {
    t.clock.advance(1);
    rows.push(
      await t.services.notifications.notify(t.platform.db, {
        userId,
        type: 'JOB_SUCCEEDED',
        title: `Job ${i} finished`,
        payload: { jobId: `job-${i}` },
        ...overrides,
      }),
    );
  }
  return rows;
}

describe('GET /v1/notifications', () => {
  it("lists the caller's notifications newest first with the Notification fields and the unread count", async () => {
    const { accessToken, user } = await signUp(t.app);
    await notify(user.id, 3);
    const response = await get('/v1/notifications', accessToken);
    expect(response.statusCode).toBe(200);
    const body = json(response);
    expect(body.unreadCount).toBe(3);
    expect(body.nextCursor).toBeNull();
    expect(body.items.map((n: { title: string }) => n.title)).toEqual(['Job 2 finished', 'Job 1 finished', 'Job 0 finished']);
    expect(body.items[0]).toEqual({
      id: expect.any(String),
      type: 'JOB_SUCCEEDED',
      title: 'Job 2 finished',
      body: null,
      payload: { jobId: 'job-2' },
      readAt: null,
      createdAt: t.clock.now().toISOString(),
    });
  });

  it('pages with limit (1-100, default 30) and cursor, every row exactly once, even while new ones arrive', async () => {
    const { accessToken, user } = await signUp(t.app);
    await notify(user.id, 35);
    const first = json(await get('/v1/notifications', accessToken));
    expect(first.items).toHaveLength(30);
    await notify(user.id, 2); // newer rows do not shift the next page
    const second = json(await get(`/v1/notifications?cursor=${first.nextCursor}`, accessToken));
    expect(second.items).toHaveLength(5);
    expect(second.nextCursor).toBeNull();
    const ids = [...first.items, ...second.items].map((n: { id: string }) => n.id);
    expect(new Set(ids).size).toBe(35);
    expect(second.unreadCount).toBe(37);
    expect(json(await get('/v1/notifications?limit=100', accessToken)).items).toHaveLength(37);
    expect(json(await get('/v1/notifications?limit=1', accessToken)).items).toHaveLength(1);
  });

  it('unreadOnly filters, while unreadCount stays the full unread total', async () => {
    const { accessToken, user } = await signUp(t.app);
    const [a] = await notify(user.id, 3);
    await post(`/v1/notifications/${a!.id}/read`, accessToken);
    const unread = json(await get('/v1/notifications?unreadOnly=true&limit=1', accessToken));
    expect(unread.items).toHaveLength(1);
    expect(unread.unreadCount).toBe(2);
    const all = json(await get('/v1/notifications?unreadOnly=false', accessToken));
    expect(all.items).toHaveLength(3);
    expect(json(await get('/v1/notifications?unreadOnly=true', accessToken)).items.map((n: { id: string }) => n.id)).not.toContain(a!.id);
  });

  it('refuses bad query parameters with 400; needs a token', async () => {
    const { accessToken } = await signUp(t.app);
    for (const query of ['limit=0', 'limit=101', 'limit=x', 'unreadOnly=maybe', 'cursor=!!', 'type=SYSTEM']) {
      const response = await get(`/v1/notifications?${query}`, accessToken);
      expect(response.statusCode).toBe(400);
      expect(json(response).error.code).toBe('BAD_REQUEST');
    }
    expect((await get('/v1/notifications', null)).statusCode).toBe(401);
  });

  it("never shows another user's notifications", async () => {
    const a = await signUp(t.app);
    const b = await signUp(t.app);
    await notify(b.user.id, 2);
    expect(json(await get('/v1/notifications', a.accessToken))).toEqual({ items: [], nextCursor: null, unreadCount: 0 });
  });
});

describe('marking notifications read', () => {
  it('read sets readAt; a missing, already-read or foreign id is a no-op that still answers ok', async () => {
    const a = await signUp(t.app);
    const b = await signUp(t.app);
    const [mine] = await notify(a.user.id, 1);
    const [theirs] = await notify(b.user.id, 1);
    const response = await post(`/v1/notifications/${mine!.id}/read`, a.accessToken);
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ ok: true });
    const readAt = json(await get('/v1/notifications', a.accessToken)).items[0].readAt;
    expect(readAt).toBe(t.clock.now().toISOString());
    t.clock.advance(5000);
    expect(json(await post(`/v1/notifications/${mine!.id}/read`, a.accessToken))).toEqual({ ok: true });
    expect(json(await get('/v1/notifications', a.accessToken)).items[0].readAt).toBe(readAt);
    expect(json(await post(`/v1/notifications/${theirs!.id}/read`, a.accessToken))).toEqual({ ok: true });
    expect(json(await get('/v1/notifications', b.accessToken)).unreadCount).toBe(1);
    expect(json(await post('/v1/notifications/01900000-0000-7000-8000-000000000000/read', a.accessToken))).toEqual({ ok: true });
    expect(json(await post('/v1/notifications/not-an-id/read', a.accessToken))).toEqual({ ok: true });
    expect((await post(`/v1/notifications/${mine!.id}/read`, null)).statusCode).toBe(401);
  });

  it('read-all marks every unread notification of the caller and says how many', async () => {
    const a = await signUp(t.app);
    const b = await signUp(t.app);
    const [first] = await notify(a.user.id, 4);
    await notify(b.user.id, 2);
    await post(`/v1/notifications/${first!.id}/read`, a.accessToken);
    const response = await post('/v1/notifications/read-all', a.accessToken);
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ ok: true, updated: 3 });
    expect(json(await get('/v1/notifications', a.accessToken)).unreadCount).toBe(0);
    expect(json(await get('/v1/notifications', b.accessToken)).unreadCount).toBe(2);
    expect(json(await post('/v1/notifications/read-all', a.accessToken))).toEqual({ ok: true, updated: 0 });
    expect((await post('/v1/notifications/read-all', null)).statusCode).toBe(401);
  });
});

describe('notify() and the in-app preferences', () => {
  it('skips community activity and quota warnings the user switched off, but never system notices', async () => {
    const { accessToken, user } = await signUp(t.app);
    await t.app.inject({
      method: 'PATCH',
      url: '/v1/account/notification-prefs',
      headers: bearer(accessToken),
      payload: { inAppCommunityActivity: false, inAppQuotaWarnings: false },
    });
    expect(await notify(user.id, 1, { type: 'POST_LIKED', title: 'Someone liked your post' })).toEqual([null]);
    expect(await notify(user.id, 1, { type: 'NEW_FOLLOWER', title: 'New follower' })).toEqual([null]);
    expect(await notify(user.id, 1, { type: 'QUOTA_WARNING', title: 'Low balance' })).toEqual([null]);
    const [system] = await notify(user.id, 1, { type: 'SYSTEM', title: 'Security notice' });
    expect(system).not.toBeNull();
    expect(json(await get('/v1/notifications', accessToken)).items.map((n: { type: string }) => n.type)).toEqual(['SYSTEM']);
  });
});
