import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { users } from '../../db/schema/auth.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

describe('GET /v1/users/me', () => {
  it('returns the user with every field and the active subscription', async () => {
    const { accessToken, user } = await signUp(t.app, { name: 'Me Myself' });
    const response = await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(accessToken) });
    expect(response.statusCode).toBe(200);
    const body = json(response);
    expect(Object.keys(body.user).sort()).toEqual(['avatarUrl', 'bio', 'createdAt', 'email', 'handle', 'id', 'name', 'role', 'status'].sort());
    expect(body.user).toMatchObject({ id: user.id, name: 'Me Myself', role: 'USER', status: 'ACTIVE', handle: user.handle, avatarUrl: null, bio: null });
    expect(new Date(body.user.createdAt).toISOString()).toBe(body.user.createdAt);
    expect(body).toHaveProperty('activeSubscription');
  });

  it('requires a token', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/v1/users/me' });
    expect(response.statusCode).toBe(401);
    expect(json(response)).toEqual({ error: { code: 'UNAUTHORIZED', message: expect.any(String), details: null } });
  });

  it('answers 401 once the account is deleted, even with an unexpired token', async () => {
    const { accessToken, user } = await signUp(t.app);
    await t.platform.db.update(users).set({ status: 'DELETED' }).where(eq(users.id, user.id));
    expect((await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(accessToken) })).statusCode).toBe(401);
  });
});

describe('PATCH /v1/users/me', () => {
  it('changes the display name only', async () => {
    const { accessToken, user } = await signUp(t.app);
    const response = await t.app.inject({ method: 'PATCH', url: '/v1/users/me', headers: bearer(accessToken), payload: { name: '  New Name  ' } });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toMatchObject({ id: user.id, name: 'New Name', email: user.email, handle: user.handle });
    const me = json(await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(accessToken) }));
    expect(me.user.name).toBe('New Name');
  });

  it.each([
    ['an empty body', undefined],
    ['a blank name', { name: '   ' }],
    ['a name over 100 characters', { name: 'x'.repeat(101) }],
    ['a name of the wrong type', { name: 7 }],
    ['another field', { name: 'ok', email: 'evil@example.com' }],
    ['a role escalation attempt', { role: 'SUPER_ADMIN' }],
  ])('refuses %s with 400 and changes nothing', async (_label, payload) => {
    const { accessToken, user } = await signUp(t.app, { name: 'Unchanged' });
    const response = await t.app.inject({ method: 'PATCH', url: '/v1/users/me', headers: bearer(accessToken), ...(payload ? { payload } : {}) });
    expect(response.statusCode).toBe(400);
    expect(json(response).error.code).toBe('BAD_REQUEST');
    const [row] = await t.platform.db.select().from(users).where(eq(users.id, user.id));
    expect(row).toMatchObject({ name: 'Unchanged', role: 'USER', email: user.email });
  });

  it('requires a token', async () => {
    expect((await t.app.inject({ method: 'PATCH', url: '/v1/users/me', payload: { name: 'x' } })).statusCode).toBe(401);
  });
});
