import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq, sql } from 'drizzle-orm';
import { passwordResets } from '../../db/schema/account.js';
import { refreshTokens, securityEvents, sessions } from '../../db/schema/auth.js';
import { mailOutbox } from '../../db/schema/platform.js';
import { MINUTE_MS } from '../../platform/clock/clock.js';
import { lockedUntil } from '../auth/lockout.js';
import { bearer, createTestApp, json, signUp, uniqueEmail, type TestApp } from '../../../test/helpers/test-app.js';
import { extract, lastMailTo, mailsTo } from '../../../test/helpers/outbox.js';
import { waitForQueue } from '../../../test/helpers/jobs.js';

let t: TestApp;
beforeAll(async () => {
  // the reset code is issued and mailed by a job, off the request
  t = await createTestApp({ startJobs: true });
});
afterAll(async () => t?.close());

const post = (url: string, payload?: object, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url, headers, ...(payload ? { payload } : {}) });
/** Asks for a reset code and waits until the job that issues it has run. */
const forgot = async (email: string) => {
  const response = await post('/v1/account/password/forgot', { email });
  await waitForQueue(t.platform.db, 'account.password-reset-code');
  return response;
};
const verifyOtp = (email: string, otp: string) => post('/v1/account/password/verify-otp', { email, otp });
const reset = (token: string, password: string) => post('/v1/account/password/reset', { token, password });
const login = (email: string, password: string) => post('/v1/auth/login', { email, password });
const get = (url: string, token: string) => t.app.inject({ method: 'GET', url, headers: bearer(token) });
const otpOf = async (email: string) => extract(await lastMailTo(t.platform.db, email), /^\s+(\d{4})$/m);
const wrongOf = (otp: string) => String((Number(otp) + 1) % 10_000).padStart(4, '0');
const eventsOf = async (userId: string) => (await t.platform.db.select().from(securityEvents).where(eq(securityEvents.userId, userId))).map((e) => e.kind);

describe('POST /v1/account/password/forgot', () => {
  it('mails a 4-digit code in plain text and HTML, valid 10 minutes, and stores only its hash', async () => {
    const { email, user } = await signUp(t.app);
    const response = await forgot(email.toUpperCase());
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ ok: true, validMinutes: 10 });
    const mail = await lastMailTo(t.platform.db, email);
    const otp = await otpOf(email);
    expect(otp).toMatch(/^\d{4}$/);
    expect(mail.subject).toContain(otp);
    expect(mail.html).toContain(otp);
    expect(mail.html).toMatch(/^<!doctype html>/);
    const [row] = await t.platform.db.select().from(passwordResets).where(eq(passwordResets.userId, user.id));
    expect(row).toMatchObject({ status: 'OTP_ISSUED', otpAttempts: 0 });
    expect(row!.otpHash).not.toContain(otp);
    expect(row!.otpExpiresAt.getTime() - t.clock.now().getTime()).toBe(10 * MINUTE_MS);
  });

  it('answers the same for known and unknown emails, and mails nobody for an unknown one', async () => {
    const { email } = await signUp(t.app);
    const ghost = uniqueEmail('ghost');
    const known = await forgot(email);
    const unknown = await forgot(ghost);
    expect(unknown.statusCode).toBe(known.statusCode);
    expect(unknown.body).toBe(known.body);
    expect(Object.keys(unknown.headers).sort()).toEqual(Object.keys(known.headers).sort());
    expect(await mailsTo(t.platform.db, ghost)).toHaveLength(0);
  });

  it('does the same work on the request for both: one job each, which mails the code to the known email only', async () => {
    const { email, user } = await signUp(t.app);
    const ghost = uniqueEmail('ghost');
    const [known, unknown] = await Promise.all([post('/v1/account/password/forgot', { email }), post('/v1/account/password/forgot', { email: ghost })]);
    expect([known.statusCode, unknown.statusCode]).toEqual([200, 200]);
    await waitForQueue(t.platform.db, 'account.password-reset-code');
    const jobs = await t.platform.db.execute(
      sql`select data->>'email' as email, state from pgboss.job where name = 'account.password-reset-code' and data->>'email' in (${email}, ${ghost})`,
    );
    expect((jobs as { rows: unknown[] }).rows).toEqual(
      expect.arrayContaining([
        { email, state: 'completed' },
        { email: ghost, state: 'completed' },
      ]),
    );
    expect((jobs as { rows: unknown[] }).rows).toHaveLength(2);
    const mails = await mailsTo(t.platform.db, email);
    expect(mails).toHaveLength(1);
    expect(mails[0]!.subject).toMatch(/^Your password reset code: \d{4}$/);
    expect(await t.platform.db.select().from(passwordResets).where(eq(passwordResets.userId, user.id))).toHaveLength(1);
    expect(await mailsTo(t.platform.db, ghost)).toHaveLength(0);
  });

  it('ignores a repeat within 60 seconds; after that a new code replaces the old one', async () => {
    const { email } = await signUp(t.app);
    await forgot(email);
    const first = await otpOf(email);
    t.clock.advance(59_000);
    expect(json(await forgot(email))).toEqual({ ok: true, validMinutes: 10 });
    expect(await mailsTo(t.platform.db, email)).toHaveLength(1);
    t.clock.advance(2_000);
    await forgot(email);
    expect(await mailsTo(t.platform.db, email)).toHaveLength(2);
    const second = await otpOf(email);
    if (first !== second) expect((await verifyOtp(email, first)).statusCode).toBe(400);
    expect((await verifyOtp(email, second)).statusCode).toBe(200);
  });

  it('refuses bad input with 400', async () => {
    for (const payload of [{}, { email: 'not-an-email' }, { email: 42 }, { email: 'a@example.com', extra: true }]) {
      const response = await post('/v1/account/password/forgot', payload);
      expect(response.statusCode).toBe(400);
      expect(json(response).error.code).toBe('BAD_REQUEST');
    }
  });
});

