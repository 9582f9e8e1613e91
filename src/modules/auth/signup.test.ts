import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { users } from '../../db/schema/auth.js';
import { CLI_ACTOR, auditWriterFor } from '../audit/service.js';
import { createTestApp, json, signUp, uniqueEmail, type TestApp } from '../../../test/helpers/test-app.js';
import { PLAYGROUND_IDENTITY_EMAIL, isReservedEmail } from './users.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

const signup = (payload: unknown, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url: '/v1/auth/signup', payload: payload as object, headers });

describe('POST /v1/auth/signup', () => {
  it('creates the account and returns the token bundle with the rt cookie', async () => {
    const email = uniqueEmail('Mixed.Case');
    const response = await signup({ email, password: 'long enough', name: 'Ada Lovelace' });
    expect(response.statusCode).toBe(201);
    const body = json(response);
    expect(body).toMatchObject({ tokenType: 'Bearer', expiresIn: 900 });
    expect(body.user).toEqual({
      id: expect.any(String),
      email: email.toLowerCase(),
      role: 'USER',
      name: 'Ada Lovelace',
      handle: 'ada_lovelace',
      avatarUrl: null,
    });
    expect(body.accessToken.split('.')).toHaveLength(3);
    expect(body.refreshToken.length).toBeGreaterThanOrEqual(40);

    const cookie = response.cookies.find((c) => c.name === 'rt');
    expect(cookie).toMatchObject({ value: body.refreshToken, httpOnly: true, sameSite: 'Lax', path: '/v1/auth', maxAge: 30 * 24 * 3600 });
    expect(cookie?.secure).toBeFalsy();
  });

  it('stores an argon2id hash, never the password', async () => {
    const { user } = await signUp(t.app, { password: 'my secret password' });
    const [row] = await t.platform.db.select().from(users).where(eq(users.id, user.id));
    expect(row!.passwordHash).toMatch(/^\$argon2id\$/);
    expect(row!.passwordHash).not.toContain('my secret password');
  });

  it('generates a unique handle for every account, from the name or the email', async () => {
    const a = await signUp(t.app, { name: 'Grace Hopper' });
    const b = await signUp(t.app, { name: 'Grace Hopper' });
    expect(a.user.handle).toBe('grace_hopper');
    expect(b.user.handle).toMatch(/^grace_hopper_\d{4,}$/);
    const noName = json(await signup({ email: `zed.${Date.now()}@example.com`, password: 'long enough' }));
    expect(noName.user.handle).toMatch(/^zed_\d+/);
    expect(noName.user.name).toBeNull();
    for (const handle of [a.user.handle, b.user.handle, noName.user.handle]) expect(handle).toMatch(/^[a-zA-Z0-9_]{3,30}$/);
  });

  it('answers 409 CONFLICT for a taken email, whatever its case', async () => {
    const { email } = await signUp(t.app);
    const response = await signup({ email: email.toUpperCase(), password: 'another password' });
    expect(response.statusCode).toBe(409);
    expect(json(response).error).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('already exists') });
  });

  it.each([
    ['a missing email', { password: 'long enough' }, 'email'],
    ['a missing password', { email: 'x@example.com' }, 'password'],
    ['an invalid email', { email: 'not-an-email', password: 'long enough' }, 'email'],
    ['a short password', { email: 'x@example.com', password: 'short' }, 'password'],
    ['a password of the wrong type', { email: 'x@example.com', password: 12345678 }, 'password'],
    ['an over-long password', { email: 'x@example.com', password: 'p'.repeat(257) }, 'password'],
    ['an over-long name', { email: 'x@example.com', password: 'long enough', name: 'n'.repeat(101) }, 'name'],
    ['a blank name', { email: 'x@example.com', password: 'long enough', name: '   ' }, 'name'],
    ['an over-long email', { email: `${'e'.repeat(250)}@example.com`, password: 'long enough' }, 'email'],
    ['an unknown field', { email: 'x@example.com', password: 'long enough', role: 'SUPER_ADMIN' }, 'role'],
  ])('refuses %s with 400 naming the field, creating nothing', async (_label, payload, field) => {
    const before = await t.platform.db.$count(users);
    const response = await signup(payload);
    expect(response.statusCode).toBe(400);
    const { error } = json(response);
    expect(error.code).toBe('BAD_REQUEST');
    expect(error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
    expect(error.message).toContain(field);
    expect(await t.platform.db.$count(users)).toBe(before);
  });

  it('refuses malformed JSON, an empty body and a non-JSON content type with clear messages', async () => {
    const malformed = await t.app.inject({ method: 'POST', url: '/v1/auth/signup', payload: '{"email":', headers: { 'content-type': 'application/json' } });
    expect(malformed.statusCode).toBe(400);
    expect(json(malformed).error).toMatchObject({ code: 'BAD_REQUEST', message: 'The request body is not valid JSON.' });

    const empty = await t.app.inject({ method: 'POST', url: '/v1/auth/signup' });
    expect(empty.statusCode).toBe(400);
    expect(json(empty).error.details).toEqual(
      expect.arrayContaining([
        { field: 'email', message: 'is required' },
        { field: 'password', message: 'is required' },
      ]),
    );

    const text = await t.app.inject({ method: 'POST', url: '/v1/auth/signup', payload: 'email=x', headers: { 'content-type': 'text/plain' } });
    expect(text.statusCode).toBe(400);
    expect(json(text).error.message).toContain('application/json');

    const form = await t.app.inject({
      method: 'POST',
      url: '/v1/auth/signup',
      payload: 'a=b',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.statusCode).toBe(400);
    expect(json(form).error.code).toBe('BAD_REQUEST');

    const array = await signup([1, 2]);
    expect(array.statusCode).toBe(400);
  });
});

