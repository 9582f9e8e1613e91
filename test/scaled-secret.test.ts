import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp, type BuiltApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { bearer, signUp } from './helpers/test-app.js';
import { createTestDatabase } from './helpers/test-database.js';

// Two instances on one PostgreSQL database is scaled mode itself; the embedded database has one instance by design.
const onPostgres = Boolean(process.env.TEST_DATABASE_URL);
describe.runIf(onPostgres)('scaled mode without JWT_SECRET (PostgreSQL)', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  async function instance(url: string): Promise<BuiltApp> {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'storefront-instance-'));
    const built = await buildApp(loadConfig({ NODE_ENV: 'test', DATA_DIR: dataDir, DATABASE_URL: url, LOG_LEVEL: 'silent' }), { startJobs: false });
    cleanups.push(async () => {
      await built.app.close();
      await rm(dataDir, { recursive: true, force: true });
    });
    return built;
  }

  it('a token minted by one instance is accepted by another with its own DATA_DIR', async () => {
    const testDb = await createTestDatabase();
    cleanups.push(() => testDb.drop());
    const [a, b] = [await instance(testDb.url!), await instance(testDb.url!)];
    const { accessToken } = await signUp(a.app);
    const me = await b.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(accessToken) });
    expect(me.statusCode).toBe(200);
    expect(a.platform.config.jwtSecret).toBe(b.platform.config.jwtSecret);
  });
});
if (!onPostgres)
  console.log(
    'scaled-secret: two instances on one database is a PostgreSQL test (TEST_DATABASE_URL); src/platform/db/shared-secrets.test.ts covers the logic on every database',
  );
