import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp, type BuiltApp } from '../../app.js';
import { loadConfig } from '../../config.js';
import { bearer, signUp } from '../../../test/helpers/test-app.js';
import { createTestDatabase, openTestDatabase } from '../../../test/helpers/test-database.js';
import { sharedSecret } from './shared-secrets.js';

describe('secrets generated once per database', () => {
  it('gives every caller the same secret, however many ask at once', async () => {
    const { database, close } = await openTestDatabase();
    try {
      const secrets = await Promise.all(Array.from({ length: 10 }, () => sharedSecret(database, 'jwtSecret')));
      expect(new Set(secrets).size).toBe(1);
      expect(secrets[0]!.length).toBeGreaterThanOrEqual(32);
      expect(await sharedSecret(database, 'jwtSecret')).toBe(secrets[0]);
      expect(await sharedSecret(database, 'another')).not.toBe(secrets[0]);
    } finally {
      await close();
    }
  });
});

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
if (!onPostgres) console.log('shared-secrets: the two-instance test runs on PostgreSQL (TEST_DATABASE_URL); the shared-secret logic ran above');
