import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { apiKeys } from '../../db/schema/apikeys.js';
import { subscriptions } from '../../db/schema/subscriptions.js';
import { usageRecords } from '../../db/schema/usage.js';
import { HOUR_MS } from '../../platform/clock/clock.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createApiKey, setPlan } from '../../../test/helpers/gateway.js';
import { MAX_ACTIVE_KEYS } from './service.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

const list = (token: string) => t.app.inject({ method: 'GET', url: '/v1/account/api-keys', headers: bearer(token) });
const create = (token: string, payload: unknown) =>
  t.app.inject({ method: 'POST', url: '/v1/account/api-keys', headers: bearer(token), payload: payload as object });
const revoke = (token: string, id: string) => t.app.inject({ method: 'DELETE', url: `/v1/account/api-keys/${id}`, headers: bearer(token) });
const text = (credential: string) =>
  t.app.inject({
    method: 'POST',
    url: '/v1/ai/text',
    headers: bearer(credential),
    payload: { model: 'local/text', messages: [{ role: 'user', content: 'hello' }], maxTokens: 16 },
  });

/** A user on a plan with API access. */
async function apiUser() {
  const signed = await signUp(t.app);
  await setPlan(t, signed.user.id, 'starter');
  return signed;
}

describe('API key management', () => {
  it('creates a key shown once with the service prefix, stores only its hash, and lists it without the secret', async () => {
    const { accessToken, user } = await apiUser();
    const response = await create(accessToken, { label: '  CI server  ', scopes: ['jobs:read', 'ai:text', 'ai:text'] });
    expect(response.statusCode).toBe(201);
    const created = json(response);
    expect(created).toEqual({
      id: expect.any(String),
      label: 'CI server',
      keyPrefix: created.key.slice(-4),
      scopes: 'ai:text,jobs:read',
      expiresAt: null,
      createdAt: expect.any(String),
      budget: null,
      rateLimit: null,
      allowedModels: null,
      key: expect.stringMatching(/^sk_sf_[A-Za-z0-9_-]{43}$/),
    });

    const [row] = await t.platform.db.select().from(apiKeys).where(eq(apiKeys.id, created.id));
    expect(row!.keyHash).toBe(createHash('sha256').update(created.key).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(created.key);
    expect(row!.userId).toBe(user.id);

    const listed = json(await list(accessToken));
    expect(listed).toEqual({
      items: [
        {
          id: created.id,
          label: 'CI server',
          keyPrefix: created.keyPrefix,
          scopes: 'ai:text,jobs:read',
          lastUsedAt: null,
          expiresAt: null,
          createdAt: created.createdAt,
          budget: null,
          rateLimit: null,
          allowedModels: null,
        },
      ],
    });
  });

  it("lists newest first and only the caller's own keys", async () => {
    const a = await apiUser();
    const b = await apiUser();
    const first = await createApiKey(t, a.accessToken, ['ai:text']);
    t.clock.advance(1000);
    const second = await createApiKey(t, a.accessToken, ['ai:image']);
    await createApiKey(t, b.accessToken, ['ai:text']);
    expect(json(await list(a.accessToken)).items.map((k: { id: string }) => k.id)).toEqual([second.id, first.id]);
  });

  it('revokes a key softly: it stops working, leaves the list, and cannot be revoked twice', async () => {
    const { accessToken } = await apiUser();
    const key = await createApiKey(t, accessToken, ['ai:text']);
    expect((await text(key.key)).statusCode).toBe(200);
    const response = await revoke(accessToken, key.id);
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ ok: true });
    const [row] = await t.platform.db.select().from(apiKeys).where(eq(apiKeys.id, key.id));
    expect(row!.revokedAt).toBeInstanceOf(Date);
    expect(json(await list(accessToken)).items).toEqual([]);
    const use = await text(key.key);
    expect(use.statusCode).toBe(401);
    expect(json(use).error).toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringContaining('revoked') });
    expect((await revoke(accessToken, key.id)).statusCode).toBe(404);
  });

  it("answers 404 for another user's key and for an unknown id, and 400 for a malformed id", async () => {
    const owner = await apiUser();
    const stranger = await apiUser();
    const key = await createApiKey(t, owner.accessToken, ['ai:text']);
    expect((await revoke(stranger.accessToken, key.id)).statusCode).toBe(404);
    expect((await text(key.key)).statusCode).toBe(200);
    expect((await revoke(owner.accessToken, '01950000-0000-7000-8000-000000000000')).statusCode).toBe(404);
    const malformed = await revoke(owner.accessToken, 'not-an-id');
    expect(malformed.statusCode).toBe(400);
  });

  it('needs a plan with apiAccess (403 FORBIDDEN) for every management route, and a plan at all', async () => {
    const free = await signUp(t.app);
    for (const response of [
      await list(free.accessToken),
      await create(free.accessToken, { label: 'x', scopes: ['ai:text'] }),
      await revoke(free.accessToken, '01950000-0000-7000-8000-000000000000'),
    ]) {
      expect(response.statusCode).toBe(403);
      expect(json(response).error).toMatchObject({ code: 'FORBIDDEN', message: expect.stringContaining('API access') });
    }
    expect(await t.platform.db.$count(apiKeys, eq(apiKeys.userId, free.user.id))).toBe(0);

    await t.platform.db.update(subscriptions).set({ status: 'EXPIRED' }).where(eq(subscriptions.userId, free.user.id));
    const none = await list(free.accessToken);
    expect(none.statusCode).toBe(403);
    expect(json(none).error.code).toBe('NO_ACTIVE_SUBSCRIPTION');
  });

  it('answers 401 without a token and refuses API keys on management routes', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/v1/account/api-keys' })).statusCode).toBe(401);
    expect((await t.app.inject({ method: 'POST', url: '/v1/account/api-keys', payload: { label: 'x', scopes: ['ai:text'] } })).statusCode).toBe(401);
    expect((await t.app.inject({ method: 'DELETE', url: '/v1/account/api-keys/01950000-0000-7000-8000-000000000000' })).statusCode).toBe(401);
    const { accessToken } = await apiUser();
    const key = await createApiKey(t, accessToken, ['ai:text', 'jobs:read', 'jobs:write']);
    for (const [method, url] of [
      ['GET', '/v1/account/api-keys'],
      ['GET', '/v1/users/me'],
      ['POST', '/v1/account/api-keys'],
    ] as const) {
      const response = await t.app.inject({
        method,
        url,
        headers: bearer(key.key),
        payload: method === 'POST' ? { label: 'y', scopes: ['ai:text'] } : undefined,
      });
      expect(response.statusCode).toBe(401);
      expect(json(response).error.message).toMatch(/API keys are accepted only on \/v1\/ai/);
    }
  });

  it('refuses an expiry in the past and expires keys on time', async () => {
    const { accessToken } = await apiUser();
    const past = await create(accessToken, { label: 'old', scopes: ['ai:text'], expiresAt: new Date(t.clock.now().getTime() - 1000).toISOString() });
    expect(past.statusCode).toBe(400);
    expect(json(past).error.message).toMatch(/future/);

    const expiresAt = new Date(t.clock.now().getTime() + HOUR_MS).toISOString();
    const key = await createApiKey(t, accessToken, ['ai:text'], { expiresAt });
    expect(json(await list(accessToken)).items[0].expiresAt).toBe(expiresAt);
    expect((await text(key.key)).statusCode).toBe(200);
    t.clock.advance(HOUR_MS + 1000);
    const expired = await text(key.key);
    expect(expired.statusCode).toBe(401);
    expect(json(expired).error.message).toMatch(/expired/);
  });

  it(`caps a user at ${MAX_ACTIVE_KEYS} active keys`, async () => {
    const { accessToken } = await apiUser();
    for (let i = 0; i < MAX_ACTIVE_KEYS; i++) await createApiKey(t, accessToken, ['ai:text']);
    const over = await create(accessToken, { label: 'one too many', scopes: ['ai:text'] });
    expect(over.statusCode).toBe(400);
    expect(json(over).error.message).toMatch(/Revoke one/);
    const first = json(await list(accessToken)).items.at(-1);
    await revoke(accessToken, first.id);
    expect((await create(accessToken, { label: 'now it fits', scopes: ['ai:text'] })).statusCode).toBe(201);
  });

  it.each([
    ['a missing label', { scopes: ['ai:text'] }, 'label'],
    ['an empty label', { label: '', scopes: ['ai:text'] }, 'label'],
    ['a blank label', { label: '   ', scopes: ['ai:text'] }, 'label'],
    ['an over-long label', { label: 'l'.repeat(81), scopes: ['ai:text'] }, 'label'],
    ['missing scopes', { label: 'x' }, 'scopes'],
    ['no scopes', { label: 'x', scopes: [] }, 'scopes'],
    ['an unknown scope', { label: 'x', scopes: ['admin:all'] }, 'scopes.0'],
    ['scopes as a number', { label: 'x', scopes: 7 }, 'scopes'],
    ['an invalid expiry', { label: 'x', scopes: ['ai:text'], expiresAt: 'tomorrow' }, 'expiresAt'],
    ['an unknown field', { label: 'x', scopes: ['ai:text'], userId: 'someone' }, 'userId'],
  ])('refuses %s with 400 naming the field, creating nothing', async (_label, payload, field) => {
    const { accessToken, user } = await apiUser();
    const response = await create(accessToken, payload);
    expect(response.statusCode).toBe(400);
    expect(json(response).error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
    expect(await t.platform.db.$count(apiKeys, eq(apiKeys.userId, user.id))).toBe(0);
  });
});

