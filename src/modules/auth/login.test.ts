import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, desc, eq } from 'drizzle-orm';
import { securityEvents, sessions } from '../../db/schema/auth.js';
import { MINUTE_MS } from '../../platform/clock/clock.js';
import { AppError } from '../../platform/http/errors.js';
import { createAuthService } from './service.js';
import { bearer, createTestApp, json, signUp, uniqueEmail, type TestApp } from '../../../test/helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

const login = (email: string, password: string, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email, password }, headers });

const eventsOf = async (userId: string) =>
  (await t.platform.db.select().from(securityEvents).where(eq(securityEvents.userId, userId)).orderBy(desc(securityEvents.createdAt))).map((e) => e.kind);

describe('POST /v1/auth/login', () => {
  it('returns the token bundle and rt cookie, case-insensitively on the email, and records LOGIN_SUCCESS', async () => {
    const { email, password, user } = await signUp(t.app);
    const response = await login(email.toUpperCase(), password, { 'user-agent': 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) Chrome/126.0' });
    expect(response.statusCode).toBe(200);
    const body = json(response);
    expect(body).toMatchObject({ user: { id: user.id, email, role: 'USER', handle: user.handle }, tokenType: 'Bearer', expiresIn: 900 });
    expect(response.cookies.find((c) => c.name === 'rt')?.value).toBe(body.refreshToken);
    const me = await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(body.accessToken) });
    expect(me.statusCode).toBe(200);
    const [event] = await t.platform.db
      .select()
      .from(securityEvents)
      .where(and(eq(securityEvents.userId, user.id), eq(securityEvents.kind, 'LOGIN_SUCCESS')));
    expect(event).toMatchObject({ userAgent: expect.stringContaining('Chrome'), ipAddress: '127.0.0.1' });
  });

  it('answers 401 with the same message for a wrong password and an unknown email, recording LOGIN_FAILED', async () => {
    const { email, user } = await signUp(t.app);
    const wrong = await login(email, 'not the password');
    const unknown = await login(uniqueEmail('nobody'), 'whatever password');
    expect(wrong.statusCode).toBe(401);
    expect(unknown.statusCode).toBe(401);
    expect(json(wrong).error).toEqual(json(unknown).error);
    expect(json(wrong).error).toMatchObject({ code: 'UNAUTHORIZED', message: 'Email or password is incorrect.' });
    expect(await eventsOf(user.id)).toContain('LOGIN_FAILED');
  });

  it('refuses bad input with 400 and field details', async () => {
    for (const payload of [{}, { email: 'a@example.com' }, { email: 'a@example.com', password: '' }, { email: 'a@example.com', password: ['x'] }]) {
      const response = await t.app.inject({ method: 'POST', url: '/v1/auth/login', payload });
      expect(response.statusCode).toBe(400);
      expect(json(response).error.code).toBe('BAD_REQUEST');
    }
  });

  it('records one session per device: signing in again on the same device reuses it, another device adds one', async () => {
    const { email, password, user } = await signUp(t.app);
    const ua = { 'user-agent': 'Mozilla/5.0 (Windows NT 10.0) Firefox/128.0' };
    const first = json(await login(email, password, ua));
    const second = json(await login(email, password, ua));
    await login(email, password, { 'user-agent': 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0) Safari/604.1' });
    const rows = await t.platform.db.select().from(sessions).where(eq(sessions.userId, user.id));
    const devices = rows.map((r) => r.device).sort();
    // the sign-up session comes from the test client, whose user agent is "lightMyRequest"
    expect(devices).toEqual(['Firefox on Windows', 'Safari on iOS', 'lightMyRequest'].sort());
    // the first refresh token of that device was replaced by the second sign-in
    const stale = await t.app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refreshToken: first.refreshToken } });
    expect(stale.statusCode).toBe(401);
    expect(second.refreshToken).not.toBe(first.refreshToken);
  });
});

describe('login lockout', () => {
  it('locks after 10 failures in 15 minutes, refuses even the right password, and opens again after 15 minutes', async () => {
    const { email, password, user } = await signUp(t.app);
    for (let i = 0; i < 9; i++) expect((await login(email, `wrong ${i}`)).statusCode).toBe(401);
    const tenth = await login(email, 'wrong again');
    expect(tenth.statusCode).toBe(429);
    expect(json(tenth).error).toMatchObject({ code: 'LOGIN_LOCKED', details: { retryAfterSeconds: 900 } });
    expect(tenth.headers['retry-after']).toBe('900');
    expect(await eventsOf(user.id)).toContain('LOGIN_LOCKED');

    const locked = await login(email, password);
    expect(locked.statusCode).toBe(429);
    expect(json(locked).error.message).toMatch(/try again in 15 minutes/);

    t.clock.advance(14 * MINUTE_MS);
    expect((await login(email, password)).statusCode).toBe(429);
    t.clock.advance(1 * MINUTE_MS + 1000);
    expect((await login(email, password)).statusCode).toBe(200);
  });

  it('does not lock when the failures are spread over more than 15 minutes', async () => {
    const { email, password } = await signUp(t.app);
    for (let i = 0; i < 9; i++) await login(email, 'wrong');
    t.clock.advance(16 * MINUTE_MS);
    expect((await login(email, 'wrong')).statusCode).toBe(401);
    expect((await login(email, password)).statusCode).toBe(200);
  });

  it('a successful sign-in clears the failure count', async () => {
    const { email, password } = await signUp(t.app);
    for (let i = 0; i < 9; i++) await login(email, 'wrong');
    expect((await login(email, password)).statusCode).toBe(200);
    for (let i = 0; i < 9; i++) expect((await login(email, 'wrong')).statusCode).toBe(401);
  });

  it('locks per email even when no account exists, answering the same as for a real account', async () => {
    const email = uniqueEmail('ghost');
    for (let i = 0; i < 9; i++) expect((await login(email, 'guess')).statusCode).toBe(401);
    expect((await login(email, 'guess')).statusCode).toBe(429);
  });

  it('locks per user id too: failures under the old email count after an email change', async () => {
    const { email, password, user } = await signUp(t.app);
    for (let i = 0; i < 10; i++) await login(email, 'wrong');
    // the lock is keyed by user id as well as by the address typed
    const { lockedUntil } = await import('./lockout.js');
    expect(await lockedUntil(t.platform.db, 'some-other-address@example.com', user.id, t.clock.now())).not.toBeNull();
    expect((await login(email, password)).statusCode).toBe(429);
  });
});

