import { beforeAll, describe, expect, it } from 'vitest';
import type { BuiltApp } from '../src/app.js';
import { auditWriterFor, CLI_ACTOR } from '../src/modules/audit/service.js';
import { createApiKey, setPlan } from './helpers/gateway.js';
import { twoInstances } from './helpers/shared-database.js';
import { bearer, signUp } from './helpers/test-app.js';

/**
 * Two instances on one database, each with its own in-process caches of API keys and open sessions: a revocation on
 * one is refused by the other within a second (announced through LISTEN/NOTIFY), and by the revoking one at once.
 */
const instances = twoInstances('revocation');
let a: BuiltApp;
let b: BuiltApp;
beforeAll(() => {
  ({ a, b } = instances);
});

/** Resolves when `instance` hears the next announcement on the cache channel `name`. */
function announced(on: BuiltApp, name: string): Promise<void> {
  return new Promise((resolve) => {
    void on.platform.events.subscribe(`cache_${name}`, () => resolve());
  });
}

/** Asks `instance` until it answers 401, within `ms`; returns how long that took. */
async function refusedWithin(ask: () => Promise<{ statusCode: number }>, ms: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    const { statusCode } = await ask();
    const elapsed = performance.now() - started;
    if (statusCode === 401) return elapsed;
    if (elapsed > ms) throw new Error(`still answering ${statusCode} after ${Math.round(elapsed)} ms`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('revocations reach every instance', () => {
  it('a revoked API key is refused on the other instance within a second, and on the revoking one at once', async () => {
    const { accessToken, user } = await signUp(a.app);
    await setPlan({ platform: a.platform }, user.id, 'starter');
    const { id, key } = await createApiKey({ app: a.app, platform: a.platform } as never, accessToken, ['ai:text']);
    const call = (on: BuiltApp) => () =>
      on.app.inject({
        method: 'POST',
        url: '/v1/ai/text',
        headers: bearer(key),
        payload: { model: 'local/text', messages: [{ role: 'user', content: 'hi' }], maxTokens: 8 },
      });
    // Both instances have the key in their caches.
    expect((await call(a)()).statusCode).toBe(200);
    expect((await call(b)()).statusCode).toBe(200);

    const heard = announced(b, 'api_keys');
    expect((await a.app.inject({ method: 'DELETE', url: `/v1/account/api-keys/${id}`, headers: bearer(accessToken) })).statusCode).toBe(200);
    expect((await call(a)()).statusCode).toBe(401);
    expect(await refusedWithin(call(b), 1000)).toBeLessThan(1000);
    await heard;
  });

  it("a signed-out session's access tokens stop working on both instances instead of living out their 15 minutes", async () => {
    const { accessToken, refreshToken } = await signUp(a.app);
    const me = (on: BuiltApp) => () => on.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(accessToken) });
    expect((await me(a)()).statusCode).toBe(200);
    expect((await me(b)()).statusCode).toBe(200);

    expect((await a.app.inject({ method: 'POST', url: '/v1/auth/logout', payload: { refreshToken } })).statusCode).toBe(200);
    const refused = await me(a)();
    expect(refused.statusCode).toBe(401);
    expect(refused.json().error.message).toBe('This session was signed out. Sign in again.');
    expect(await refusedWithin(me(b), 1000)).toBeLessThan(1000);
  });

  it("ending another device's session from the account page signs that device out everywhere; the caller stays in", async () => {
    const { email, password } = await signUp(a.app);
    // A session is per device (user agent and address): a second sign-in from the same device reuses it.
    const login = async (userAgent: string) =>
      (await a.app.inject({ method: 'POST', url: '/v1/auth/login', headers: { 'user-agent': userAgent }, payload: { email, password } })).json<{
        accessToken: string;
      }>();
    const laptop = await login('Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0');
    const phone = await login('Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) Mobile/15E148');
    const me = (on: BuiltApp, token: string) => () => on.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(token) });
    expect((await me(b, phone.accessToken)()).statusCode).toBe(200);

    const phoneSession = (JSON.parse(Buffer.from(phone.accessToken.split('.')[1]!, 'base64url').toString()) as { sid: string }).sid;
    const revoked = await a.app.inject({ method: 'DELETE', url: `/v1/account/sessions/${phoneSession}`, headers: bearer(laptop.accessToken) });
    expect(revoked.statusCode, revoked.body).toBeLessThan(300);
    expect(await refusedWithin(me(b, phone.accessToken), 1000)).toBeLessThan(1000);
    expect((await me(a, phone.accessToken)()).statusCode).toBe(401);
    expect((await me(b, laptop.accessToken)()).statusCode).toBe(200);
  });

  it('the cached account behind /v1/users/me follows a change made on the other instance, and a suspension', async () => {
    const { accessToken, user } = await signUp(a.app);
    const me = (on: BuiltApp) => on.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(accessToken) });
    // Both instances now hold the account in their caches.
    expect((await me(a)).json().user.name).not.toBe('Renamed on A');
    expect((await me(b)).statusCode).toBe(200);

    const rename = await a.app.inject({ method: 'PATCH', url: '/v1/users/me', headers: bearer(accessToken), payload: { name: 'Renamed on A' } });
    expect(rename.statusCode).toBe(200);
    expect((await me(a)).json().user.name).toBe('Renamed on A');
    const started = performance.now();
    while ((await me(b)).json().user.name !== 'Renamed on A') {
      expect(performance.now() - started, 'B still shows the old name').toBeLessThan(1000);
      await new Promise((resolve) => setImmediate(resolve));
    }

    // An operator's suspension on A (the audited admin service) refuses the account on B as well.
    await a.services.auth.admin.suspend(CLI_ACTOR, user.id, 'abuse', { ip: null, userAgent: null }, auditWriterFor(a.services.audit, CLI_ACTOR));
    expect(await refusedWithin(() => me(b), 1000)).toBeLessThan(1000);
    expect((await me(a)).statusCode).toBe(401);
  });
});
