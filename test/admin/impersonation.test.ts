import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IMPERSONATION_ALLOWED_ROUTES } from '../../src/platform/auth/impersonation.js';
import { setPlan } from '../helpers/gateway.js';
import { bearer, createTestApp, json, signUp, signUpAs, type TestApp } from '../helpers/test-app.js';

/**
 * An impersonation token (a SUPER_ADMIN acting as a user for 10 minutes) reads what support needs and nothing else:
 * whatever it could create (a webhook, an API key, an invitation, a profile change) would outlive the token.
 */
let t: TestApp;
let user: Awaited<ReturnType<typeof signUp>>;
let impersonation: string;

beforeAll(async () => {
  // Loopback webhook URLs are accepted here, so the refused registration below is refused for the token alone.
  t = await createTestApp({ env: { ALLOW_PRIVATE_NETWORK: 'true' } });
  const superAdmin = await signUpAs(t, 'SUPER_ADMIN');
  user = await signUp(t.app);
  await setPlan(t, user.user.id, 'starter');
  const issued = await t.app.inject({
    method: 'POST',
    url: `/v1/admin/users/${user.user.id}/impersonate`,
    headers: bearer(superAdmin.accessToken),
    payload: { reason: 'support ticket' },
  });
  expect(issued.statusCode).toBe(200);
  impersonation = json(issued).accessToken;
});
afterAll(async () => t?.close());

type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE' | 'HEAD';
const call = (token: string, method: Method, url: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(token), ...(payload ? { payload } : {}) });

const expectRefused = (response: Awaited<ReturnType<typeof call>>, route: string) => {
  expect({ route, status: response.statusCode, code: json(response).error?.code }).toEqual({ route, status: 403, code: 'IMPERSONATION_NOT_ALLOWED' });
  expect(json(response).error.message).toMatch(/impersonation token can only read/);
};

describe('an impersonation token is refused on what would outlive it', () => {
  it("cannot register a webhook that would keep receiving the user's events", async () => {
    const registration = { url: 'http://127.0.0.1:9/hook', events: ['*'] };
    expectRefused(await call(impersonation, 'POST', '/v1/webhooks', registration), 'POST /v1/webhooks');
    expect(json(await call(user.accessToken, 'GET', '/v1/webhooks')).items).toEqual([]);
    // The same registration from the user's own token is accepted: only the token was wrong.
    expect((await call(user.accessToken, 'POST', '/v1/webhooks', registration)).statusCode).toBe(201);
  });

  it("cannot invite anyone into the user's workspace, nor accept an invitation for the user", async () => {
    const workspace = json(await call(user.accessToken, 'POST', '/v1/workspaces', { name: 'Support target' }));
    expectRefused(await call(impersonation, 'POST', `/v1/workspaces/${workspace.id}/invitations`, { email: 'operator@example.com', role: 'ADMIN' }), 'invite');
    expect(json(await call(user.accessToken, 'GET', `/v1/workspaces/${workspace.id}/invitations`)).items).toEqual([]);

    const other = await signUp(t.app);
    const otherWorkspace = json(await call(other.accessToken, 'POST', '/v1/workspaces', { name: 'Elsewhere' }));
    const { token } = json(await call(other.accessToken, 'POST', `/v1/workspaces/${otherWorkspace.id}/invitations`, { email: user.email }));
    expectRefused(await call(impersonation, 'POST', '/v1/workspaces/invitations/accept', { token }), 'accept');
    expect(json(await call(user.accessToken, 'GET', '/v1/workspaces')).items.map((w: { id: string }) => w.id)).toEqual([workspace.id]);
  });

  it('cannot change the profile or the display name', async () => {
    expectRefused(await call(impersonation, 'PATCH', '/v1/account/profile', { bio: 'changed by support' }), 'PATCH /v1/account/profile');
    expectRefused(await call(impersonation, 'PATCH', '/v1/users/me', { name: 'Changed By Support' }), 'PATCH /v1/users/me');
    const me = json(await call(user.accessToken, 'GET', '/v1/users/me')).user;
    expect(me).toMatchObject({ name: 'Test User', bio: null });
  });

  it('cannot create an API key', async () => {
    expectRefused(await call(impersonation, 'POST', '/v1/account/api-keys', { label: 'support', scopes: ['ai:text'] }), 'POST /v1/account/api-keys');
    expect(json(await call(user.accessToken, 'GET', '/v1/account/api-keys')).items).toEqual([]);
    expect((await call(user.accessToken, 'POST', '/v1/account/api-keys', { label: 'mine', scopes: ['ai:text'] })).statusCode).toBe(201);
  });

  it('still reads what support needs, as the user', async () => {
    expect(json(await call(impersonation, 'GET', '/v1/users/me')).user.id).toBe(user.user.id);
    const balance = await call(impersonation, 'GET', '/v1/credits/balance');
    expect(balance.statusCode).toBe(200);
    expect(json(balance).tokens).toBe(json(await call(user.accessToken, 'GET', '/v1/credits/balance')).tokens);
    expect((await call(impersonation, 'GET', '/v1/library/generations')).statusCode).toBe(200);
    expect((await call(impersonation, 'GET', '/v1/usage/summary')).statusCode).toBe(200);
    expect((await call(impersonation, 'HEAD', '/v1/users/me')).statusCode).toBe(200);
  });
});

