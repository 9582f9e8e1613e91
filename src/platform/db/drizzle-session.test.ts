import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase } from '../../../test/helpers/test-database.js';
import type { Database } from './database.js';
import { driverClientOf } from './drizzle-session.js';

/**
 * The one private member of a library the service reads (drizzle-session.ts): a Drizzle transaction's `session.client`.
 * An upgrade of drizzle-orm that moves it fails here, with what to re-check. Runs on both databases.
 */
const root = path.join(import.meta.dirname, '../../..');
const json = (file: string) => JSON.parse(readFileSync(path.join(root, file), 'utf8')) as { version: string; dependencies: Record<string, string> };
const REASON = "drizzle-session.ts reads a transaction session's private `client`: re-check it against the new version, then update this test";

let opened: Awaited<ReturnType<typeof openTestDatabase>>;
let database: Database;
beforeAll(async () => {
  opened = await openTestDatabase();
  database = opened.database;
});
afterAll(async () => opened?.close());

describe("Drizzle's private member the service reads", () => {
  it('drizzle-orm is installed at the exact version package.json pins', () => {
    const pin = json('package.json').dependencies['drizzle-orm'];
    expect(pin, `package.json must pin drizzle-orm to an exact version: ${REASON}`).toMatch(/^\d+\.\d+\.\d+$/);
    expect(json('node_modules/drizzle-orm/package.json').version, `the installed drizzle-orm is not the pinned version: ${REASON}`).toBe(pin);
  });

  it("a transaction's session holds the connection the transaction runs on as `client`", async () => {
    const seen = await database.db.transaction(async (tx) => {
      const session = (tx as unknown as { session?: { client?: unknown } }).session;
      expect(session?.client, `PgTransaction#session.client is gone: ${REASON}`).toBeTypeOf('object');
      const client = driverClientOf(tx)!;
      // The same connection: a setting local to the transaction is seen through the client.
      await client.query("select set_config('probe.session', 'tx', true)");
      return (await client.query("select current_setting('probe.session', true) as value")).rows[0];
    });
    expect(seen).toEqual({ value: 'tx' });
  });

  it("a database's client is its public `$client`", () => {
    expect(driverClientOf(database.db)).toBe((database.db as unknown as { $client: unknown }).$client);
  });
});
