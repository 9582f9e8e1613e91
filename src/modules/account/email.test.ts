import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import { SMTPServer } from 'smtp-server';
import { emailTokens } from '../../db/schema/account.js';
import { securityEvents, users } from '../../db/schema/auth.js';
import { HOUR_MS } from '../../platform/clock/clock.js';
import { hashToken, randomToken } from '../../platform/crypto/secrets.js';
import { bearer, createTestApp, json, signUp, uniqueEmail, type TestApp } from '../../../test/helpers/test-app.js';
import { extract, lastMailTo, mailsTo } from '../../../test/helpers/outbox.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: { FRONTEND_URL: 'https://app.example.com' } });
});
afterAll(async () => t?.close());

const post = (url: string, payload?: object, token?: string) =>
  t.app.inject({ method: 'POST', url, headers: token ? bearer(token) : {}, ...(payload ? { payload } : {}) });
const userRow = async (id: string) => (await t.platform.db.select().from(users).where(eq(users.id, id)))[0]!;
const tokenIn = async (to: string, path: string) =>
  decodeURIComponent(extract(await lastMailTo(t.platform.db, to), new RegExp(`https://app\\.example\\.com/${path}\\?token=(\\S+)`)));

describe('email verification', () => {
  it('send mails a 24-hour link; confirm marks the email verified and answers the user id', async () => {
    const { accessToken, email, user } = await signUp(t.app);
    const sent = await post('/v1/account/verify-email/send', undefined, accessToken);
    expect(sent.statusCode).toBe(200);
    expect(json(sent)).toEqual({ ok: true, alreadyVerified: false });
    const mail = await lastMailTo(t.platform.db, email);
    expect(mail.subject).toBe('Confirm your email address');
    expect(mail.html).toContain('https://app.example.com/verify-email?token=');
    const token = await tokenIn(email, 'verify-email');
    const [stored] = await t.platform.db.select().from(emailTokens).where(eq(emailTokens.userId, user.id));
    expect(stored!.tokenHash).not.toBe(token);
    expect(stored!.expiresAt.getTime() - t.clock.now().getTime()).toBe(24 * HOUR_MS);

    const confirmed = await post('/v1/account/verify-email/confirm', { token });
    expect(confirmed.statusCode).toBe(200);
    expect(json(confirmed)).toEqual({ userId: user.id });
    expect((await userRow(user.id)).emailVerified).toBe(true);
    expect((await post('/v1/account/verify-email/confirm', { token })).statusCode).toBe(400);
    expect(json(await post('/v1/account/verify-email/send', undefined, accessToken))).toEqual({ ok: true, alreadyVerified: true });
  });

  it('a link older than 24 hours is refused; a newer link replaces the older one', async () => {
    const { accessToken, email, password, user } = await signUp(t.app);
    await post('/v1/account/verify-email/send', undefined, accessToken);
    const first = await tokenIn(email, 'verify-email');
    t.clock.advance(24 * HOUR_MS + 1000);
    const late = await post('/v1/account/verify-email/confirm', { token: first });
    expect(late.statusCode).toBe(400);
    expect(json(late).error.message).toMatch(/invalid, has expired or was already used/);

    const fresh = json(await post('/v1/auth/login', { email, password })).accessToken as string;
    expect((await post('/v1/account/verify-email/send', undefined, fresh)).statusCode).toBe(200);
    const second = await tokenIn(email, 'verify-email');
    t.clock.advance(61_000);
    await post('/v1/account/verify-email/send', undefined, fresh);
    const third = await tokenIn(email, 'verify-email');
    expect((await post('/v1/account/verify-email/confirm', { token: second })).statusCode).toBe(400);
    expect((await post('/v1/account/verify-email/confirm', { token: third })).statusCode).toBe(200);
    expect((await userRow(user.id)).emailVerified).toBe(true);
  });

  it('a second request within 60 seconds sends no second mail', async () => {
    const { accessToken, email } = await signUp(t.app);
    await post('/v1/account/verify-email/send', undefined, accessToken);
    await post('/v1/account/verify-email/send', undefined, accessToken);
    expect(await mailsTo(t.platform.db, email)).toHaveLength(1);
  });

  it('needs a token to send; confirm refuses bad input', async () => {
    expect((await post('/v1/account/verify-email/send')).statusCode).toBe(401);
    for (const payload of [{}, { token: '' }, { token: 5 }, { token: 'x', more: 1 }]) {
      expect((await post('/v1/account/verify-email/confirm', payload)).statusCode).toBe(400);
    }
    expect((await post('/v1/account/verify-email/confirm', { token: 'unknown-token' })).statusCode).toBe(400);
  });
});