describe('login lockout under a parallel burst', () => {
  const statuses = (responses: Array<{ statusCode: number }>) => responses.map((r) => r.statusCode);
  const count = (list: number[], status: number) => list.filter((s) => s === status).length;

  it('checks at most 10 passwords of 30 wrong ones sent at once; the rest are 429 LOGIN_LOCKED', async () => {
    const { email, password, user } = await signUp(t.app);
    const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => login(email, `wrong ${i}`)));
    const codes = statuses(responses);
    // 9 checked and refused, the 10th checked and locking, 20 never checked
    expect(count(codes, 401)).toBe(9);
    expect(count(codes, 429)).toBe(21);
    expect(responses.filter((r) => r.statusCode === 429).every((r) => json(r).error.code === 'LOGIN_LOCKED')).toBe(true);
    const events = await eventsOf(user.id);
    expect(events.filter((k) => k === 'LOGIN_FAILED')).toHaveLength(10);
    expect(events.filter((k) => k === 'LOGIN_LOCKED')).toHaveLength(1);
    expect((await login(email, password)).statusCode).toBe(429);
  });

  it('refuses the right password when it arrives after 10 wrong ones in the same burst', async () => {
    const { email, password, user } = await signUp(t.app);
    const burst = [...Array.from({ length: 29 }, (_, i) => login(email, `wrong ${i}`)), login(email, password)];
    const responses = await Promise.all(burst);
    expect(responses[29]!.statusCode).toBe(429);
    expect(json(responses[29]!).error.code).toBe('LOGIN_LOCKED');
    expect(count(statuses(responses), 401)).toBe(9);
    const events = await eventsOf(user.id);
    expect(events.filter((k) => k === 'LOGIN_FAILED')).toHaveLength(10);
    expect(events).not.toContain('LOGIN_SUCCESS');
    // only the sign-up session exists
    expect(await t.platform.db.select().from(sessions).where(eq(sessions.userId, user.id))).toHaveLength(1);
  });

  it('counts in the database: a second instance of the service shares the limit', async () => {
    const { email } = await signUp(t.app);
    const other = createAuthService({ db: t.platform.db, clock: t.clock, tokens: t.platform.tokens });
    const viaOther = (i: number) =>
      other.login({ email, password: `wrong ${i}` }, { ip: '127.0.0.9', userAgent: 'other instance' }).then(
        () => 200,
        (err: unknown) => (err instanceof AppError ? err.statusCode : 500),
      );
    const codes = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? viaOther(i) : login(email, `wrong ${i}`).then((r) => r.statusCode))));
    expect(count(codes, 401)).toBe(9);
    expect(count(codes, 429)).toBe(21);
  });

  it('limits unknown emails the same way', async () => {
    const email = uniqueEmail('ghost-burst');
    const codes = statuses(await Promise.all(Array.from({ length: 30 }, () => login(email, 'guess'))));
    expect(count(codes, 401)).toBe(9);
    expect(count(codes, 429)).toBe(21);
  });

  it('a right password answered with a two-factor challenge is not counted as a failure', async () => {
    const { email, password, accessToken } = await signUp(t.app);
    const { generateSync } = await import('otplib');
    const { secret } = json(await t.app.inject({ method: 'POST', url: '/v1/account/2fa/setup', headers: bearer(accessToken) }));
    const code = generateSync({ secret, epoch: Math.floor(t.clock.now().getTime() / 1000) });
    expect((await t.app.inject({ method: 'POST', url: '/v1/account/2fa/enable', headers: bearer(accessToken), payload: { code } })).statusCode).toBe(200);
    for (let i = 0; i < 5; i++) expect((await login(email, password)).statusCode).toBe(402);
    for (let i = 0; i < 9; i++) expect((await login(email, 'wrong')).statusCode).toBe(401);
    expect((await login(email, 'wrong')).statusCode).toBe(429);
  });
});

describe('access tokens', () => {
  it('expire after 15 minutes', async () => {
    const { accessToken } = await signUp(t.app);
    t.clock.advance(14 * MINUTE_MS);
    expect((await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(accessToken) })).statusCode).toBe(200);
    t.clock.advance(MINUTE_MS + 1000);
    const expired = await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(accessToken) });
    expect(expired.statusCode).toBe(401);
    expect(json(expired).error.code).toBe('UNAUTHORIZED');
  });

  it('refuses a token signed with another key, a malformed header and a garbage token', async () => {
    const { SignJWT } = await import('jose');
    const forged = await new SignJWT({ kind: 'access', role: 'SUPER_ADMIN' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('00000000-0000-0000-0000-000000000000')
      .setIssuer('storefront')
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode('another-secret-of-enough-length-to-sign-with'));
    for (const authorization of [`Bearer ${forged}`, 'Token abc', 'Bearer', 'Bearer not.a.jwt']) {
      const response = await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: { authorization } });
      expect(response.statusCode).toBe(401);
      expect(json(response).error.code).toBe('UNAUTHORIZED');
    }
  });
});
