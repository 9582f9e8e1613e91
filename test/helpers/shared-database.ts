import { afterAll, beforeAll } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { buildApp, type BuiltApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { ManualClock } from '../../src/platform/clock/clock.js';
import { testEnv } from './test-app.js';
import { createTestDatabase, type TestDatabase } from './test-database.js';

/**
 * One fresh migrated database (and DATA_DIR) for several instances of the service: instances of a scaled deployment
 * side by side, or one that stops and the next that takes over. Each instance opens its own pool on PostgreSQL; on
 * the embedded database they share the one in-process database.
 */
export interface SharedDatabase {
  testDb: TestDatabase;
  dataDir: string;
  clock: ManualClock;
  /** The settings every instance starts with, plus `extra`. */
  env(extra?: Record<string, string>): Record<string, string>;
  instance(options?: { startJobs?: boolean; env?: Record<string, string> }): Promise<BuiltApp>;
  close(): Promise<void>;
}

export async function sharedDatabase(name: string): Promise<SharedDatabase> {
  const testDb = await createTestDatabase();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), `storefront-${name}-`));
  const clock = new ManualClock();
  const env = (extra: Record<string, string> = {}) => testEnv(testDb.url, dataDir, extra);
  return {
    testDb,
    dataDir,
    clock,
    env,
    instance: (options = {}) =>
      buildApp(loadConfig(env(options.env)), { database: testDb.database ?? undefined, clock, startJobs: options.startJobs ?? false }),
    async close() {
      await testDb.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Two instances A and B on one shared database for the tests of the calling file or `describe` (started before them,
 * closed after); read them through the returned object once the tests run.
 */
export function twoInstances(name: string): { readonly a: BuiltApp; readonly b: BuiltApp; readonly shared: SharedDatabase } {
  let shared: SharedDatabase | undefined;
  let a: BuiltApp | undefined;
  let b: BuiltApp | undefined;
  beforeAll(async () => {
    shared = await sharedDatabase(name);
    a = await shared.instance();
    b = await shared.instance();
  });
  afterAll(async () => {
    await a?.app.close();
    await b?.app.close();
    await shared?.close();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('twoInstances: the instances start in beforeAll');
    return value;
  };
  return {
    get a() {
      return started(a);
    },
    get b() {
      return started(b);
    },
    get shared() {
      return started(shared);
    },
  };
}
