import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { generateSync } from 'otplib';
import { recoveryCodes, securityEvents, twoFactor } from '../../db/schema/auth.js';
import { MINUTE_MS } from '../../platform/clock/clock.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

const STEP_MS = 30_000;
/** The authenticator app's code at the test clock's time (plus `offsetSteps` time steps). */
const totp = (secret: string, offsetSteps = 0) => generateSync({ secret, epoch: Math.floor((t.clock.now().getTime() + offsetSteps * STEP_MS) / 1000) });

const post = (url: string, token: string | null, payload?: object) =>
  t.app.inject({ method: 'POST', url, headers: token ? bearer(token) : {}, ...(payload ? { payload } : {}) });
const login = (email: string, password: string) => t.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email, password } });
const verify = (challengeToken: string, code: string) => t.app.inject({ method: 'POST', url: '/v1/auth/2fa/verify', payload: { challengeToken, code } });

const eventsOf = async (userId: string) => (await t.platform.db.select().from(securityEvents).where(eq(securityEvents.userId, userId))).map((e) => e.kind);

/** Moves the clock to the start of a fresh time step, so "the next step" is exactly STEP_MS away. */
const alignToStep = () => t.clock.advance(STEP_MS - (t.clock.now().getTime() % STEP_MS) + 1000);

/** A user with two-factor on: their secret and recovery codes. */
async function userWith2fa() {
  const account = await signUp(t.app);
  const setup = json(await post('/v1/account/2fa/setup', account.accessToken));
  alignToStep();
  const enable = await post('/v1/account/2fa/enable', account.accessToken, { code: totp(setup.secret) });
  expect(enable.statusCode).toBe(200);
  // the enabling code's time step is used up: later codes come from the next step
  t.clock.advance(STEP_MS);
  return { ...account, secret: setup.secret as string, recoveryCodes: json(enable).recoveryCodes as string[] };
}

async function challengeFor(email: string, password: string): Promise<string> {
  const response = await login(email, password);
  expect(response.statusCode).toBe(402);
  return json(response).challengeToken;
}

describe('two-factor setup and enable', () => {
  it('setup gives a secret and an otpauth URL an authenticator app accepts; status stays off until enable', async () => {
    const { accessToken, email } = await signUp(t.app);
    const response = await post('/v1/account/2fa/setup', accessToken);
    expect(response.statusCode).toBe(200);
    const { secret, otpauthUrl } = json(response);
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    const url = new URL(otpauthUrl);
    expect(url.protocol).toBe('otpauth:');
    expect(url.host).toBe('totp');
    expect(decodeURIComponent(url.pathname)).toBe(`/Storefront:${email}`);
    expect(url.searchParams.get('secret')).toBe(secret);
    expect(url.searchParams.get('issuer')).toBe('Storefront');
    const status = json(await t.app.inject({ method: 'GET', url: '/v1/account/2fa/status', headers: bearer(accessToken) }));
    expect(status).toEqual({ enabled: false, since: null, recoveryCodesRemaining: 0 });
    // while off, login still opens a session directly
    expect((await login(email, 'correct horse battery')).statusCode).toBe(200);
  });

  it('enable with a valid code turns it on and returns 10 recovery codes once, stored hashed', async () => {
    const { accessToken, user } = await signUp(t.app);
    const { secret } = json(await post('/v1/account/2fa/setup', accessToken));
    const response = await post('/v1/account/2fa/enable', accessToken, { code: totp(secret) });
    expect(response.statusCode).toBe(200);
    const body = json(response);
    expect(body.ok).toBe(true);
    expect(body.recoveryCodes).toHaveLength(10);
    for (const code of body.recoveryCodes) expect(code).toMatch(/^[a-z2-9]{4}-[a-z2-9]{4}$/);
    const stored = await t.platform.db.select().from(recoveryCodes).where(eq(recoveryCodes.userId, user.id));
    expect(stored).toHaveLength(10);
    for (const row of stored) for (const code of body.recoveryCodes) expect(row.codeHash).not.toContain(code.replace('-', ''));
    const status = json(await t.app.inject({ method: 'GET', url: '/v1/account/2fa/status', headers: bearer(accessToken) }));
    expect(status).toEqual({ enabled: true, since: t.clock.now().toISOString(), recoveryCodesRemaining: 10 });
    expect(await eventsOf(user.id)).toContain('TWO_FA_ENABLED');
  });

  it('enable with a wrong code is 401 with a TWO_FA_FAILED event and leaves it off', async () => {
    const { accessToken, user } = await signUp(t.app);
    const { secret } = json(await post('/v1/account/2fa/setup', accessToken));
    const wrong = String((Number(totp(secret)) + 1) % 1_000_000).padStart(6, '0');
    const response = await post('/v1/account/2fa/enable', accessToken, { code: wrong });
    expect(response.statusCode).toBe(401);
    expect(json(response).error.code).toBe('UNAUTHORIZED');
    expect(await eventsOf(user.id)).toContain('TWO_FA_FAILED');
    expect(json(await t.app.inject({ method: 'GET', url: '/v1/account/2fa/status', headers: bearer(accessToken) })).enabled).toBe(false);
  });

  it('enable without setup is 400; setup or enable while on is 409', async () => {
    const { accessToken } = await signUp(t.app);
    const noSetup = await post('/v1/account/2fa/enable', accessToken, { code: '123456' });
    expect(noSetup.statusCode).toBe(400);
    expect(json(noSetup).error.message).toContain('/v1/account/2fa/setup');

    const on = await userWith2fa();
    expect((await post('/v1/account/2fa/setup', on.accessToken)).statusCode).toBe(409);
    const again = await post('/v1/account/2fa/enable', on.accessToken, { code: totp(on.secret) });
    expect(again.statusCode).toBe(409);
    expect(json(again).error.code).toBe('CONFLICT');
  });

  it('refuses bad input with 400 and changes nothing', async () => {
    const { accessToken, user } = await signUp(t.app);
    await post('/v1/account/2fa/setup', accessToken);
    for (const payload of [{}, { code: '12345' }, { code: '1234567' }, { code: 123456 }, { code: 'abcdef' }, { code: '123456', extra: 1 }]) {
      const response = await post('/v1/account/2fa/enable', accessToken, payload);
      expect(response.statusCode).toBe(400);
      expect(json(response).error.code).toBe('BAD_REQUEST');
    }
    for (const payload of [{}, { password: '' }, { password: 'x', other: true }]) {
      expect((await post('/v1/account/2fa/disable', accessToken, payload)).statusCode).toBe(400);
    }
    const [row] = await t.platform.db.select().from(twoFactor).where(eq(twoFactor.userId, user.id));
    expect(row?.enabledAt).toBeNull();
  });
});

