import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { inject } from 'vitest';
import { openDatabase, type Database } from '../../src/platform/db/database.js';
import { adminQuery, testDatabaseUrl, withDatabaseName } from './pg-admin.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Path of the migrated PGlite snapshot (embedded mode). */
    pgliteSnapshot: string | null;
    /** Name of the migrated template database (PostgreSQL mode, TEST_DATABASE_URL). */
    pgTemplate: string | null;
  }
}

export interface TestDatabase {
  /** The opened database (embedded mode) or null when the app should connect to `url` itself. */
  database: Database | null;
  url: string | null;
  drop(): Promise<void>;
}

/**
 * A fresh migrated database for one test file: the PGlite snapshot loaded in memory,
 * or a PostgreSQL database cloned from the migrated template.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const template = inject('pgTemplate');
  const adminUrl = testDatabaseUrl();
  if (template && adminUrl) {
    const name = `sf_test_${randomBytes(6).toString('hex')}`;
    await adminQuery(adminUrl, `CREATE DATABASE ${name} TEMPLATE ${template}`);
    return {
      database: null,
      url: withDatabaseName(adminUrl, name),
      drop: () => adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
    };
  }
  const snapshot = inject('pgliteSnapshot');
  if (!snapshot) throw new Error('global setup did not provide a database snapshot');
  const database = await openDatabase({ loadDataDir: new Blob([await readFile(snapshot)]) });
  return { database, url: null, drop: () => database.close() };
}

/** A fresh migrated database opened directly (no app), for tests of platform mechanisms. */
export async function openTestDatabase(): Promise<{ database: Database; url: string | null; close(): Promise<void> }> {
  const testDb = await createTestDatabase();
  const database = testDb.database ?? (await openDatabase({ url: testDb.url! }));
  return {
    database,
    url: testDb.url,
    async close() {
      if (!testDb.database) await database.close();
      await testDb.drop();
    },
  };
}
