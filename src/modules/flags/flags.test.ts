import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setPlan } from '../../../test/helpers/gateway.js';
import { bearer, createTestApp, json, signUp, signUpAs, type TestApp } from '../../../test/helpers/test-app.js';
import { rolloutBucket } from './service.js';

let t: TestApp;
let superAdmin: Awaited<ReturnType<typeof signUpAs>>;
let admin: Awaited<ReturnType<typeof signUpAs>>;

beforeAll(async () => {
  t = await createTestApp();
  superAdmin = await signUpAs(t, 'SUPER_ADMIN');
  admin = await signUpAs(t, 'ADMIN');
});
afterAll(async () => t?.close());

const create = (body: object, token = superAdmin.accessToken) =>
  t.app.inject({ method: 'POST', url: '/v1/admin/flags', headers: bearer(token), payload: body });
const update = (key: string, body: object, token = superAdmin.accessToken) =>
  t.app.inject({ method: 'PATCH', url: `/v1/admin/flags/${key}`, headers: bearer(token), payload: body });
const viewerFlags = async (token?: string): Promise<Record<string, boolean>> => {
  const response = await t.app.inject({ method: 'GET', url: '/v1/flags', headers: token ? bearer(token) : {} });
  expect(response.statusCode).toBe(200);
  return json(response).flags;
};
const onPlan = async (userId: string, slug: string) => {
  await setPlan(t, userId, slug);
  t.services.subscriptions.forgetCached(userId);
};

describe('feature flags for the viewer', () => {
  it('a disabled flag is off for everyone; enabled for everyone it is on for signed-in and anonymous viewers', async () => {
    const user = await signUp(t.app);
    expect((await create({ key: 'everyone-flag', description: 'New editor', targeting: { everyone: true } })).statusCode).toBe(201);
    expect((await viewerFlags(user.accessToken))['everyone-flag']).toBe(false);
    expect((await viewerFlags())['everyone-flag']).toBe(false);

    expect((await update('everyone-flag', { enabled: true })).statusCode).toBe(200);
    expect((await viewerFlags(user.accessToken))['everyone-flag']).toBe(true);
    expect((await viewerFlags())['everyone-flag']).toBe(true);
    // A stale or broken token counts as an anonymous visit, never a 401.
    expect((await viewerFlags('not-a-token'))['everyone-flag']).toBe(true);
  });

  it('a user list turns the flag on for those users only; anonymous viewers get the anonymous value', async () => {
    const listed = await signUp(t.app);
    const other = await signUp(t.app);
    expect((await create({ key: 'listed-users', enabled: true, targeting: { userIds: [listed.user.id] } })).statusCode).toBe(201);
    expect((await viewerFlags(listed.accessToken))['listed-users']).toBe(true);
    expect((await viewerFlags(other.accessToken))['listed-users']).toBe(false);
    expect((await viewerFlags())['listed-users']).toBe(false);
  });

  it("a plan list follows the viewer's active plan", async () => {
    const pro = await signUp(t.app);
    const free = await signUp(t.app);
    await onPlan(pro.user.id, 'pro');
    expect((await create({ key: 'pro-only', enabled: true, targeting: { plans: ['pro', 'studio'] } })).statusCode).toBe(201);
    expect((await viewerFlags(pro.accessToken))['pro-only']).toBe(true);
    expect((await viewerFlags(free.accessToken))['pro-only']).toBe(false);
    await onPlan(free.user.id, 'studio');
    expect((await viewerFlags(free.accessToken))['pro-only']).toBe(true);
    expect((await viewerFlags())['pro-only']).toBe(false);
  });

  it('a percentage rollout is stable per user and roughly proportional', async () => {
    const ids = Array.from({ length: 4000 }, (_, i) => `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`);
    const inRollout = (key: string, pct: number) => ids.filter((id) => rolloutBucket(key, id) < pct * 100).length / ids.length;
    expect(inRollout('rollout', 25)).toBeGreaterThan(0.22);
    expect(inRollout('rollout', 25)).toBeLessThan(0.28);
    // Independent between flags: another key picks a different set of users.
    const a = ids.filter((id) => rolloutBucket('rollout-a', id) < 5000);
    const b = new Set(ids.filter((id) => rolloutBucket('rollout-b', id) < 5000));
    const overlap = a.filter((id) => b.has(id)).length / a.length;
    expect(overlap).toBeGreaterThan(0.4);
    expect(overlap).toBeLessThan(0.6);

    // Through the API: 16 users at 50 % split, each keeps its value, and raising to 100 % includes every one of them.
    expect((await create({ key: 'half', enabled: true, targeting: { percentage: 50 } })).statusCode).toBe(201);
    const users = await Promise.all(Array.from({ length: 16 }, () => signUp(t.app)));
    const first = await Promise.all(users.map(async (u) => (await viewerFlags(u.accessToken)).half));
    const again = await Promise.all(users.map(async (u) => (await viewerFlags(u.accessToken)).half));
    expect(again).toEqual(first);
    expect(first).toEqual(users.map((u) => rolloutBucket('half', u.user.id) < 5000));
    expect(first.filter(Boolean).length).toBeGreaterThan(2);
    expect(first.filter((v) => !v).length).toBeGreaterThan(2);
    expect((await viewerFlags())['half']).toBe(false);
    await update('half', { targeting: { percentage: 100 } });
    expect((await Promise.all(users.map(async (u) => (await viewerFlags(u.accessToken)).half))).every(Boolean)).toBe(true);
  });
});

