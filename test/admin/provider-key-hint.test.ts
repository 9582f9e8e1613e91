import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuditLog } from '../../src/db/schema/audit.js';
import { providerAccounts } from '../../src/db/schema/gateway.js';
import { bearer, createTestApp, json, signUpAs, type TestApp } from '../helpers/test-app.js';

/**
 * A Kling key is an access key and a secret key (`<access key>:<secret key>`): the hint operators see, in answers and
 * in the audit trail, is the end of the access key, never of the secret.
 */
let t: TestApp;
let superAdmin: string;
const ACCESS_KEY = 'ak-public-part-a1b2';
const SECRET_KEY = 'sk-secret-part-z9y8';

beforeAll(async () => {
  t = await createTestApp({ env: { SECRETS_ENCRYPTION_KEY: 'test-encryption-key-that-is-long-enough-0123456789' } });
  superAdmin = (await signUpAs(t, 'SUPER_ADMIN')).accessToken;
});
afterAll(async () => t?.close());

const call = (method: 'POST' | 'PATCH' | 'GET', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(superAdmin), ...(payload ? { payload } : {}) });
const auditAfter = async (action: string, id: string) =>
  (
    await t.platform.db
      .select()
      .from(adminAuditLog)
      .where(and(eq(adminAuditLog.action, action), eq(adminAuditLog.targetId, id)))
  ).map((row) => row.after);

describe("an operator-added Kling account's key hint", () => {
  it('shows the last 4 characters of the access key, in the answer, the list, the row and the audit trail', async () => {
    // Disabled: no credential check goes out to Kling.
    const added = await call('POST', '/v1/admin/providers/kling/accounts', { label: 'kling operator', apiKey: `${ACCESS_KEY}:${SECRET_KEY}`, enabled: false });
    expect(added.statusCode, added.body).toBe(201);
    expect(json(added).keyHint).toBe('a1b2');
    expect(added.body).not.toContain('z9y8');
    const id = json(added).id as string;

    const [row] = await t.platform.db.select({ keyHint: providerAccounts.keyHint }).from(providerAccounts).where(eq(providerAccounts.id, id));
    expect(row!.keyHint).toBe('a1b2');
    const listed = await call('GET', '/v1/admin/providers/kling/accounts');
    expect(listed.body).not.toContain('z9y8');
    expect(await auditAfter('provider.account.create', id)).toMatchObject([{ keyHint: 'a1b2' }]);

    const rotated = await call('PATCH', `/v1/admin/providers/kling/accounts/${id}`, { apiKey: 'ak-rotated-c3d4:sk-rotated-secret-w7v6' });
    expect(rotated.statusCode, rotated.body).toBe(200);
    expect(json(rotated).keyHint).toBe('c3d4');
    expect(JSON.stringify(await auditAfter('provider.account.update', id))).not.toContain('w7v6');
  });

  it('refuses a Kling key without its secret part (400 naming apiKey), as the environment does at start', async () => {
    for (const apiKey of [ACCESS_KEY, `${ACCESS_KEY}:`, `:${SECRET_KEY}`]) {
      const response = await call('POST', '/v1/admin/providers/kling/accounts', { label: 'half a key', apiKey, enabled: false });
      expect({ apiKey, status: response.statusCode }).toEqual({ apiKey, status: 400 });
      expect(json(response).error.details).toEqual({ field: 'apiKey' });
      expect(json(response).error.message).toMatch(/^This key cannot be used with "kling": /);
    }
  });

  it('a single-part key (any other provider) is hinted by its last 4 characters, as before', async () => {
    const added = await call('POST', '/v1/admin/providers/openai/accounts', { label: 'openai operator', apiKey: 'sk-operator-0000-e5f6', enabled: false });
    expect(added.statusCode, added.body).toBe(201);
    expect(json(added).keyHint).toBe('e5f6');
  });
});