describe('email change', () => {
  it('mails a link to the new address; confirming swaps the email, marks it verified and records EMAIL_CHANGED', async () => {
    const { accessToken, email, password, user } = await signUp(t.app);
    const newEmail = uniqueEmail('New.Address');
    const response = await post('/v1/account/email/change', { newEmail }, accessToken);
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ ok: true, expiresAt: new Date(t.clock.now().getTime() + 24 * HOUR_MS).toISOString() });
    // nothing changes until the link is opened; the old address is told
    expect((await userRow(user.id)).email).toBe(email);
    expect((await lastMailTo(t.platform.db, email)).subject).toBe('A change of your email address was requested');

    const token = await tokenIn(newEmail.toLowerCase(), 'confirm-email');
    const confirmed = await post('/v1/account/email/confirm', { token });
    expect(confirmed.statusCode).toBe(200);
    expect(json(confirmed)).toEqual({ ok: true, userId: user.id, email: newEmail.toLowerCase() });
    const row = await userRow(user.id);
    expect(row).toMatchObject({ email: newEmail.toLowerCase(), emailVerified: true });
    const events = await t.platform.db.select().from(securityEvents).where(eq(securityEvents.userId, user.id));
    expect(events.find((e) => e.kind === 'EMAIL_CHANGED')?.metadata).toEqual({ from: email, to: newEmail.toLowerCase() });
    // the old address no longer signs in; the new one does
    expect((await post('/v1/auth/login', { email, password })).statusCode).toBe(401);
    expect((await post('/v1/auth/login', { email: newEmail, password })).statusCode).toBe(200);
    expect((await lastMailTo(t.platform.db, email)).subject).toBe('Your email address was changed');
    expect((await post('/v1/account/email/confirm', { token })).statusCode).toBe(400);
  });

  it('409 when the new address belongs to another account', async () => {
    const other = await signUp(t.app);
    const { accessToken } = await signUp(t.app);
    const response = await post('/v1/account/email/change', { newEmail: other.email.toUpperCase() }, accessToken);
    expect(response.statusCode).toBe(409);
    expect(json(response).error.code).toBe('CONFLICT');
  });

  it('409 at confirmation when another account took the address meanwhile; the link stays unused', async () => {
    const { accessToken, user } = await signUp(t.app);
    const contested = uniqueEmail('contested');
    await post('/v1/account/email/change', { newEmail: contested }, accessToken);
    const token = await tokenIn(contested, 'confirm-email');
    await signUp(t.app, { email: contested });
    const response = await post('/v1/account/email/confirm', { token });
    expect(response.statusCode).toBe(409);
    expect((await userRow(user.id)).email).not.toBe(contested);
  });

  it('400 for the current address; the link expires after 24 hours', async () => {
    const { accessToken, email } = await signUp(t.app);
    expect((await post('/v1/account/email/change', { newEmail: email }, accessToken)).statusCode).toBe(400);
    const target = uniqueEmail('later');
    await post('/v1/account/email/change', { newEmail: target }, accessToken);
    const token = await tokenIn(target, 'confirm-email');
    t.clock.advance(24 * HOUR_MS + 1000);
    expect((await post('/v1/account/email/confirm', { token })).statusCode).toBe(400);
  });

  it('a verification link sent to the old address stops working after the change', async () => {
    const { accessToken, email, user } = await signUp(t.app);
    await post('/v1/account/verify-email/send', undefined, accessToken);
    const verifyToken = await tokenIn(email, 'verify-email');
    const target = uniqueEmail('moved');
    await post('/v1/account/email/change', { newEmail: target }, accessToken);
    await post('/v1/account/email/confirm', { token: await tokenIn(target, 'confirm-email') });
    await t.platform.db.update(users).set({ emailVerified: false }).where(eq(users.id, user.id));
    expect((await post('/v1/account/verify-email/confirm', { token: verifyToken })).statusCode).toBe(400);
    expect((await userRow(user.id)).emailVerified).toBe(false);
  });

  it('needs a token, a valid address and no unknown fields', async () => {
    expect((await post('/v1/account/email/change', { newEmail: uniqueEmail() })).statusCode).toBe(401);
    const { accessToken } = await signUp(t.app);
    for (const payload of [{}, { newEmail: 'nope' }, { newEmail: `${'x'.repeat(250)}@example.com` }, { newEmail: uniqueEmail(), extra: 1 }]) {
      expect((await post('/v1/account/email/change', payload, accessToken)).statusCode).toBe(400);
    }
    for (const payload of [{}, { token: 7 }]) expect((await post('/v1/account/email/confirm', payload)).statusCode).toBe(400);
  });
});