describe('admin CRUD of flags', () => {
  it('reads for ADMIN, changes for SUPER_ADMIN only; bad input changes nothing', async () => {
    expect((await create({ key: 'admin-cannot' }, admin.accessToken)).statusCode).toBe(403);
    const list = await t.app.inject({ method: 'GET', url: '/v1/admin/flags', headers: bearer(admin.accessToken) });
    expect(list.statusCode).toBe(200);
    expect(json(list).items.some((f: { key: string }) => f.key === 'admin-cannot')).toBe(false);

    expect((await create({ key: 'Bad Key' })).statusCode).toBe(400);
    const unknownPlan = await create({ key: 'ghost-plan', targeting: { plans: ['platinum'] } });
    expect(unknownPlan.statusCode).toBe(400);
    expect(json(unknownPlan).error.message).toContain('platinum');
    expect((await create({ key: 'pct', targeting: { percentage: 101 } })).statusCode).toBe(400);
    expect((await t.app.inject({ method: 'GET', url: '/v1/admin/flags/ghost-plan', headers: bearer(admin.accessToken) })).statusCode).toBe(404);

    expect((await create({ key: 'dup' })).statusCode).toBe(201);
    const dup = await create({ key: 'dup' });
    expect(dup.statusCode).toBe(409);
    expect(json(dup).error.code).toBe('CONFLICT');
    expect((await update('nope', { enabled: true })).statusCode).toBe(404);
    expect((await update('dup', {})).statusCode).toBe(400);
  });

  it('every change is audited with who, before and after, in the change', async () => {
    const key = 'audited';
    expect((await create({ key, description: 'v1' })).statusCode).toBe(201);
    const changed = await update(key, { description: 'v2', enabled: true, targeting: { plans: ['pro'] } });
    expect(json(changed)).toMatchObject({ key, description: 'v2', enabled: true, targeting: { plans: ['pro'], everyone: false, userIds: [], percentage: 0 } });
    const got = await t.app.inject({ method: 'GET', url: `/v1/admin/flags/${key}`, headers: bearer(admin.accessToken) });
    expect(json(got)).toEqual(json(changed));
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/admin/flags/${key}`, headers: bearer(superAdmin.accessToken) })).statusCode).toBe(200);
    expect((await viewerFlags())[key]).toBeUndefined();
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/admin/flags/${key}`, headers: bearer(superAdmin.accessToken) })).statusCode).toBe(404);

    const audit = json(await t.app.inject({ method: 'GET', url: `/v1/admin/audit?targetType=flag&targetId=${key}`, headers: bearer(admin.accessToken) }));
    expect(audit.items.map((e: { action: string }) => e.action)).toEqual(['flag.delete', 'flag.update', 'flag.create']);
    const [deleted, updated, created] = audit.items;
    expect(created).toMatchObject({
      actor: { userId: superAdmin.user.id, role: 'SUPER_ADMIN' },
      before: null,
      after: { key, description: 'v1', enabled: false },
    });
    expect(updated).toMatchObject({
      before: { description: 'v1', enabled: false },
      after: { description: 'v2', enabled: true, targeting: { plans: ['pro'] } },
    });
    expect(deleted).toMatchObject({ before: { description: 'v2' }, after: null });
    expect(created.requestId).toEqual(expect.any(String));
  });
});