describe('login with two-factor on', () => {
  it('answers 402 with a challenge instead of a session, and no refresh cookie', async () => {
    const { email, password } = await userWith2fa();
    const response = await login(email, password);
    expect(response.statusCode).toBe(402);
    const body = json(response);
    expect(body).toEqual({ mfaRequired: true, challengeToken: expect.any(String), tokenType: 'Bearer' });
    expect(response.cookies.find((c) => c.name === 'rt')).toBeUndefined();
  });

  it('a wrong password is still 401, not a challenge', async () => {
    const { email } = await userWith2fa();
    expect((await login(email, 'not the password')).statusCode).toBe(401);
  });

  it('verify with the current TOTP code completes the login with a token bundle and the rt cookie', async () => {
    const { email, password, secret, user } = await userWith2fa();
    const challenge = await challengeFor(email, password);
    const response = await verify(challenge, totp(secret));
    expect(response.statusCode).toBe(200);
    const body = json(response);
    expect(body).toMatchObject({ user: { id: user.id, email }, tokenType: 'Bearer', expiresIn: 900 });
    expect(response.cookies.find((c) => c.name === 'rt')?.value).toBe(body.refreshToken);
    expect((await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(body.accessToken) })).statusCode).toBe(200);
    const [success] = await t.platform.db
      .select()
      .from(securityEvents)
      .where(and(eq(securityEvents.userId, user.id), eq(securityEvents.kind, 'LOGIN_SUCCESS')));
    expect(success?.metadata).toEqual({ method: 'totp' });
  });

  it('accepts the code of the previous and of the next time step, not two steps away', async () => {
    const { email, password, secret } = await userWith2fa();
    alignToStep();
    t.clock.advance(5 * STEP_MS);
    expect((await verify(await challengeFor(email, password), totp(secret, -2))).statusCode).toBe(401);
    expect((await verify(await challengeFor(email, password), totp(secret, +2))).statusCode).toBe(401);
    expect((await verify(await challengeFor(email, password), totp(secret, -1))).statusCode).toBe(200);
    expect((await verify(await challengeFor(email, password), totp(secret, +1))).statusCode).toBe(200);
  });

  it('a TOTP code used once cannot be replayed, nor can an earlier one after a later one was used', async () => {
    const { email, password, secret, user } = await userWith2fa();
    alignToStep();
    const code = totp(secret);
    const previous = totp(secret, -1);
    expect((await verify(await challengeFor(email, password), code)).statusCode).toBe(200);
    const replay = await verify(await challengeFor(email, password), code);
    expect(replay.statusCode).toBe(401);
    expect(json(replay).error.code).toBe('UNAUTHORIZED');
    expect((await verify(await challengeFor(email, password), previous)).statusCode).toBe(401);
    expect((await eventsOf(user.id)).filter((k) => k === 'TWO_FA_FAILED')).toHaveLength(2);
    // the next time step's code works
    t.clock.advance(STEP_MS);
    expect((await verify(await challengeFor(email, password), totp(secret))).statusCode).toBe(200);
  });

  it('a recovery code completes the login once; used twice it is refused', async () => {
    const { email, password, recoveryCodes: codes, accessToken, user } = await userWith2fa();
    const first = await verify(await challengeFor(email, password), codes[0]);
    expect(first.statusCode).toBe(200);
    const twice = await verify(await challengeFor(email, password), codes[0]);
    expect(twice.statusCode).toBe(401);
    // typed in upper case with spaces, another code still works
    expect((await verify(await challengeFor(email, password), ` ${codes[1]!.toUpperCase()} `)).statusCode).toBe(200);
    const status = json(await t.app.inject({ method: 'GET', url: '/v1/account/2fa/status', headers: bearer(accessToken) }));
    expect(status.recoveryCodesRemaining).toBe(8);
    const kinds = await t.platform.db
      .select()
      .from(securityEvents)
      .where(and(eq(securityEvents.userId, user.id), eq(securityEvents.kind, 'LOGIN_SUCCESS')));
    expect(kinds.map((e) => e.metadata.method)).toContain('recovery_code');
  });

  it('a wrong code is 401 with a TWO_FA_FAILED event; five wrong codes end the challenge', async () => {
    const { email, password, secret, user } = await userWith2fa();
    const challenge = await challengeFor(email, password);
    for (let i = 0; i < 5; i++) {
      const response = await verify(challenge, i % 2 === 0 ? '000000' : 'zzzz-zzzz');
      expect(response.statusCode).toBe(401);
      expect(json(response).error.message).toMatch(/code is not right/);
    }
    expect((await eventsOf(user.id)).filter((k) => k === 'TWO_FA_FAILED')).toHaveLength(5);
    const dead = await verify(challenge, totp(secret));
    expect(dead.statusCode).toBe(401);
    expect(json(dead).error.message).toMatch(/Sign in again/);
    // a fresh sign-in works
    expect((await verify(await challengeFor(email, password), totp(secret))).statusCode).toBe(200);
  });

  it('wrong codes count towards the login lockout: 10 in 15 minutes lock sign-in', async () => {
    const { email, password, secret, user } = await userWith2fa();
    for (let round = 0; round < 2; round++) {
      const challenge = await challengeFor(email, password);
      for (let i = 0; i < 4; i++) expect((await verify(challenge, '000000')).statusCode).toBe(401);
    }
    const challenge = await challengeFor(email, password);
    expect((await verify(challenge, '000000')).statusCode).toBe(401);
    const tenth = await verify(challenge, '000000');
    expect(tenth.statusCode).toBe(429);
    expect(json(tenth).error.code).toBe('LOGIN_LOCKED');
    expect(await eventsOf(user.id)).toContain('LOGIN_LOCKED');
    expect((await login(email, password)).statusCode).toBe(429);
    t.clock.advance(15 * MINUTE_MS + 1000);
    expect((await verify(await challengeFor(email, password), totp(secret))).statusCode).toBe(200);
  });

  it('the challenge token lives 5 minutes', async () => {
    const { email, password, secret } = await userWith2fa();
    const challenge = await challengeFor(email, password);
    t.clock.advance(5 * MINUTE_MS + 1000);
    const expired = await verify(challenge, totp(secret));
    expect(expired.statusCode).toBe(401);
    expect(json(expired).error.message).toMatch(/expired/);
    const fresh = await challengeFor(email, password);
    t.clock.advance(4 * MINUTE_MS);
    expect((await verify(fresh, totp(secret))).statusCode).toBe(200);
  });

  it('a challenge completes one login only', async () => {
    const { email, password, secret, recoveryCodes: codes } = await userWith2fa();
    const challenge = await challengeFor(email, password);
    expect((await verify(challenge, totp(secret))).statusCode).toBe(200);
    const again = await verify(challenge, codes[0]);
    expect(again.statusCode).toBe(401);
  });

  it('a challenge token is refused as a Bearer token anywhere else', async () => {
    const { email, password } = await userWith2fa();
    const challenge = await challengeFor(email, password);
    for (const url of ['/v1/users/me', '/v1/account/2fa/status', '/v1/account/sessions']) {
      const response = await t.app.inject({ method: 'GET', url, headers: bearer(challenge) });
      expect(response.statusCode).toBe(401);
      expect(json(response).error.code).toBe('UNAUTHORIZED');
    }
    expect((await post('/v1/account/2fa/disable', challenge, { password })).statusCode).toBe(401);
  });

  it('an access token is not a challenge token', async () => {
    const { accessToken, secret } = await userWith2fa();
    expect((await verify(accessToken, totp(secret))).statusCode).toBe(401);
  });

  it('refuses bad verify input with 400', async () => {
    for (const payload of [
      {},
      { challengeToken: 'x' },
      { code: '123456' },
      { challengeToken: 'x', code: '123' },
      { challengeToken: 'x', code: '123456', more: 1 },
    ]) {
      const response = await t.app.inject({ method: 'POST', url: '/v1/auth/2fa/verify', payload });
      expect(response.statusCode).toBe(400);
      expect(json(response).error.code).toBe('BAD_REQUEST');
    }
  });
});

