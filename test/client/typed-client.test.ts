import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStorefrontClient, type StorefrontClient } from '../../packages/client/src/index.js';
import { startFakeOpenAi, type FakeUpstream } from '../helpers/fake-upstreams.js';
import { providerEnv, setPlan, walletState } from '../helpers/gateway.js';
import { createTestApp, uniqueEmail, type TestApp } from '../helpers/test-app.js';

/** The typed client (packages/client) against the running service, over real HTTP, as a user's script would use it. */
let fake: FakeUpstream;
let t: TestApp;
let baseUrl: string;

beforeAll(async () => {
  fake = await startFakeOpenAi(() => ({ kind: 'ok', text: 'Lighthouses turn a lamp behind a lens.' }));
  t = await createTestApp({ env: providerEnv('OPENAI', fake.baseUrl, ['sk-typed-client-1']) });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('@storefront/client (generated from docs/openapi.json)', () => {
  it('signs up, creates an API key and generates text through the upstream, with typed answers', async () => {
    const anonymous = createStorefrontClient({ baseUrl: `${baseUrl}/` });
    const email = uniqueEmail('typed');
    const signup = await anonymous.POST('/v1/auth/signup', { body: { email, password: 'correct horse battery', name: 'Typed Client' } });
    expect(signup.response.status).toBe(201);
    expect(signup.error).toBeUndefined();
    const session = signup.data!;
    expect(session.tokenType).toBe('Bearer');
    expect(session.user.email).toBe(email.toLowerCase());
    await setPlan(t, session.user.id, 'starter');

    const account: StorefrontClient = createStorefrontClient({ baseUrl, token: session.accessToken });
    const created = await account.POST('/v1/account/api-keys', { body: { label: 'typed client', scopes: ['ai:text'] } });
    expect(created.response.status).toBe(201);
    const apiKey = created.data!;
    expect(apiKey.key).toMatch(/^sk_sf_/);
    const listed = await account.GET('/v1/account/api-keys');
    expect(listed.data!.items.map((k) => k.id)).toContain(apiKey.id);

    const before = await walletState(t, session.user.id);
    const script = createStorefrontClient({ baseUrl, token: apiKey.key });
    const generated = await script.POST('/v1/ai/text', {
      body: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'How do lighthouses work?' }], maxTokens: 64 },
      params: { header: { 'idempotency-key': `typed-${email}` } },
    });
    expect(generated.response.status, JSON.stringify(generated.error)).toBe(200);
    const answer = generated.data!;
    expect(answer).toMatchObject({ model: 'openai/gpt-4o-mini', text: 'Lighthouses turn a lamp behind a lens.' });
    expect(answer.usage.creditsConsumed).toBeGreaterThan(0);
    expect(fake.calls()).toHaveLength(1);
    const after = await walletState(t, session.user.id);
    expect(after.balance).toBe(before.balance - answer.usage.creditsConsumed);
    expect(after.ledgerSum).toBe(after.balance);
  });

  it('answers the error envelope, typed, for a refused call', async () => {
    const client = createStorefrontClient({ baseUrl, token: 'sk_sf_not_a_key' });
    const { data, error, response } = await client.GET('/v1/account/api-keys');
    expect(response.status).toBe(401);
    expect(data).toBeUndefined();
    expect(error!.error.code).toBe('UNAUTHORIZED');
    expect(error!.error.message).toEqual(expect.any(String));
  });
});
