import { afterEach, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { users } from '../src/db/schema/auth.js';
import { createTestApp, json, signUp, type TestApp } from './helpers/test-app.js';

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('ADMIN_EMAIL + ADMIN_PASSWORD at start', () => {
  it('creates the SUPER_ADMIN, who can sign in with that password', async () => {
    t = await createTestApp({ env: { ADMIN_EMAIL: 'Ops@Example.com', ADMIN_PASSWORD: 'operator password' } });
    const response = await t.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: 'ops@example.com', password: 'operator password' } });
    expect(response.statusCode).toBe(200);
    expect(json(response).user).toMatchObject({ email: 'ops@example.com', role: 'SUPER_ADMIN' });
  });

  it('promotes an existing account without touching its password, and is idempotent', async () => {
    t = await createTestApp();
    const existing = await signUp(t.app, { email: 'boss@example.com', password: 'users own password' });
    expect(await t.services.auth.ensureSuperAdmin('boss@example.com', 'ignored password')).toBe('promoted');
    expect(await t.services.auth.ensureSuperAdmin('boss@example.com', 'ignored password')).toBe('unchanged');
    const [row] = await t.platform.db.select().from(users).where(eq(users.id, existing.user.id));
    expect(row!.role).toBe('SUPER_ADMIN');
    const login = await t.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: 'boss@example.com', password: 'users own password' } });
    expect(login.statusCode).toBe(200);
  });
});

describe('production mode', () => {
  it('marks the rt cookie Secure', async () => {
    t = await createTestApp({ env: { NODE_ENV: 'production', METRICS_TOKEN: 'a-metrics-token-for-tests' } });
    const response = await t.app.inject({ method: 'POST', url: '/v1/auth/signup', payload: { email: 'prod@example.com', password: 'long enough' } });
    expect(response.statusCode).toBe(201);
    expect(response.cookies.find((c) => c.name === 'rt')).toMatchObject({ secure: true, httpOnly: true, sameSite: 'Lax', path: '/v1/auth' });
  });
});