describe('email change to the service’s own addresses', () => {
  it.each(['playground@storefront.internal', 'PLAYGROUND@Storefront.Internal', 'playground+me@storefront.internal', 'ops@eu.storefront.internal'])(
    'changing to %s is refused with 400: no link, no mail, the address stays',
    async (newEmail) => {
      const { accessToken, email, user } = await signUp(t.app);
      const mailsBefore = (await mailsTo(t.platform.db, email)).length;
      const response = await post('/v1/account/email/change', { newEmail }, accessToken);
      expect(response.statusCode).toBe(400);
      expect(json(response).error).toEqual({
        code: 'BAD_REQUEST',
        message: expect.stringMatching(/storefront\.internal .*Use your own email address/),
        details: { field: 'newEmail' },
      });
      expect(await t.platform.db.select().from(emailTokens).where(eq(emailTokens.userId, user.id))).toEqual([]);
      expect(await mailsTo(t.platform.db, newEmail)).toEqual([]);
      expect((await mailsTo(t.platform.db, email)).length).toBe(mailsBefore);
      expect((await userRow(user.id)).email).toBe(email);
    },
  );

  it.each(['playground@storefront.internal', 'ops@storefront.internal'])(
    'a link to %s issued before this fix is refused at confirmation; the email stays',
    async (reserved) => {
      const { email, user } = await signUp(t.app);
      const token = randomToken();
      const now = t.clock.now();
      await t.platform.db.insert(emailTokens).values({
        userId: user.id,
        purpose: 'CHANGE_EMAIL',
        email: reserved,
        tokenHash: hashToken(token),
        createdAt: now,
        expiresAt: new Date(now.getTime() + HOUR_MS),
      });
      const response = await post('/v1/account/email/confirm', { token });
      expect(response.statusCode).toBe(400);
      expect(json(response).error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('storefront.internal') });
      expect(await userRow(user.id)).toMatchObject({ email, internalKind: null });
      const events = await t.platform.db.select().from(securityEvents).where(eq(securityEvents.userId, user.id));
      expect(events.some((e) => e.kind === 'EMAIL_CHANGED')).toBe(false);
    },
  );
});

describe('account mail over real SMTP', () => {
  it('delivers the reset code as a multipart message with a plain-text and an HTML part', async () => {
    const received: string[] = [];
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      onData(stream, _session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          received.push(Buffer.concat(chunks).toString('utf8'));
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.server.address() as AddressInfo).port;
    const smtpApp = await createTestApp({ env: { SMTP_URL: `smtp://127.0.0.1:${port}` }, startJobs: true });
    try {
      const { email } = await signUp(smtpApp.app);
      await smtpApp.app.inject({ method: 'POST', url: '/v1/account/password/forgot', payload: { email } });
      const deadline = Date.now() + 20_000;
      while (received.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(received).toHaveLength(1);
      const raw = received[0]!;
      expect(raw).toMatch(/^To: .*$/m);
      expect(raw).toContain(email);
      expect(raw).toMatch(/Content-Type: multipart\/alternative/i);
      expect(raw).toMatch(/Content-Type: text\/plain/i);
      expect(raw).toMatch(/Content-Type: text\/html/i);
      expect(raw).toMatch(/Subject: Your password reset code: \d{4}/);
    } finally {
      await smtpApp.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
