import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { adminAuditLog } from '../../src/db/schema/audit.js';
import { providerAccounts } from '../../src/db/schema/gateway.js';
import { createSecretBox, SealedSecretError } from '../../src/platform/crypto/sealed.js';
import { startFakeOpenAi, type FakeUpstream } from '../helpers/fake-upstreams.js';
import { providerEnv } from '../helpers/gateway.js';
import { bearer, createTestApp, json, signUp, signUpAs, type TestApp } from '../helpers/test-app.js';

/** Providers and upstream accounts through the admin API, against a fake OpenAI upstream speaking the real wire format. */
let envUpstream: FakeUpstream;
let operatorUpstream: FakeUpstream;
let t: TestApp;
let superAdmin: string;
let admin: string;
const ENCRYPTION_KEY = 'test-encryption-key-that-is-long-enough-0123456789';
const OPERATOR_KEY = 'sk-operator-secret-key-9f3a';

beforeAll(async () => {
  envUpstream = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : { kind: 'ok', text: 'from the env account' }));
  operatorUpstream = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : { kind: 'ok', text: 'from the operator account' }));
  // The operator account's fake upstream listens on loopback over http, which only private networking allows.
  t = await createTestApp({
    env: { ...providerEnv('OPENAI', envUpstream.baseUrl, ['sk-env-key-1111']), SECRETS_ENCRYPTION_KEY: ENCRYPTION_KEY, ALLOW_PRIVATE_NETWORK: 'true' },
  });
  superAdmin = (await signUpAs(t, 'SUPER_ADMIN')).accessToken;
  admin = (await signUpAs(t, 'ADMIN')).accessToken;
});
afterAll(async () => {
  await t?.close();
  await envUpstream?.close();
  await operatorUpstream?.close();
});

const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, token: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(token), ...(payload ? { payload } : {}) });
const auditOf = async (action: string, targetId: string) =>
  t.platform.db
    .select()
    .from(adminAuditLog)
    .where(and(eq(adminAuditLog.action, action), eq(adminAuditLog.targetId, targetId)));

describe('providers', () => {
  it('lists providers with status and health for an ADMIN', async () => {
    const response = await call('GET', '/v1/admin/providers', admin);
    expect(response.statusCode).toBe(200);
    const openai = json(response).items.find((p: { slug: string }) => p.slug === 'openai');
    expect(openai).toMatchObject({ status: 'ACTIVE', health: { accounts: 1, enabled: 1, budgetCents: null } });
    expect(openai.models).toBeGreaterThan(0);
  });

  it('a SUPER_ADMIN disables a provider: its models leave the catalog at once; audited; setting it back restores them', async () => {
    const response = await call('PATCH', '/v1/admin/providers/anthropic', superAdmin, { status: 'DISABLED', reason: 'contract paused' });
    expect(response.statusCode).toBe(200);
    expect(json(response).status).toBe('DISABLED');
    const listed = json(await t.app.inject({ method: 'GET', url: '/v1/models' })).items.map((m: { slug: string }) => m.slug);
    expect(listed.some((slug: string) => slug.startsWith('anthropic/'))).toBe(false);
    const [row] = await auditOf('provider.status.change', json(response).id);
    expect(row).toMatchObject({
      before: { slug: 'anthropic', status: expect.any(String) },
      after: { slug: 'anthropic', status: 'DISABLED' },
      reason: 'contract paused',
    });
    expect((await call('PATCH', '/v1/admin/providers/anthropic', superAdmin, { status: 'INACTIVE' })).statusCode).toBe(200);
  });

  it('answers 400 for an unknown status, 404 for an unknown provider, 403 for an ADMIN', async () => {
    expect((await call('PATCH', '/v1/admin/providers/openai', superAdmin, { status: 'BROKEN' })).statusCode).toBe(400);
    expect((await call('PATCH', '/v1/admin/providers/nope', superAdmin, { status: 'ACTIVE' })).statusCode).toBe(404);
    expect((await call('PATCH', '/v1/admin/providers/openai', admin, { status: 'ACTIVE' })).statusCode).toBe(403);
  });
});