describe('every route refuses an impersonation token unless it is on the allow-list', () => {
  let routes: Array<{ method: string; path: string; url: string }>;
  beforeAll(async () => {
    const doc = json(await t.app.inject({ method: 'GET', url: '/openapi.json' }));
    routes = [];
    for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, { security?: Array<Record<string, unknown>> }>>)) {
      for (const [method, operation] of Object.entries(operations)) {
        // Routes that read a credential (required or optional auth) list a security scheme; the others ignore tokens.
        if (!(operation.security ?? []).some((scheme) => Object.keys(scheme).length > 0)) continue;
        routes.push({ method: method.toUpperCase(), path: path.replace(/\{([^}]+)\}/g, ':$1'), url: concrete(path) });
      }
    }
  });

  const concrete = (path: string) =>
    path.replace(/\{([^}]+)\}/g, (_m, name: string) =>
      name === 'handle' ? 'someone' : name.toLowerCase().endsWith('id') ? '01900000-0000-7000-8000-000000000000' : 'x',
    );

  it('answers 403 IMPERSONATION_NOT_ALLOWED on every route outside the list, admin and metered routes included', async () => {
    const refusedRoutes = routes.filter((r) => !IMPERSONATION_ALLOWED_ROUTES.has(`${r.method} ${r.path}`));
    expect(refusedRoutes.length).toBeGreaterThan(150);
    for (const route of refusedRoutes) {
      const response = await call(impersonation, route.method as Method, route.url);
      const error = json(response).error;
      // The SDK-compatible surfaces answer in their vendor's error shape, with the same message.
      const vendor = ['/openai/', '/anthropic/', '/gemini/'].some((prefix) => route.path.startsWith(prefix));
      expect({ route: `${route.method} ${route.path}`, status: response.statusCode, code: vendor ? 'IMPERSONATION_NOT_ALLOWED' : error?.code }).toEqual({
        route: `${route.method} ${route.path}`,
        status: 403,
        code: 'IMPERSONATION_NOT_ALLOWED',
      });
      expect(error.message, `${route.method} ${route.path}`).toMatch(/impersonation token can only read/);
    }
  });

  it('lets the listed routes through, and lists only reads of routes that exist', async () => {
    const registered = new Set(routes.map((r) => `${r.method} ${r.path}`));
    for (const entry of IMPERSONATION_ALLOWED_ROUTES) {
      expect(entry.startsWith('GET '), entry).toBe(true);
      expect(registered.has(entry), `${entry} is not a registered route reading a credential`).toBe(true);
    }
    for (const route of routes.filter((r) => IMPERSONATION_ALLOWED_ROUTES.has(`${r.method} ${r.path}`))) {
      const response = await call(impersonation, route.method as Method, route.url);
      expect({ route: route.path, code: json(response).error?.code ?? null }).not.toEqual({ route: route.path, code: 'IMPERSONATION_NOT_ALLOWED' });
      expect([200, 404], route.path).toContain(response.statusCode);
    }
  });
});
