import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuditLog } from '../../src/db/schema/audit.js';
import { providerAccounts } from '../../src/db/schema/gateway.js';
import { createSecretBox } from '../../src/platform/crypto/sealed.js';
import { startFakeOpenAi, type FakeUpstream } from '../helpers/fake-upstreams.js';
import { bearer, createTestApp, json, signUp, signUpAs, type TestApp } from '../helpers/test-app.js';

/**
 * Where an upstream account's key is sent. An operator's base URL passes the outbound policy when it is saved and when
 * the OpenAI-compatible client connects, and a stored key never follows a new base URL: the key must come with it.
 * Fake OpenAI upstreams on loopback play the account's real host and the host an attacker would move the key to.
 */
let home: FakeUpstream;
let attacker: FakeUpstream;
let next: FakeUpstream;
/** ALLOW_PRIVATE_NETWORK=true: the fakes on loopback are reachable, over http. */
let open: TestApp;
/** Production's default: public https hosts only. */
let strict: TestApp;
const tokens = new Map<TestApp, string>();
const KEY = 'sk-operator-home-key-4a1c';
const ENCRYPTION_KEY = 'test-encryption-key-that-is-long-enough-0123456789';

beforeAll(async () => {
  const upstream = (name: string) => startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : { kind: 'ok', text: `from ${name}` }));
  [home, attacker, next] = await Promise.all([upstream('home'), upstream('attacker'), upstream('next')]);
  const encryption = { SECRETS_ENCRYPTION_KEY: ENCRYPTION_KEY };
  open = await createTestApp({ env: { ...encryption, ALLOW_PRIVATE_NETWORK: 'true' } });
  strict = await createTestApp({ env: encryption });
  for (const t of [open, strict]) tokens.set(t, (await signUpAs(t, 'SUPER_ADMIN')).accessToken);
});
afterAll(async () => {
  await Promise.all([open?.close(), strict?.close(), home?.close(), attacker?.close(), next?.close()]);
});

const call = (t: TestApp, method: 'POST' | 'PATCH', url: string, payload: object) => t.app.inject({ method, url, headers: bearer(tokens.get(t)!), payload });
const rowOf = async (t: TestApp, id: string) => (await t.platform.db.select().from(providerAccounts).where(eq(providerAccounts.id, id)))[0]!;
/** Where the account's key goes and which key it is (spend is flushed to the row in the background, so not the whole row). */
const destinationOf = async (t: TestApp, id: string) => {
  const { baseUrl, encryptedApiKey, keyHint, keyFingerprint, label, enabled } = await rowOf(t, id);
  return { baseUrl, encryptedApiKey, keyHint, keyFingerprint, label, enabled };
};
const updatesAudited = async (t: TestApp, id: string) =>
  (
    await t.platform.db
      .select()
      .from(adminAuditLog)
      .where(and(eq(adminAuditLog.action, 'provider.account.update'), eq(adminAuditLog.targetId, id)))
  ).length;

/** A real metered text call by a new user; returns the answer. */
async function generate(t: TestApp) {
  const user = await signUp(t.app);
  return t.app.inject({
    method: 'POST',
    url: '/v1/ai/text',
    headers: bearer(user.accessToken),
    payload: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] },
  });
}

async function addAccount(t: TestApp, baseUrl: string, apiKey = KEY): Promise<string> {
  const response = await call(t, 'POST', '/v1/admin/providers/openai/accounts', { label: 'operator account', apiKey, baseUrl });
  expect(response.statusCode, response.body).toBe(201);
  return json(response).id;
}