describe('upstream accounts', () => {
  let envAccountId: string;
  let operatorAccountId: string;

  it('adds an account whose key is stored encrypted and never returned (only the last 4 characters)', async () => {
    const response = await call('POST', '/v1/admin/providers/openai/accounts', superAdmin, {
      label: 'operator account',
      apiKey: OPERATOR_KEY,
      baseUrl: operatorUpstream.baseUrl,
      monthlyBudgetCents: 5000,
    });
    expect(response.statusCode).toBe(201);
    const body = json(response);
    operatorAccountId = body.id;
    expect(body).toMatchObject({ source: 'OPERATOR', enabled: true, keyHint: '9f3a', monthlyBudgetCents: 5000, usable: true });
    expect(response.body).not.toContain(OPERATOR_KEY);

    const [row] = await t.platform.db.select().from(providerAccounts).where(eq(providerAccounts.id, operatorAccountId));
    expect(row!.encryptedApiKey).toMatch(/^v1\.[0-9a-f]{8}\./);
    expect(row!.encryptedApiKey).not.toContain(OPERATOR_KEY);
    expect(row!.encryptedApiKey).not.toContain(Buffer.from(OPERATOR_KEY).toString('base64url'));
    expect(row!.encryptedApiKey).not.toContain(ENCRYPTION_KEY);
    expect(createSecretBox(ENCRYPTION_KEY).open(row!.encryptedApiKey!, operatorAccountId)).toBe(OPERATOR_KEY);

    const [audit] = await auditOf('provider.account.create', operatorAccountId);
    expect(audit).toMatchObject({ before: null, after: { id: operatorAccountId, keyHint: '9f3a', source: 'OPERATOR' } });
    expect(JSON.stringify(audit)).not.toContain(OPERATOR_KEY);

    const list = await call('GET', '/v1/admin/providers/openai/accounts', admin);
    expect(list.statusCode).toBe(200);
    expect(list.body).not.toContain(OPERATOR_KEY);
    expect(list.body).not.toContain('sk-env-key-1111');
    envAccountId = json(list).items.find((a: { source: string }) => a.source === 'ENV').id;
  });

  it('a wrong encryption key fails clearly, naming both key ids', () => {
    return (async () => {
      const [row] = await t.platform.db.select().from(providerAccounts).where(eq(providerAccounts.id, operatorAccountId));
      const other = createSecretBox('another-key-that-is-also-long-enough-abcdefghij');
      expect(() => other.open(row!.encryptedApiKey!, operatorAccountId)).toThrow(SealedSecretError);
      expect(() => other.open(row!.encryptedApiKey!, operatorAccountId)).toThrow(
        /encrypted with another key \(key id [0-9a-f]{8}; the configured SECRETS_ENCRYPTION_KEY has id [0-9a-f]{8}\)/,
      );
      // Bound to its row: the same ciphertext does not open for another account.
      expect(() => createSecretBox(ENCRYPTION_KEY).open(row!.encryptedApiKey!, envAccountId)).toThrow(/integrity check/);
    })();
  });

  it('serves a real gateway call with the operator account once the environment account is disabled', async () => {
    const disabled = await call('PATCH', `/v1/admin/providers/openai/accounts/${envAccountId}`, superAdmin, { enabled: false });
    expect(disabled.statusCode).toBe(200);
    expect(json(disabled).enabled).toBe(false);
    const [audit] = await auditOf('provider.account.disable', envAccountId);
    expect(audit).toMatchObject({ before: { enabled: true }, after: { enabled: false } });

    const user = await signUp(t.app);
    const before = envUpstream.calls().length;
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/text',
      headers: bearer(user.accessToken),
      payload: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] },
    });
    expect(response.statusCode).toBe(200);
    expect(json(response).text).toBe('from the operator account');
    expect(operatorUpstream.calls().at(-1)!.apiKey).toBe(OPERATOR_KEY);
    expect(envUpstream.calls().length).toBe(before);
  });

  it('a disabled operator account is not called either: 503 PROVIDER_UNAVAILABLE', async () => {
    expect((await call('PATCH', `/v1/admin/providers/openai/accounts/${operatorAccountId}`, superAdmin, { enabled: false })).statusCode).toBe(200);
    const user = await signUp(t.app);
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/text',
      headers: bearer(user.accessToken),
      payload: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] },
    });
    expect(response.statusCode).toBe(503);
    expect(json(response).error.code).toBe('PROVIDER_UNAVAILABLE');
    expect((await call('PATCH', `/v1/admin/providers/openai/accounts/${envAccountId}`, superAdmin, { enabled: true })).statusCode).toBe(200);
  });

  it('updates an operator account (budget, key) with an audit row; an environment account only switches on or off', async () => {
    const response = await call('PATCH', `/v1/admin/providers/openai/accounts/${operatorAccountId}`, superAdmin, {
      monthlyBudgetCents: 100,
      apiKey: 'sk-rotated-key-7777',
    });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toMatchObject({ monthlyBudgetCents: 100, keyHint: '7777' });
    const [audit] = await auditOf('provider.account.update', operatorAccountId);
    expect(audit).toMatchObject({ before: { monthlyBudgetCents: 5000, keyHint: '9f3a' }, after: { monthlyBudgetCents: 100, keyHint: '7777' } });

    const env = await call('PATCH', `/v1/admin/providers/openai/accounts/${envAccountId}`, superAdmin, { monthlyBudgetCents: 100 });
    expect(env.statusCode).toBe(400);
    expect(json(env).error.message).toMatch(/environment/);
  });

  it('refuses bad input, unknown accounts and a duplicate key; nothing changes', async () => {
    const count = (await t.platform.db.select().from(providerAccounts)).length;
    expect((await call('POST', '/v1/admin/providers/openai/accounts', superAdmin, { label: 'x' })).statusCode).toBe(400);
    expect(
      (await call('POST', '/v1/admin/providers/openai/accounts', superAdmin, { label: 'x', apiKey: 'sk-long-enough', baseUrl: 'ftp://x' })).statusCode,
    ).toBe(400);
    expect((await call('POST', '/v1/admin/providers/openai/accounts', superAdmin, { label: 'x', apiKey: 'sk-long-enough', extra: 1 })).statusCode).toBe(400);
    expect((await call('POST', '/v1/admin/providers/openai/accounts', superAdmin, { label: 'dup', apiKey: 'sk-rotated-key-7777' })).statusCode).toBe(409);
    expect((await call('POST', '/v1/admin/providers/nope/accounts', superAdmin, { label: 'x', apiKey: 'sk-long-enough' })).statusCode).toBe(404);
    expect((await call('POST', '/v1/admin/providers/openai/accounts', admin, { label: 'x', apiKey: 'sk-long-enough' })).statusCode).toBe(403);
    expect((await call('PATCH', '/v1/admin/providers/openai/accounts/01900000-0000-7000-8000-000000000000', superAdmin, { enabled: true })).statusCode).toBe(
      404,
    );
    expect((await call('GET', '/v1/admin/providers/nope/accounts', admin)).statusCode).toBe(404);
    expect((await t.platform.db.select().from(providerAccounts)).length).toBe(count);
  });

  it('deletes an operator account (audited); an environment account cannot be deleted (409)', async () => {
    expect((await call('DELETE', `/v1/admin/providers/openai/accounts/${envAccountId}`, superAdmin)).statusCode).toBe(409);
    const response = await call('DELETE', `/v1/admin/providers/openai/accounts/${operatorAccountId}`, superAdmin);
    expect(response.statusCode).toBe(200);
    const [audit] = await auditOf('provider.account.delete', operatorAccountId);
    expect(audit).toMatchObject({ before: { id: operatorAccountId }, after: null });
    expect((await call('DELETE', `/v1/admin/providers/openai/accounts/${operatorAccountId}`, superAdmin)).statusCode).toBe(404);
  });
});
