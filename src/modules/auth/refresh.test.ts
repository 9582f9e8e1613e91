import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq, isNull } from 'drizzle-orm';
import { securityEvents, sessions } from '../../db/schema/auth.js';
import { DAY_MS } from '../../platform/clock/clock.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

const refreshWithBody = (refreshToken: string) => t.app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refreshToken } });
const refreshWithCookie = (refreshToken: string) => t.app.inject({ method: 'POST', url: '/v1/auth/refresh', cookies: { rt: refreshToken } });
const activeSessions = async (userId: string) =>
  t.platform.db
    .select()
    .from(sessions)
    .where(and(eq(sessions.userId, userId), isNull(sessions.revokedAt)));

describe('POST /v1/auth/refresh', () => {
  it('rotates both tokens from the body and sets the new cookie', async () => {
    const { refreshToken } = await signUp(t.app);
    const response = await refreshWithBody(refreshToken);
    expect(response.statusCode).toBe(200);
    const pair = json(response);
    expect(Object.keys(pair).sort()).toEqual(['accessToken', 'expiresIn', 'refreshToken', 'tokenType']);
    expect(pair).toMatchObject({ tokenType: 'Bearer', expiresIn: 900 });
    expect(pair.refreshToken).not.toBe(refreshToken);
    expect(response.cookies.find((c) => c.name === 'rt')).toMatchObject({ value: pair.refreshToken, httpOnly: true, path: '/v1/auth', sameSite: 'Lax' });
    expect((await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(pair.accessToken) })).statusCode).toBe(200);
  });

  it('accepts the rt cookie with an empty body', async () => {
    const { refreshToken } = await signUp(t.app);
    const response = await refreshWithCookie(refreshToken);
    expect(response.statusCode).toBe(200);
    expect(json(response).refreshToken).not.toBe(refreshToken);
  });

  it('treats a replayed (already rotated) token as theft: every session of the user is revoked', async () => {
    const first = await signUp(t.app);
    const otherDevice = json(
      await t.app.inject({
        method: 'POST',
        url: '/v1/auth/login',
        payload: { email: first.email, password: first.password },
        headers: { 'user-agent': 'Other/1.0' },
      }),
    );
    const rotated = json(await refreshWithBody(first.refreshToken));
    expect((await activeSessions(first.user.id)).length).toBe(2);

    const replay = await refreshWithBody(first.refreshToken);
    expect(replay.statusCode).toBe(401);
    expect(json(replay).error.code).toBe('UNAUTHORIZED');
    expect(await activeSessions(first.user.id)).toHaveLength(0);
    // the legitimately rotated token and the other device's token are dead too
    expect((await refreshWithBody(rotated.refreshToken)).statusCode).toBe(401);
    expect((await refreshWithBody(otherDevice.refreshToken)).statusCode).toBe(401);
    const kinds = (await t.platform.db.select().from(securityEvents).where(eq(securityEvents.userId, first.user.id))).map((e) => e.kind);
    expect(kinds).toContain('SESSION_REVOKED');
  });

  it('a revoked (logged-out) token presented to refresh also revokes everything', async () => {
    const a = await signUp(t.app);
    const second = json(
      await t.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: a.email, password: a.password }, headers: { 'user-agent': 'Second/1.0' } }),
    );
    await t.app.inject({ method: 'POST', url: '/v1/auth/logout', payload: { refreshToken: a.refreshToken } });
    expect((await refreshWithBody(a.refreshToken)).statusCode).toBe(401);
    expect((await refreshWithBody(second.refreshToken)).statusCode).toBe(401);
  });

  it('refuses a token older than 30 days', async () => {
    const { refreshToken } = await signUp(t.app);
    t.clock.advance(30 * DAY_MS + 1000);
    expect((await refreshWithBody(refreshToken)).statusCode).toBe(401);
  });

  it('keeps working for 30 days as long as it is rotated', async () => {
    let { refreshToken } = await signUp(t.app);
    for (let i = 0; i < 3; i++) {
      t.clock.advance(20 * DAY_MS);
      const response = await refreshWithBody(refreshToken);
      expect(response.statusCode).toBe(200);
      refreshToken = json(response).refreshToken;
    }
  });

  it('answers 401 with no token at all and for an unknown token; 400 for a malformed body', async () => {
    const none = await t.app.inject({ method: 'POST', url: '/v1/auth/refresh' });
    expect(none.statusCode).toBe(401);
    expect(json(none).error.message).toMatch(/Missing refresh token/);
    expect((await refreshWithBody('not-a-real-token')).statusCode).toBe(401);
    const bad = await t.app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refreshToken: 42 } });
    expect(bad.statusCode).toBe(400);
    const extra = await t.app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refreshToken: 'x', userId: 'y' } });
    expect(extra.statusCode).toBe(400);
  });

  it('answers 401 UNAUTHORIZED, not a 400 about its length, to an access token sent as the refresh token; nothing is rotated', async () => {
    const { accessToken, refreshToken, user } = await signUp(t.app);
    const sessionsBefore = await activeSessions(user.id);
    for (const response of [await refreshWithBody(accessToken), await refreshWithCookie(accessToken)]) {
      expect(response.statusCode).toBe(401);
      expect(json(response).error).toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringMatching(/This is an access token, not a refresh token/) });
      expect(response.cookies.find((c) => c.name === 'rt')).toBeUndefined();
    }
    expect(await activeSessions(user.id)).toEqual(sessionsBefore);
    // the real refresh token still rotates: the mistake revoked nothing
    expect((await refreshWithBody(refreshToken)).statusCode).toBe(200);
  });

  it('a double refresh racing on the same token leaves exactly one winner', async () => {
    const { refreshToken } = await signUp(t.app);
    const results = await Promise.all([refreshWithBody(refreshToken), refreshWithBody(refreshToken)]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 401]);
  });
});

