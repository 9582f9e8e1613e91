import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSync } from 'otplib';
import { bearer, createTestApp, json, signUp, type TestApp } from '../helpers/test-app.js';

/**
 * Authorization checks for every protected route, read from the OpenAPI document, so no route is forgotten:
 * each route declared `auth: required` refuses no token, a garbage token and a two-factor challenge token (401).
 * For the account area, every route must be protected unless it is one of the spec's public ones.
 */
let t: TestApp;
let routes: Array<{ method: string; path: string; secured: boolean }>;
let challengeToken: string;

const PUBLIC_ACCOUNT_ROUTES = new Set([
  'post /v1/account/password/forgot',
  'post /v1/account/password/verify-otp',
  'post /v1/account/password/reset',
  'post /v1/account/verify-email/confirm',
  'post /v1/account/email/confirm',
  'get /v1/account/data-export/{id}/download',
]);

beforeAll(async () => {
  t = await createTestApp();
  const doc = json(await t.app.inject({ method: 'GET', url: '/openapi.json' }));
  routes = [];
  for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, { security?: Array<Record<string, unknown>> }>>)) {
    for (const [method, operation] of Object.entries(operations)) {
      const security = operation.security ?? [];
      // required: bearer and no anonymous alternative ({}); optional-auth routes list {} as well
      const secured = security.length > 0 && security.every((s) => Object.keys(s).length > 0);
      routes.push({ method, path, secured });
    }
  }
  // a real two-factor challenge token
  const { accessToken, email, password } = await signUp(t.app);
  const { secret } = json(await t.app.inject({ method: 'POST', url: '/v1/account/2fa/setup', headers: bearer(accessToken) }));
  const code = generateSync({ secret, epoch: Math.floor(t.clock.now().getTime() / 1000) });
  await t.app.inject({ method: 'POST', url: '/v1/account/2fa/enable', headers: bearer(accessToken), payload: { code } });
  challengeToken = json(await t.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email, password } })).challengeToken;
});
afterAll(async () => t?.close());

const concrete = (path: string) =>
  path.replace(/\{([^}]+)\}/g, (_m, name: string) =>
    name === 'handle' ? 'someone' : name.toLowerCase().endsWith('id') ? '01900000-0000-7000-8000-000000000000' : 'x',
  );

/** The SDK-compatible surfaces answer in their vendor's error shape; everything else in the spec's envelope. */
const SDK_CODES: [string, string][] = [
  ['/openai/', 'invalid_api_key'],
  ['/anthropic/', 'authentication_error'],
  ['/gemini/', 'UNAUTHENTICATED'],
];
const unauthorizedCode = (path: string) => SDK_CODES.find(([prefix]) => path.startsWith(prefix))?.[1] ?? 'UNAUTHORIZED';
/** Google's errors carry the HTTP status as `code` and the name as `status`. */
const codeOf = (error: { code?: unknown; type?: string; status?: string } | undefined) =>
  typeof error?.code === 'number' ? error.status : (error?.code ?? error?.type);

describe('protected routes', () => {
  it("the account area protects every route but the spec's public ones", () => {
    const account = routes.filter((r) => r.path.startsWith('/v1/account/') || r.path.startsWith('/v1/notifications') || r.path === '/v1/users/me');
    expect(account.length).toBeGreaterThan(30);
    const unprotected = account.filter((r) => !r.secured && !PUBLIC_ACCOUNT_ROUTES.has(`${r.method} ${r.path}`));
    expect(unprotected).toEqual([]);
  });

  it("every route that requires auth answers 401 (UNAUTHORIZED, or the SDK surface's own code) without a token, with a garbage token and with a challenge token", async () => {
    const secured = routes.filter((r) => r.secured);
    expect(secured.length).toBeGreaterThan(30);
    for (const route of secured) {
      const url = concrete(route.path);
      const method = route.method.toUpperCase() as 'GET';
      for (const headers of [{}, { authorization: 'Bearer not-a-token' }, bearer(challengeToken)]) {
        const response = await t.app.inject({ method, url, headers });
        const error = json(response).error;
        expect({ route: `${route.method} ${route.path}`, status: response.statusCode, code: codeOf(error) }).toEqual({
          route: `${route.method} ${route.path}`,
          status: 401,
          code: unauthorizedCode(route.path),
        });
      }
    }
  });
});
