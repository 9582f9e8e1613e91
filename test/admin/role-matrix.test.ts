import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, json, setRoleDirectly, signUpAs, type TestApp } from '../helpers/test-app.js';

/**
 * The role matrix of the admin API, read from the OpenAPI document so no admin route is forgotten: every route under
 * /v1/admin declares its roles (`x-roles`); a USER gets 403 FORBIDDEN on all of them, an ADMIN on the SUPER_ADMIN-only
 * ones, and an operator demoted after signing in loses access at once although their token still names the old role.
 */
let t: TestApp;
let routes: Array<{ method: string; path: string; roles: string[] | undefined }>;
const tokens: Record<'USER' | 'ADMIN' | 'SUPER_ADMIN' | 'DEMOTED', string> = { USER: '', ADMIN: '', SUPER_ADMIN: '', DEMOTED: '' };

beforeAll(async () => {
  t = await createTestApp();
  const doc = json(await t.app.inject({ method: 'GET', url: '/openapi.json' }));
  routes = [];
  for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, { 'x-roles'?: string[] }>>)) {
    if (!path.startsWith('/v1/admin')) continue;
    for (const [method, operation] of Object.entries(operations)) routes.push({ method, path, roles: operation['x-roles'] });
  }
  for (const role of ['USER', 'ADMIN', 'SUPER_ADMIN'] as const) tokens[role] = (await signUpAs(t, role)).accessToken;
  const demoted = await signUpAs(t, 'SUPER_ADMIN');
  await setRoleDirectly(t, demoted.user.id, 'USER');
  tokens.DEMOTED = demoted.accessToken;
});
afterAll(async () => t?.close());

const concrete = (path: string) =>
  path.replace(/\{([^}]+)\}/g, (_m, name: string) => (name.toLowerCase().endsWith('id') ? '01900000-0000-7000-8000-000000000000' : 'x'));

async function call(route: { method: string; path: string }, token: string) {
  const response = await t.app.inject({ method: route.method.toUpperCase() as 'GET', url: concrete(route.path), headers: bearer(token) });
  return { route: `${route.method} ${route.path}`, status: response.statusCode, code: json(response).error?.code as string | undefined };
}

describe('admin role matrix', () => {
  it('every admin route declares ADMIN+SUPER_ADMIN or SUPER_ADMIN alone', () => {
    expect(routes.length).toBeGreaterThan(0);
    for (const route of routes) {
      expect({ route: `${route.method} ${route.path}`, roles: [...(route.roles ?? [])].sort() }).toSatisfy(
        ({ roles }: { roles: string[] }) => roles.join() === 'ADMIN,SUPER_ADMIN' || roles.join() === 'SUPER_ADMIN',
      );
    }
  });

  it('a USER gets 403 FORBIDDEN on every admin route', async () => {
    for (const route of routes) expect(await call(route, tokens.USER)).toEqual({ route: `${route.method} ${route.path}`, status: 403, code: 'FORBIDDEN' });
  });

  it('an ADMIN gets 403 on SUPER_ADMIN-only routes and passes the role check on the others', async () => {
    for (const route of routes) {
      const result = await call(route, tokens.ADMIN);
      if (route.roles?.includes('ADMIN')) expect(result.status, result.route).not.toBe(403);
      else expect(result).toEqual({ route: result.route, status: 403, code: 'FORBIDDEN' });
      expect(result.status, result.route).not.toBe(401);
    }
  });

  it('a SUPER_ADMIN passes the role check on every admin route', async () => {
    for (const route of routes) {
      const result = await call(route, tokens.SUPER_ADMIN);
      expect([401, 403], `${result.route} answered ${result.status} ${result.code}`).not.toContain(result.status);
    }
  });

  it('an operator demoted after signing in is refused at once, though the token still says SUPER_ADMIN', async () => {
    for (const route of routes) {
      const result = await call(route, tokens.DEMOTED);
      expect(result.status, result.route).toBe(403);
    }
  });
});