describe('POST /v1/account/password/verify-otp', () => {
  it('trades the right code for a reset token once (single-use code)', async () => {
    const { email, user } = await signUp(t.app);
    await forgot(email);
    const otp = await otpOf(email);
    const response = await verifyOtp(email, otp);
    expect(response.statusCode).toBe(200);
    expect(json(response).resetToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const again = await verifyOtp(email, otp);
    expect(again.statusCode).toBe(400);
    expect(json(again).error.code).toBe('BAD_REQUEST');
    const [row] = await t.platform.db.select().from(passwordResets).where(eq(passwordResets.userId, user.id));
    expect(row!.status).toBe('TOKEN_ISSUED');
    expect(row!.resetTokenHash).not.toBe(json(response).resetToken);
  });

  it('a code older than 10 minutes is refused', async () => {
    const { email } = await signUp(t.app);
    await forgot(email);
    const otp = await otpOf(email);
    t.clock.advance(10 * MINUTE_MS + 1000);
    expect((await verifyOtp(email, otp)).statusCode).toBe(400);
  });

  it('a code is accepted just before its 10 minutes end', async () => {
    const { email } = await signUp(t.app);
    await forgot(email);
    const otp = await otpOf(email);
    t.clock.advance(10 * MINUTE_MS - 1000);
    expect((await verifyOtp(email, otp)).statusCode).toBe(200);
  });

  it('5 wrong attempts kill the code: even the right one is refused until a new code is requested', async () => {
    const { email, user } = await signUp(t.app);
    await forgot(email);
    const otp = await otpOf(email);
    for (let i = 0; i < 4; i++) expect((await verifyOtp(email, wrongOf(otp))).statusCode).toBe(400);
    const fifth = await verifyOtp(email, wrongOf(otp));
    expect(fifth.statusCode).toBe(400);
    const [row] = await t.platform.db.select().from(passwordResets).where(eq(passwordResets.userId, user.id));
    expect(row).toMatchObject({ status: 'OTP_DEAD', otpAttempts: 5 });
    expect((await verifyOtp(email, otp)).statusCode).toBe(400);

    t.clock.advance(61_000);
    await forgot(email);
    expect((await verifyOtp(email, await otpOf(email))).statusCode).toBe(200);
  });

  it('4 wrong attempts leave the code usable', async () => {
    const { email } = await signUp(t.app);
    await forgot(email);
    const otp = await otpOf(email);
    for (let i = 0; i < 4; i++) await verifyOtp(email, wrongOf(otp));
    expect((await verifyOtp(email, otp)).statusCode).toBe(200);
  });

  it('parallel guesses never exceed 5 comparisons', async () => {
    const { email, user } = await signUp(t.app);
    await forgot(email);
    const otp = await otpOf(email);
    const guesses = await Promise.all(Array.from({ length: 12 }, () => verifyOtp(email, wrongOf(otp))));
    expect(guesses.every((g) => g.statusCode === 400)).toBe(true);
    const [row] = await t.platform.db.select().from(passwordResets).where(eq(passwordResets.userId, user.id));
    expect(row!.otpAttempts).toBe(5);
    expect(row!.status).toBe('OTP_DEAD');
  });

  it('answers an unknown email like a wrong code', async () => {
    const { email } = await signUp(t.app);
    await forgot(email);
    const unknown = await verifyOtp(uniqueEmail('nobody'), '1234');
    const wrong = await verifyOtp(email, wrongOf(await otpOf(email)));
    expect(unknown.statusCode).toBe(400);
    expect(json(unknown)).toEqual(json(wrong));
  });

  it('refuses bad input with 400', async () => {
    for (const payload of [
      {},
      { email: 'a@example.com' },
      { email: 'a@example.com', otp: '123' },
      { email: 'a@example.com', otp: '12345' },
      { email: 'a@example.com', otp: 1234 },
      { email: 'a@example.com', otp: 'abcd' },
    ]) {
      expect((await post('/v1/account/password/verify-otp', payload)).statusCode).toBe(400);
    }
  });
});

describe('POST /v1/account/password/reset', () => {
  async function resetTokenFor(email: string) {
    await forgot(email);
    return json(await verifyOtp(email, await otpOf(email))).resetToken as string;
  }

  it('sets the new password, revokes every session and refresh token, records PASSWORD_RESET', async () => {
    const { email, password, user } = await signUp(t.app);
    const phone = json(await post('/v1/auth/login', { email, password }, { 'user-agent': 'Mozilla/5.0 (iPhone) Safari/604.1' }));
    const laptop = json(await post('/v1/auth/login', { email, password }, { 'user-agent': 'Mozilla/5.0 (Windows NT 10.0) Firefox/128.0' }));
    const token = await resetTokenFor(email);
    const response = await reset(token, 'a brand new password');
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ ok: true });

    const revoked = await t.platform.db
      .select()
      .from(refreshTokens)
      .where(and(eq(refreshTokens.userId, user.id), eq(refreshTokens.revokedReason, 'PASSWORD_RESET')));
    expect(revoked).toHaveLength(3);
    expect((await post('/v1/auth/refresh', { refreshToken: phone.refreshToken })).statusCode).toBe(401);
    expect((await post('/v1/auth/refresh', { refreshToken: laptop.refreshToken })).statusCode).toBe(401);
    expect((await login(email, password)).statusCode).toBe(401);
    expect((await login(email, 'a brand new password')).statusCode).toBe(200);
    expect(await eventsOf(user.id)).toContain('PASSWORD_RESET');
    // the user is told by mail
    expect((await lastMailTo(t.platform.db, email)).subject).toBe('Your password was reset');
  });

  it('every session of the account ends', async () => {
    const { email, password, user } = await signUp(t.app);
    await login(email, password);
    await reset(await resetTokenFor(email), 'another new password');
    const live = (await t.platform.db.select().from(sessions).where(eq(sessions.userId, user.id))).filter((s) => !s.revokedAt);
    expect(live).toHaveLength(0);
  });

  it('the reset token is single-use and lives 15 minutes', async () => {
    const { email } = await signUp(t.app);
    const token = await resetTokenFor(email);
    expect((await reset(token, 'first new password')).statusCode).toBe(200);
    const reuse = await reset(token, 'second new password');
    expect(reuse.statusCode).toBe(400);
    expect(json(reuse).error.message).toMatch(/invalid, expired or already used/);

    t.clock.advance(61_000);
    const late = await resetTokenFor(email);
    t.clock.advance(15 * MINUTE_MS + 1000);
    expect((await reset(late, 'too late password')).statusCode).toBe(400);
    expect((await login(email, 'first new password')).statusCode).toBe(200);
  });

  it('a new code kills an unused reset token', async () => {
    const { email } = await signUp(t.app);
    const token = await resetTokenFor(email);
    t.clock.advance(61_000);
    await forgot(email);
    expect((await reset(token, 'some new password')).statusCode).toBe(400);
  });

  it('lifts a login lock', async () => {
    const { email, user } = await signUp(t.app);
    for (let i = 0; i < 10; i++) await login(email, 'wrong password');
    expect((await login(email, 'wrong password')).statusCode).toBe(429);
    await reset(await resetTokenFor(email), 'unlocked password');
    expect(await lockedUntil(t.platform.db, email, user.id, t.clock.now())).toBeNull();
    expect((await login(email, 'unlocked password')).statusCode).toBe(200);
  });

  it('refuses an unknown token, a short password and bad input with 400, changing nothing', async () => {
    const { email, password } = await signUp(t.app);
    const token = await resetTokenFor(email);
    expect((await reset('not-a-real-token', 'long enough password')).statusCode).toBe(400);
    const short = await reset(token, 'short');
    expect(short.statusCode).toBe(400);
    expect(json(short).error.details).toEqual([expect.objectContaining({ field: 'password' })]);
    for (const payload of [{}, { token }, { password: 'long enough' }, { token, password: 'long enough', extra: 1 }]) {
      expect((await post('/v1/account/password/reset', payload)).statusCode).toBe(400);
    }
    expect((await login(email, password)).statusCode).toBe(200);
    // the token was not used up by the refused attempts
    expect((await reset(token, 'finally a new one')).statusCode).toBe(200);
  });
});