describe('POST /v1/auth/logout', () => {
  it('revokes the session from the body token, clears the cookie and records LOGOUT', async () => {
    const { refreshToken, user } = await signUp(t.app);
    const response = await t.app.inject({ method: 'POST', url: '/v1/auth/logout', payload: { refreshToken } });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ ok: true });
    const cleared = response.cookies.find((c) => c.name === 'rt');
    expect(cleared).toMatchObject({ value: '', path: '/v1/auth' });
    expect(cleared!.expires!.getTime()).toBeLessThanOrEqual(Date.now());
    expect(await activeSessions(user.id)).toHaveLength(0);
    const kinds = (await t.platform.db.select().from(securityEvents).where(eq(securityEvents.userId, user.id))).map((e) => e.kind);
    expect(kinds).toContain('LOGOUT');
  });

  it('accepts the cookie, and is a no-op for an unknown token', async () => {
    const { refreshToken, user } = await signUp(t.app);
    const response = await t.app.inject({ method: 'POST', url: '/v1/auth/logout', cookies: { rt: refreshToken } });
    expect(response.statusCode).toBe(200);
    expect(await activeSessions(user.id)).toHaveLength(0);
    const unknown = await t.app.inject({ method: 'POST', url: '/v1/auth/logout', payload: { refreshToken: 'unknown-token' } });
    expect(unknown.statusCode).toBe(200);
  });

  it('answers 401 when no token is presented', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/v1/auth/logout' });
    expect(response.statusCode).toBe(401);
  });

  it('answers 401 UNAUTHORIZED to an access token sent as the refresh token, instead of a silent no-op that leaves the session open', async () => {
    const { accessToken, refreshToken, user } = await signUp(t.app);
    const response = await t.app.inject({ method: 'POST', url: '/v1/auth/logout', payload: { refreshToken: accessToken } });
    expect(response.statusCode).toBe(401);
    expect(json(response).error).toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringMatching(/This is an access token, not a refresh token/) });
    expect(await activeSessions(user.id)).toHaveLength(1);
    expect((await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(accessToken) })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'POST', url: '/v1/auth/logout', payload: { refreshToken } })).statusCode).toBe(200);
    expect(await activeSessions(user.id)).toHaveLength(0);
  });

  it('keeps a 400 for a body of the wrong type', async () => {
    for (const payload of [{ refreshToken: 42 }, { refreshToken: '' }, { refreshToken: 'x', extra: true }, { refreshToken: 'x'.repeat(5000) }]) {
      const response = await t.app.inject({ method: 'POST', url: '/v1/auth/logout', payload });
      expect(response.statusCode, JSON.stringify(payload).slice(0, 40)).toBe(400);
      expect(json(response).error.code).toBe('BAD_REQUEST');
    }
  });
});