describe('addresses at storefront.internal (the service’s own accounts)', () => {
  /** Every account in the reserved domain: only the playground's internal one, made at start, may be there. */
  const inReservedDomain = async () =>
    (await t.platform.db.select({ email: users.email, role: users.role, internalKind: users.internalKind }).from(users)).filter((u) =>
      isReservedEmail(u.email),
    );
  const onlyTheInternalAccount = [{ email: PLAYGROUND_IDENTITY_EMAIL, role: 'USER', internalKind: 'PLAYGROUND' }];
  const client = { ip: '203.0.113.9', userAgent: 'squatter' };

  it.each([
    'playground@storefront.internal',
    'PLAYGROUND@STOREFRONT.INTERNAL',
    'Playground@Storefront.Internal',
    'playground+admin@storefront.internal',
    'someone.else@storefront.internal',
    'playground@eu.storefront.internal',
  ])('signing up as %s is refused with 400 and creates nothing', async (email) => {
    const before = await t.platform.db.$count(users);
    const response = await signup({ email, password: 'squatter password', name: 'Squatter' });
    expect(response.statusCode).toBe(400);
    expect(json(response).error).toEqual({
      code: 'BAD_REQUEST',
      message: expect.stringMatching(/storefront\.internal .*Use your own email address/),
      details: { field: 'email' },
    });
    expect(response.cookies.find((c) => c.name === 'rt')).toBeUndefined();
    expect(await t.platform.db.$count(users)).toBe(before);
    expect(await inReservedDomain()).toEqual(onlyTheInternalAccount);
  });

  it.each([
    ['a trailing dot', 'playground@storefront.internal.'],
    ['full-width letters', 'playground@ｓｔｏｒｅｆｒｏｎｔ.internal'],
    ['a full-width at sign and dot', 'playground＠storefront．internal'],
    ['an invisible character', 'playground@storefront\u200b.internal'],
    ['surrounding spaces', '  Playground@storefront.internal  '],
  ])('a spelling with %s is refused over HTTP and by the service itself, creating nothing', async (_label, email) => {
    const before = await t.platform.db.$count(users);
    const response = await signup({ email, password: 'squatter password' });
    expect(response.statusCode).toBe(400);
    expect(json(response).error.code).toBe('BAD_REQUEST');
    // The address normaliser reads the domain as a mail system would, whatever the HTTP schema lets through.
    await expect(t.services.auth.signup({ email, password: 'squatter password' }, client)).rejects.toMatchObject({ statusCode: 400, code: 'BAD_REQUEST' });
    expect(await t.platform.db.$count(users)).toBe(before);
    expect(await inReservedDomain()).toEqual(onlyTheInternalAccount);
  });

  it('operators cannot make an account there either (create-admin in the CLI, ADMIN_EMAIL at start); the internal account stays a USER', async () => {
    const before = await t.platform.db.$count(users);
    const audit = auditWriterFor(t.services.audit, CLI_ACTOR);
    for (const email of [PLAYGROUND_IDENTITY_EMAIL, 'ops@storefront.internal']) {
      await expect(t.services.auth.admin.ensureOperator({ email, password: 'operator password', role: 'SUPER_ADMIN' }, audit)).rejects.toMatchObject({
        statusCode: 400,
        code: 'BAD_REQUEST',
      });
      await expect(t.services.auth.ensureSuperAdmin(email, 'operator password')).rejects.toMatchObject({ statusCode: 400, code: 'BAD_REQUEST' });
    }
    expect(await t.platform.db.$count(users)).toBe(before);
    expect(await inReservedDomain()).toEqual(onlyTheInternalAccount);
  });

  it('an ordinary address that merely mentions the domain is fine', async () => {
    for (const email of [
      `storefront.internal.${Date.now()}@example.com`,
      `x.${Date.now()}@storefront.internal.example.com`,
      `y.${Date.now()}@notstorefront.internal`,
    ]) {
      expect((await signup({ email, password: 'long enough' })).statusCode).toBe(201);
    }
  });
});

describe('data API: publicProfilesOf (authors and profiles for other modules)', () => {
  it('returns the public fields of many users by id in one call, deleted users included with their status', async () => {
    const a = await signUp(t.app, { name: 'Ada' });
    const b = await signUp(t.app, { name: 'Bo' });
    await t.platform.db.update(users).set({ status: 'DELETED' }).where(eq(users.id, b.user.id));
    const found = await t.services.auth.data.users.publicProfilesOf([a.user.id, b.user.id, a.user.id, '01900000-0000-7000-8000-000000000000']);
    expect([...found.keys()].sort()).toEqual([a.user.id, b.user.id].sort());
    expect(found.get(a.user.id)).toEqual({
      id: a.user.id,
      name: 'Ada',
      handle: a.user.handle,
      avatarUrl: null,
      bio: null,
      status: 'ACTIVE',
      createdAt: expect.any(Date),
    });
    expect(found.get(b.user.id)?.status).toBe('DELETED');
    expect(Object.keys(found.get(a.user.id)!)).not.toContain('email');
    expect((await t.services.auth.data.users.publicProfilesOf([])).size).toBe(0);
  });
});