describe('a stored key cannot be redirected', () => {
  let accountId: string;

  beforeAll(async () => {
    accountId = await addAccount(open, home.baseUrl);
  });

  it('PATCH of baseUrl without the key is refused naming apiKey; the account is unchanged and the key still goes to its host', async () => {
    const before = await destinationOf(open, accountId);
    for (const payload of [{ baseUrl: attacker.baseUrl }, { baseUrl: attacker.baseUrl, label: 'moved' }, { baseUrl: null }]) {
      const response = await call(open, 'PATCH', `/v1/admin/providers/openai/accounts/${accountId}`, payload);
      expect({ payload, status: response.statusCode, code: json(response).error.code }).toEqual({ payload, status: 400, code: 'BAD_REQUEST' });
      expect(json(response).error.message).toBe(
        "Changing baseUrl sends the account's key to a new address, so the key must be entered again: send apiKey with baseUrl in the same request.",
      );
      expect(json(response).error.details).toEqual({ field: 'apiKey', requiredWith: 'baseUrl' });
    }
    expect(await destinationOf(open, accountId)).toEqual(before);
    expect(await updatesAudited(open, accountId)).toBe(0);

    const answer = await generate(open);
    expect(answer.statusCode).toBe(200);
    expect(json(answer).text).toBe('from home');
    expect(home.calls().at(-1)!.apiKey).toBe(KEY);
    expect(attacker.requests).toEqual([]);
  });

  it('PATCH to a cloud metadata address is refused even with the key and private networking allowed; neither URL nor key change', async () => {
    const before = await destinationOf(open, accountId);
    for (const baseUrl of [
      'http://169.254.169.254/',
      'http://169.254.169.254/latest/meta-data/iam/',
      'https://[fd00:ec2::254]/v1',
      'http://[::ffff:169.254.169.254]/',
    ]) {
      const response = await call(open, 'PATCH', `/v1/admin/providers/openai/accounts/${accountId}`, { baseUrl, apiKey: 'sk-attacker-new-key-0000' });
      expect({ baseUrl, status: response.statusCode }).toEqual({ baseUrl, status: 400 });
      expect(json(response).error.message).toMatch(/^baseUrl points to \S+, a cloud metadata service: the account's key is never sent there\.$/);
      expect(json(response).error.details).toMatchObject({ field: 'baseUrl', reason: 'ADDRESS_NOT_ALLOWED', kind: 'metadata' });
    }
    // Plain http to a public host would carry the key in clear: refused too.
    const clear = await call(open, 'PATCH', `/v1/admin/providers/openai/accounts/${accountId}`, {
      baseUrl: 'http://93.184.216.34/v1',
      apiKey: 'sk-attacker-new-key-0000',
    });
    expect(clear.statusCode).toBe(400);
    expect(json(clear).error.message).toMatch(/^baseUrl must use https .*93\.184\.216\.34 is a public address/);
    expect(await destinationOf(open, accountId)).toEqual(before);
    expect(await updatesAudited(open, accountId)).toBe(0);
  });

  it('a legitimate change with the key works: audited, and calls go to the new host with the new key', async () => {
    const served = home.calls().length;
    const response = await call(open, 'PATCH', `/v1/admin/providers/openai/accounts/${accountId}`, {
      baseUrl: next.baseUrl,
      apiKey: 'sk-operator-next-key-7b2d',
    });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toMatchObject({ baseUrl: next.baseUrl, keyHint: '7b2d' });
    expect(await updatesAudited(open, accountId)).toBe(1);

    const answer = await generate(open);
    expect(json(answer).text).toBe('from next');
    expect(next.calls().at(-1)!.apiKey).toBe('sk-operator-next-key-7b2d');
    expect(home.calls().length).toBe(served);
    expect(attacker.requests).toEqual([]);
  });
});

describe('without private networking', () => {
  it('refuses to create an account on loopback, private or link-local hosts, or over plain http; nothing is stored', async () => {
    const count = (await strict.platform.db.select().from(providerAccounts)).length;
    const cases: Array<[string, RegExp]> = [
      [home.baseUrl, /^baseUrl must use https/],
      [
        home.baseUrl.replace('http:', 'https:'),
        /^baseUrl points to 127\.0\.0\.1, a loopback address: the account's key is sent to public internet addresses only\. For a server on your own network, set <PROVIDER>_BASE_URL/,
      ],
      ['https://localhost:8000/v1', /a loopback address/],
      ['https://10.0.0.5/v1', /^baseUrl points to 10\.0\.0\.5, a private address/],
      ['https://169.254.10.1/v1', /a link-local address/],
      ['https://169.254.169.254/', /a cloud metadata service/],
      ['http://93.184.216.34/v1', /^baseUrl must use https/],
      ['ftp://93.184.216.34/v1', /^baseUrl must be an http\(s\) URL without credentials/],
      ['https://user:pw@93.184.216.34/v1', /^baseUrl must be an http\(s\) URL without credentials/],
    ];
    for (const [baseUrl, message] of cases) {
      const response = await call(strict, 'POST', '/v1/admin/providers/openai/accounts', { label: 'x', apiKey: 'sk-long-enough-key', baseUrl });
      expect({ baseUrl, status: response.statusCode }).toEqual({ baseUrl, status: 400 });
      expect(json(response).error.message).toMatch(message);
    }
    expect((await strict.platform.db.select().from(providerAccounts)).length).toBe(count);
    expect(home.requests.filter((r) => r.apiKey === 'sk-long-enough-key')).toEqual([]);
  });

  it('checks the address again when the client connects: a stored host that now points inside is not called', async () => {
    // Saved while its host was public; the row is then pointed at loopback, as a re-pointed name (or a row stored
    // before this check) would be.
    const movedKey = 'sk-operator-moved-key-9d0e';
    const moved = await addAccount(strict, 'https://93.184.216.34/v1', movedKey);
    const cases: Array<[string, RegExp]> = [
      [home.baseUrl, /plain http is not allowed/],
      // A name: refused by the lookup the connection makes, not by anything known before it.
      [home.baseUrl.replace('http://127.0.0.1', 'https://localhost'), /(127\.0\.0\.1|::1) \(loopback\) of "localhost" is not allowed/],
    ];
    for (const [baseUrl, why] of cases) {
      // Sealed afresh, as every change of baseUrl through the API is (the key comes with it), so the pool opens it again.
      const encryptedApiKey = createSecretBox(ENCRYPTION_KEY).seal(movedKey, moved);
      await strict.platform.db.update(providerAccounts).set({ baseUrl, encryptedApiKey }).where(eq(providerAccounts.id, moved));
      strict.services.gateway.pool.refresh('openai');
      const before = home.requests.length;
      const answer = await generate(strict);
      expect(answer.statusCode).toBeGreaterThanOrEqual(500);
      expect(home.requests.length).toBe(before);
      const row = await rowOf(strict, moved);
      expect({ baseUrl, code: row.lastErrorCode }).toEqual({ baseUrl, code: 'address_not_allowed' });
      expect(row.lastErrorMessage).toMatch(/^The provider's base URL cannot be used: /);
      expect(row.lastErrorMessage).toMatch(why);
    }
    expect(home.requests.filter((r) => r.apiKey === movedKey)).toEqual([]);
  });
});