describe('two-factor disable and recovery codes', () => {
  it('disable needs the right password (401 otherwise), then login no longer asks for a code', async () => {
    const { accessToken, email, password, user } = await userWith2fa();
    const wrong = await post('/v1/account/2fa/disable', accessToken, { password: 'not the password' });
    expect(wrong.statusCode).toBe(401);
    expect(json(await t.app.inject({ method: 'GET', url: '/v1/account/2fa/status', headers: bearer(accessToken) })).enabled).toBe(true);

    const response = await post('/v1/account/2fa/disable', accessToken, { password });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ ok: true });
    expect(await eventsOf(user.id)).toContain('TWO_FA_DISABLED');
    expect(json(await t.app.inject({ method: 'GET', url: '/v1/account/2fa/status', headers: bearer(accessToken) }))).toEqual({
      enabled: false,
      since: null,
      recoveryCodesRemaining: 0,
    });
    expect((await login(email, password)).statusCode).toBe(200);
    expect((await post('/v1/account/2fa/disable', accessToken, { password })).statusCode).toBe(409);
  });

  it('disabling ends pending challenges', async () => {
    const { accessToken, email, password, secret } = await userWith2fa();
    const challenge = await challengeFor(email, password);
    await post('/v1/account/2fa/disable', accessToken, { password });
    expect((await verify(challenge, totp(secret))).statusCode).toBe(401);
  });

  it('regenerate replaces the recovery codes (old ones stop working) with a valid code only', async () => {
    const { accessToken, email, password, secret, recoveryCodes: old, user } = await userWith2fa();
    const wrong = await post('/v1/account/2fa/recovery-codes/regenerate', accessToken, { code: '000000' });
    expect(wrong.statusCode).toBe(401);
    expect(await eventsOf(user.id)).toContain('TWO_FA_FAILED');
    const response = await post('/v1/account/2fa/recovery-codes/regenerate', accessToken, { code: totp(secret) });
    expect(response.statusCode).toBe(200);
    const fresh: string[] = json(response).recoveryCodes;
    expect(fresh).toHaveLength(10);
    expect(fresh.some((c) => old.includes(c))).toBe(false);
    expect((await verify(await challengeFor(email, password), old[0])).statusCode).toBe(401);
    expect((await verify(await challengeFor(email, password), fresh[0]!)).statusCode).toBe(200);
  });

  it('regenerate while off is 409', async () => {
    const { accessToken } = await signUp(t.app);
    expect((await post('/v1/account/2fa/recovery-codes/regenerate', accessToken, { code: '123456' })).statusCode).toBe(409);
  });

  it('every two-factor route needs an access token', async () => {
    for (const [method, url] of [
      ['POST', '/v1/account/2fa/setup'],
      ['POST', '/v1/account/2fa/enable'],
      ['POST', '/v1/account/2fa/disable'],
      ['GET', '/v1/account/2fa/status'],
      ['POST', '/v1/account/2fa/recovery-codes/regenerate'],
    ] as const) {
      const response = await t.app.inject({ method, url });
      expect(response.statusCode).toBe(401);
    }
  });
});
