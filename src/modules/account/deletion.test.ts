import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { apiKeys } from '../../db/schema/apikeys.js';
import { refreshTokens, sessions, users } from '../../db/schema/auth.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { mailsTo } from '../../../test/helpers/outbox.js';
import { waitForQueue } from '../../../test/helpers/jobs.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ startJobs: true }); // the password-reset request is handled by a job
});
afterAll(async () => t?.close());

const deleteAccount = (token: string | null, payload?: object) =>
  t.app.inject({ method: 'POST', url: '/v1/account/delete', headers: token ? bearer(token) : {}, ...(payload ? { payload } : {}) });
const login = (email: string, password: string, userAgent = 'lightMyRequest') =>
  t.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email, password }, headers: { 'user-agent': userAgent } });

describe('POST /v1/account/delete', () => {
  it('soft-deletes the account, revokes every refresh token and API key; the email can no longer sign in', async () => {
    const { email, password, accessToken, refreshToken, user } = await signUp(t.app);
    const phone = json(await login(email, password, 'Mozilla/5.0 (iPhone) Safari/604.1'));
    const rawKey = 'sk_sf_test_key_for_deletion_0000000000000000';
    await t.platform.db.insert(apiKeys).values({
      userId: user.id,
      label: 'ci',
      keyHash: createHash('sha256').update(rawKey).digest('hex'),
      keyPrefix: rawKey.slice(-4),
      scopes: ['ai:text'],
      createdAt: t.clock.now(),
    });

    const response = await deleteAccount(accessToken, { password });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ ok: true });

    const [row] = await t.platform.db.select().from(users).where(eq(users.id, user.id));
    expect(row).toMatchObject({ status: 'DELETED', deletedAt: t.clock.now() });
    const tokens = await t.platform.db.select().from(refreshTokens).where(eq(refreshTokens.userId, user.id));
    expect(tokens.every((r) => r.revokedAt !== null)).toBe(true);
    expect(tokens.filter((r) => r.revokedReason === 'ACCOUNT_DELETED')).toHaveLength(2);
    expect((await t.platform.db.select().from(sessions).where(eq(sessions.userId, user.id))).every((s) => s.revokedAt !== null)).toBe(true);
    const [key] = await t.platform.db.select().from(apiKeys).where(eq(apiKeys.userId, user.id));
    expect(key!.revokedAt).toEqual(t.clock.now());

    const signIn = await login(email, password);
    expect(signIn.statusCode).toBe(401);
    expect(json(signIn).error.message).toBe('Email or password is incorrect.');
    for (const token of [refreshToken, phone.refreshToken]) {
      expect((await t.app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refreshToken: token } })).statusCode).toBe(401);
    }
    // a still-unexpired access token no longer opens the account
    expect((await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(accessToken) })).statusCode).toBe(401);
    expect((await t.app.inject({ method: 'GET', url: '/v1/account/preferences', headers: bearer(accessToken) })).statusCode).toBe(401);
    // no password reset for a deleted account
    await t.app.inject({ method: 'POST', url: '/v1/account/password/forgot', payload: { email } });
    await waitForQueue(t.platform.db, 'account.password-reset-code');
    expect((await mailsTo(t.platform.db, email)).filter((m) => m.subject.includes('reset code'))).toHaveLength(0);
    // the address is free for a new account
    const again = await t.app.inject({ method: 'POST', url: '/v1/auth/signup', payload: { email, password: 'a new password' } });
    expect(again.statusCode).toBe(201);
    expect(json(again).user.id).not.toBe(user.id);
  });

  it('a wrong password is 401 and deletes nothing', async () => {
    const { email, password, accessToken, user } = await signUp(t.app);
    const response = await deleteAccount(accessToken, { password: 'not my password' });
    expect(response.statusCode).toBe(401);
    expect(json(response).error.code).toBe('UNAUTHORIZED');
    expect((await t.platform.db.select().from(users).where(eq(users.id, user.id)))[0]!.status).toBe('ACTIVE');
    expect((await login(email, password)).statusCode).toBe(200);
  });

  it('needs a token, and refuses bad input with 400', async () => {
    expect((await deleteAccount(null, { password: 'whatever' })).statusCode).toBe(401);
    const { accessToken, user } = await signUp(t.app);
    for (const payload of [{}, { password: '' }, { password: 12345678 }, { password: 'x', confirm: true }]) {
      expect((await deleteAccount(accessToken, payload)).statusCode).toBe(400);
    }
    expect((await t.platform.db.select().from(users).where(eq(users.id, user.id)))[0]!.status).toBe('ACTIVE');
  });

  it('deleting twice is refused: the session is gone', async () => {
    const { password, accessToken } = await signUp(t.app);
    expect((await deleteAccount(accessToken, { password })).statusCode).toBe(200);
    expect((await deleteAccount(accessToken, { password })).statusCode).toBe(401);
  });
});