describe('API keys on the gateway', () => {
  it('work as Bearer on /v1/ai/* and stamp lastUsedAt on every use', async () => {
    const { accessToken, user } = await apiUser();
    const key = await createApiKey(t, accessToken, ['ai:text']);
    const response = await text(key.key);
    expect(response.statusCode).toBe(200);
    const firstUse = json(await list(accessToken)).items[0].lastUsedAt;
    expect(firstUse).toBe(t.clock.now().toISOString());
    t.clock.advance(60_000);
    expect(
      (await t.app.inject({ method: 'POST', url: '/v1/ai/enhance/prompt', headers: bearer(key.key), payload: { model: 'local/vision', prompt: 'a cat' } }))
        .statusCode,
    ).toBe(200);
    expect(json(await list(accessToken)).items[0].lastUsedAt).toBe(t.clock.now().toISOString());
    // The usage records name the key that made the call.
    const rows = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, user.id));
    expect(rows).toHaveLength(2);
    expect(rows.map((r) => (r.metadata as { apiKeyId?: string }).apiKeyId)).toEqual([key.id, key.id]);
  });

  it('answer 403 naming the missing scope', async () => {
    const { accessToken } = await apiUser();
    const key = await createApiKey(t, accessToken, ['jobs:read', 'ai:image']);
    const response = await text(key.key);
    expect(response.statusCode).toBe(403);
    expect(json(response).error).toMatchObject({ code: 'FORBIDDEN', message: expect.stringContaining('"ai:text"'), details: { requiredScope: 'ai:text' } });
    const enhance = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/enhance/prompt',
      headers: bearer(key.key),
      payload: { model: 'local/vision', prompt: 'a cat' },
    });
    expect(enhance.statusCode).toBe(403);
  });

  it('answer 401 for an unknown key', async () => {
    const response = await text('sk_sf_this-key-does-not-exist-anywhere-at-all-000');
    expect(response.statusCode).toBe(401);
    expect(json(response).error.message).toMatch(/not valid/);
  });

  it('stop working when the plan loses API access (403) and access tokens still work', async () => {
    const { accessToken, user } = await apiUser();
    const key = await createApiKey(t, accessToken, ['ai:text']);
    await setPlan(t, user.id, 'free');
    const response = await text(key.key);
    expect(response.statusCode).toBe(403);
    expect(json(response).error).toMatchObject({ code: 'FORBIDDEN', message: expect.stringContaining('API access') });
    expect((await text(accessToken)).statusCode).toBe(200);
  });

  it('are revoked when the account is deleted', async () => {
    const signed = await apiUser();
    const key = await createApiKey(t, signed.accessToken, ['ai:text']);
    const deleted = await t.app.inject({
      method: 'POST',
      url: '/v1/account/delete',
      headers: bearer(signed.accessToken),
      payload: { password: signed.password },
    });
    expect(deleted.statusCode).toBe(200);
    const [row] = await t.platform.db.select().from(apiKeys).where(eq(apiKeys.id, key.id));
    expect(row!.revokedAt).toBeInstanceOf(Date);
    expect((await text(key.key)).statusCode).toBe(401);
  });
});