describe('POST /v1/account/password/change', () => {
  it('changes the password, keeps this session, signs out the other devices and records PASSWORD_CHANGED', async () => {
    const { email, password, user, accessToken, refreshToken } = await signUp(t.app);
    // signing in again on this device replaces its refresh token (same session as the access token's)
    const sameDevice = json(await login(email, password));
    const otherDevice = json(await post('/v1/auth/login', { email, password }, { 'user-agent': 'Mozilla/5.0 (iPhone) Safari/604.1' }));
    const response = await post('/v1/account/password/change', { currentPassword: password, newPassword: 'changed password' }, bearer(accessToken));
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ ok: true });
    expect((await login(email, password)).statusCode).toBe(401);
    // the caller's own session stays signed in; the other device is signed out
    expect((await post('/v1/auth/refresh', { refreshToken: sameDevice.refreshToken })).statusCode).toBe(200);
    expect(refreshToken).not.toBe(sameDevice.refreshToken);
    const rows = await t.platform.db.select().from(sessions).where(eq(sessions.userId, user.id));
    expect(rows.filter((r) => !r.revokedAt).map((r) => r.device)).toEqual(['lightMyRequest']);
    expect((await post('/v1/auth/refresh', { refreshToken: otherDevice.refreshToken })).statusCode).toBe(401);
    // that signed-out device retrying does not end the caller's session
    expect(json(await get('/v1/account/sessions', accessToken)).items).toHaveLength(1);
    expect(await eventsOf(user.id)).toContain('PASSWORD_CHANGED');
    expect((await lastMailTo(t.platform.db, email)).subject).toBe('Your password was changed');
  });

  it('a wrong current password is 401 and changes nothing', async () => {
    const { email, password, accessToken, user } = await signUp(t.app);
    const response = await post('/v1/account/password/change', { currentPassword: 'wrong one', newPassword: 'changed password' }, bearer(accessToken));
    expect(response.statusCode).toBe(401);
    expect(json(response).error).toMatchObject({ code: 'UNAUTHORIZED', message: 'Your current password is not right.' });
    expect((await login(email, password)).statusCode).toBe(200);
    expect(await eventsOf(user.id)).not.toContain('PASSWORD_CHANGED');
  });

  it('needs a token, and refuses a short new password or unknown fields', async () => {
    expect((await post('/v1/account/password/change', { currentPassword: 'x', newPassword: 'long enough' })).statusCode).toBe(401);
    const { accessToken, password } = await signUp(t.app);
    for (const payload of [
      {},
      { currentPassword: password },
      { currentPassword: password, newPassword: 'short' },
      { currentPassword: password, newPassword: 'long enough', x: 1 },
    ]) {
      expect((await post('/v1/account/password/change', payload, bearer(accessToken))).statusCode).toBe(400);
    }
  });

  it('the security mail respects emailSecurityAlerts', async () => {
    const { email, password, accessToken } = await signUp(t.app);
    await t.app.inject({ method: 'PATCH', url: '/v1/account/notification-prefs', headers: bearer(accessToken), payload: { emailSecurityAlerts: false } });
    await post('/v1/account/password/change', { currentPassword: password, newPassword: 'quiet new password' }, bearer(accessToken));
    expect(await t.platform.db.select().from(mailOutbox).where(eq(mailOutbox.to, email))).toHaveLength(0);
  });
});
