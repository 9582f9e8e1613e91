import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY_MS } from '../../platform/clock/clock.js';
import { bearer, createTestApp, json, signUp, uniqueEmail, type TestApp } from '../../../test/helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

const PHONE = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0) Safari/604.1';
const LAPTOP = 'Mozilla/5.0 (Windows NT 10.0) Firefox/128.0';

const login = (email: string, password: string, userAgent?: string, ip = '127.0.0.1') =>
  t.app.inject({
    method: 'POST',
    url: '/v1/auth/login',
    payload: { email, password },
    remoteAddress: ip,
    headers: userAgent ? { 'user-agent': userAgent } : {},
  });
const get = (url: string, token: string) => t.app.inject({ method: 'GET', url, headers: bearer(token) });
const events = async (token: string, query = '') => json(await get(`/v1/account/security/events${query}`, token));
const notifications = async (token: string) => json(await get('/v1/notifications', token));

describe('GET /v1/account/sessions', () => {
  it('lists one row per device with the session fields, marking the caller', async () => {
    const { email, password, accessToken } = await signUp(t.app);
    await login(email, password, PHONE);
    await login(email, password, PHONE);
    await login(email, password, LAPTOP);
    const response = await get('/v1/account/sessions', accessToken);
    expect(response.statusCode).toBe(200);
    const { items } = json(response);
    expect(items).toHaveLength(3);
    expect(items.map((s: { device: string }) => s.device).sort()).toEqual(['Firefox on Windows', 'Safari on iOS', 'lightMyRequest']);
    for (const session of items) {
      expect(Object.keys(session).sort()).toEqual(['createdAt', 'current', 'device', 'id', 'ipAddress', 'lastSeenAt', 'location', 'userAgent']);
      expect(session.ipAddress).toBe('127.0.0.1');
    }
    expect(items.filter((s: { current: boolean }) => s.current).map((s: { device: string }) => s.device)).toEqual(['lightMyRequest']);
  });

  it("shows only the caller's sessions, and drops ones whose refresh token ran out (30 days)", async () => {
    const a = await signUp(t.app);
    const b = await signUp(t.app);
    await login(b.email, b.password, PHONE);
    expect(json(await get('/v1/account/sessions', a.accessToken)).items).toHaveLength(1);
    t.clock.advance(31 * DAY_MS);
    const fresh = json(await login(a.email, a.password, LAPTOP)).accessToken;
    const { items } = json(await get('/v1/account/sessions', fresh));
    expect(items.map((s: { device: string }) => s.device)).toEqual(['Firefox on Windows']);
  });

  it('needs a token', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/v1/account/sessions' })).statusCode).toBe(401);
  });
});

