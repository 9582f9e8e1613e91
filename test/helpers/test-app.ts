import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { buildApp, type BuiltApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { ManualClock } from '../../src/platform/clock/clock.js';
import { createTestDatabase } from './test-database.js';
import { eq } from 'drizzle-orm';
import { users } from '../../src/db/schema/auth.js';

export interface TestApp extends BuiltApp {
  clock: ManualClock;
  dataDir: string;
  close(): Promise<void>;
}

export const TEST_JWT_SECRET = 'test-secret-that-is-long-enough-for-hs256-signing';

/** The settings of a service under test: its DATA_DIR, the PostgreSQL database when there is one, and `extra`. */
export const testEnv = (databaseUrl: string | null, dataDir: string, extra: Record<string, string> = {}): Record<string, string> => ({
  NODE_ENV: 'test',
  DATA_DIR: dataDir,
  JWT_SECRET: TEST_JWT_SECRET,
  RATE_LIMIT_PER_MINUTE: '100000',
  LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
  ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  ...extra,
});

/** The whole service on a fresh migrated database, with a clock the test drives. */
export async function createTestApp(options: { env?: Record<string, string>; startJobs?: boolean } = {}): Promise<TestApp> {
  const testDb = await createTestDatabase();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'storefront-test-'));
  const config = loadConfig(testEnv(testDb.url, dataDir, options.env));
  const clock = new ManualClock();
  const built = await buildApp(config, { database: testDb.database ?? undefined, clock, startJobs: options.startJobs ?? false });
  return {
    ...built,
    clock,
    dataDir,
    async close() {
      await built.app.close();
      await testDb.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export const json = <T = any>(response: LightMyRequestResponse): T => response.json<T>();

let counter = 0;
export const uniqueEmail = (prefix = 'user') => `${prefix}.${process.pid}.${Date.now()}.${counter++}@example.com`;

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Signs a new user up through the API and returns the token bundle. */
export async function signUp(app: TestApp['app'], overrides: { email?: string; password?: string; name?: string } = {}) {
  const body = { email: overrides.email ?? uniqueEmail(), password: overrides.password ?? 'correct horse battery', name: overrides.name ?? 'Test User' };
  const response = await app.inject({ method: 'POST', url: '/v1/auth/signup', payload: body });
  if (response.statusCode !== 201) throw new Error(`signup failed: ${response.statusCode} ${response.body}`);
  return { ...json(response), password: body.password, email: body.email.toLowerCase() };
}

/** A fixture's role change, straight in the table (the admin route's audited change is tested on its own). */
export async function setRoleDirectly(t: Pick<TestApp, 'platform'>, userId: string, role: 'USER' | 'ADMIN' | 'SUPER_ADMIN') {
  await t.platform.db.update(users).set({ role }).where(eq(users.id, userId));
}

/** Signs a user up, gives the account `role` and signs in again, so the access token carries the role. */
export async function signUpAs(t: Pick<TestApp, 'app' | 'platform'>, role: 'USER' | 'ADMIN' | 'SUPER_ADMIN') {
  const account = await signUp(t.app);
  await setRoleDirectly(t, account.user.id, role);
  const login = await t.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: account.email, password: account.password } });
  if (login.statusCode !== 200) throw new Error(`login failed: ${login.statusCode} ${login.body}`);
  return { ...account, accessToken: json(login).accessToken as string, refreshToken: json(login).refreshToken as string };
}