describe('DELETE /v1/account/sessions/:id', () => {
  it('signs out one device: its refresh token stops working, a SESSION_REVOKED event is recorded', async () => {
    const { email, password, accessToken } = await signUp(t.app);
    const phone = json(await login(email, password, PHONE));
    const { items } = json(await get('/v1/account/sessions', accessToken));
    const phoneSession = items.find((s: { device: string }) => s.device === 'Safari on iOS');
    const response = await t.app.inject({ method: 'DELETE', url: `/v1/account/sessions/${phoneSession.id}`, headers: bearer(accessToken) });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ ok: true });
    expect(json(await get('/v1/account/sessions', accessToken)).items).toHaveLength(1);
    expect((await t.app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refreshToken: phone.refreshToken } })).statusCode).toBe(401);
    const revoked = (await events(accessToken)).items.filter((e: { kind: string }) => e.kind === 'SESSION_REVOKED');
    expect(revoked.map((e: { metadata: unknown }) => e.metadata)).toEqual([{ sessionId: phoneSession.id, device: 'Safari on iOS' }]);
  });

  it('the signed-out device trying its refresh token is not treated as theft: the caller stays signed in', async () => {
    const { email, password, accessToken, refreshToken } = await signUp(t.app);
    const phone = json(await login(email, password, PHONE));
    const phoneSession = json(await get('/v1/account/sessions', accessToken)).items.find((s: { device: string }) => s.device === 'Safari on iOS');
    await t.app.inject({ method: 'DELETE', url: `/v1/account/sessions/${phoneSession.id}`, headers: bearer(accessToken) });
    expect((await t.app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refreshToken: phone.refreshToken } })).statusCode).toBe(401);
    expect((await t.app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refreshToken } })).statusCode).toBe(200);
  });

  it("another user's session, an unknown id or an already revoked one is 404; a malformed id is 400", async () => {
    const a = await signUp(t.app);
    const b = await signUp(t.app);
    const bSession = json(await get('/v1/account/sessions', b.accessToken)).items[0];
    const foreign = await t.app.inject({ method: 'DELETE', url: `/v1/account/sessions/${bSession.id}`, headers: bearer(a.accessToken) });
    expect(foreign.statusCode).toBe(404);
    expect(json(foreign).error.code).toBe('NOT_FOUND');
    expect(json(await get('/v1/account/sessions', b.accessToken)).items).toHaveLength(1);
    const unknown = await t.app.inject({ method: 'DELETE', url: '/v1/account/sessions/01900000-0000-7000-8000-000000000000', headers: bearer(a.accessToken) });
    expect(unknown.statusCode).toBe(404);
    json(await login(a.email, a.password, PHONE));
    const phoneSession = json(await get('/v1/account/sessions', a.accessToken)).items.find((s: { current: boolean }) => !s.current);
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/account/sessions/${phoneSession.id}`, headers: bearer(a.accessToken) })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/account/sessions/${phoneSession.id}`, headers: bearer(a.accessToken) })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'DELETE', url: '/v1/account/sessions/not-a-uuid', headers: bearer(a.accessToken) })).statusCode).toBe(400);
    // Ending one's own session signs this access token out at once.
    const own = json(await get('/v1/account/sessions', a.accessToken)).items.find((s: { current: boolean }) => s.current);
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/account/sessions/${own.id}`, headers: bearer(a.accessToken) })).statusCode).toBe(200);
    const after = await t.app.inject({ method: 'DELETE', url: `/v1/account/sessions/${own.id}`, headers: bearer(a.accessToken) });
    expect(after.statusCode).toBe(401);
    expect(json(after).error.message).toBe('This session was signed out. Sign in again.');
  });
});

describe('POST /v1/account/sessions/revoke-others', () => {
  it("signs out every device but the caller's", async () => {
    const { email, password, accessToken, refreshToken } = await signUp(t.app);
    const phone = json(await login(email, password, PHONE));
    const laptop = json(await login(email, password, LAPTOP));
    const response = await t.app.inject({ method: 'POST', url: '/v1/account/sessions/revoke-others', headers: bearer(accessToken) });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ ok: true, revoked: 2 });
    const { items } = json(await get('/v1/account/sessions', accessToken));
    expect(items).toHaveLength(1);
    expect(items[0].current).toBe(true);
    expect((await t.app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refreshToken } })).statusCode).toBe(200);
    expect((await events(accessToken)).items.filter((e: { kind: string }) => e.kind === 'SESSION_REVOKED')[0].metadata).toEqual({ scope: 'others', count: 2 });
    for (const device of [phone, laptop]) {
      expect((await t.app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refreshToken: device.refreshToken } })).statusCode).toBe(401);
    }
  });

  it('with no other device revokes nothing', async () => {
    const { accessToken } = await signUp(t.app);
    expect(json(await t.app.inject({ method: 'POST', url: '/v1/account/sessions/revoke-others', headers: bearer(accessToken) }))).toEqual({
      ok: true,
      revoked: 0,
    });
  });
});

describe('GET /v1/account/security/events', () => {
  it("lists the account's events newest first with the spec's kinds, emitted where they happen", async () => {
    const { email, password, accessToken } = await signUp(t.app);
    await login(email, 'wrong password');
    const phone = json(await login(email, password, PHONE));
    await t.app.inject({ method: 'POST', url: '/v1/auth/logout', payload: { refreshToken: phone.refreshToken } });
    // presenting the logged-out token again is treated as theft: every session ends, its access tokens with it
    await t.app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refreshToken: phone.refreshToken } });
    expect((await get('/v1/account/security/events', accessToken)).statusCode).toBe(401);
    const again = json(await login(email, password, LAPTOP));
    const response = await get('/v1/account/security/events', again.accessToken);
    expect(response.statusCode).toBe(200);
    const { items, nextCursor } = json(response);
    expect(nextCursor).toBeNull();
    expect(items.map((e: { kind: string }) => e.kind)).toEqual(['LOGIN_SUCCESS', 'SESSION_REVOKED', 'LOGOUT', 'LOGIN_SUCCESS', 'LOGIN_FAILED']);
    expect(items[3]).toMatchObject({ userAgent: PHONE, ipAddress: '127.0.0.1', metadata: { method: 'password' } });
    expect(Object.keys(items[0]).sort()).toEqual(['createdAt', 'id', 'ipAddress', 'kind', 'metadata', 'userAgent']);
  });

  it('pages with limit 1-200 (default 50) and a cursor, every event once', async () => {
    const { email, password } = await signUp(t.app);
    for (let i = 0; i < 55; i++) {
      await login(email, `wrong ${i}`);
      if (i % 9 === 8) t.clock.advance(16 * 60_000); // stay below the lockout
    }
    const { accessToken } = json(await login(email, password)); // 56 events in all
    const first = await events(accessToken);
    expect(first.items).toHaveLength(50);
    expect(first.items[0].kind).toBe('LOGIN_SUCCESS');
    const rest = await events(accessToken, `?cursor=${first.nextCursor}`);
    expect(rest.items).toHaveLength(6);
    expect(rest.nextCursor).toBeNull();
    const ids = [...first.items, ...rest.items].map((e: { id: string }) => e.id);
    expect(new Set(ids).size).toBe(56);
    const small = await events(accessToken, '?limit=7');
    expect(small.items).toHaveLength(7);
    expect(small.items[0].id).toBe(first.items[0].id);
    expect((await events(accessToken, '?limit=200')).items).toHaveLength(56);
  });

  it('refuses a bad limit, a bad cursor and unknown query keys with 400', async () => {
    const { accessToken } = await signUp(t.app);
    for (const query of ['?limit=0', '?limit=201', '?limit=abc', '?cursor=%%%', '?since=yesterday']) {
      const response = await get(`/v1/account/security/events${query}`, accessToken);
      expect(response.statusCode).toBe(400);
      expect(json(response).error.code).toBe('BAD_REQUEST');
    }
  });

  it("shows only the caller's events and needs a token", async () => {
    const a = await signUp(t.app);
    const b = await signUp(t.app);
    await login(b.email, 'wrong password');
    expect((await events(a.accessToken)).items).toHaveLength(0);
    expect((await t.app.inject({ method: 'GET', url: '/v1/account/security/events' })).statusCode).toBe(401);
  });
});

describe('sign-in from an unseen IP address', () => {
  it('creates an in-app security notification once per new address, not at sign-up or on a known address', async () => {
    const { email, password, accessToken } = await signUp(t.app);
    await login(email, password, PHONE, '127.0.0.1');
    expect((await notifications(accessToken)).items).toHaveLength(0);

    await login(email, password, PHONE, '203.0.113.7');
    const inbox = await notifications(accessToken);
    expect(inbox.items).toHaveLength(1);
    expect(inbox.unreadCount).toBe(1);
    expect(inbox.items[0]).toMatchObject({
      type: 'SYSTEM',
      title: 'New sign-in from an unfamiliar address',
      body: expect.stringContaining('203.0.113.7'),
      payload: { kind: 'SECURITY_NEW_IP', ipAddress: '203.0.113.7', method: 'password' },
      readAt: null,
    });
    await login(email, password, LAPTOP, '203.0.113.7');
    expect((await notifications(accessToken)).items).toHaveLength(1);
  });

  it('the first sign-in of an account is never "unseen"', async () => {
    // an account created without a session (as the operator account is) signs in for the first time
    const email = uniqueEmail('operator');
    await t.services.auth.ensureSuperAdmin(email, 'operator password');
    const first = json(await login(email, 'operator password', LAPTOP, '198.51.100.1'));
    expect((await notifications(first.accessToken)).items).toHaveLength(0);
    await login(email, 'operator password', LAPTOP, '198.51.100.2');
    expect((await notifications(first.accessToken)).items).toHaveLength(1);
  });
});
