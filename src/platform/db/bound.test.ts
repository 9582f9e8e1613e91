import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase } from '../../../test/helpers/test-database.js';
import { bound, runBound, shiftPlaceholders } from './bound.js';
import type { Database } from './database.js';

let opened: Awaited<ReturnType<typeof openTestDatabase>>;
let database: Database;

beforeAll(async () => {
  opened = await openTestDatabase();
  database = opened.database;
});
afterAll(async () => opened?.close());

const setting = async (options: { asyncCommit?: boolean }) =>
  (await runBound<{ value: string }>(database.db, bound('select current_setting($1) as value', ['synchronous_commit']), options)).rows[0]!.value;

describe('runBound', () => {
  it('runs the same text with new values each time, in one round trip', async () => {
    const before = database.statementCount();
    for (const n of [1, 2, 3]) expect((await runBound<{ twice: number }>(database.db, bound('select $1::int * 2 as twice', [n]))).rows[0]!.twice).toBe(n * 2);
    expect(database.statementCount() - before).toBe(3);
  });

  it('sends an asyncCommit statement through connections that do not wait for the WAL flush on PostgreSQL only', async () => {
    const usual = await setting({});
    expect(await setting({ asyncCommit: true })).toBe(database.kind === 'pg' ? 'off' : usual);
  });

  it('plans the named (bound) statements once per connection on PostgreSQL', async () => {
    const mode = (await runBound<{ value: string }>(database.db, bound('select current_setting($1) as value', ['plan_cache_mode']))).rows[0]!.value;
    expect(mode).toBe(database.kind === 'pg' ? 'force_generic_plan' : 'auto');
  });

  it('runs on the connection of an open transaction, whatever asyncCommit says', async () => {
    await database.db.transaction(async (tx) => {
      await runBound(tx, bound("select set_config('storefront.probe', $1, true)", ['inside']));
      const seen = await runBound<{ value: string }>(tx, bound("select current_setting('storefront.probe', true) as value", []), { asyncCommit: true });
      expect(seen.rows[0]!.value).toBe('inside');
    });
  });
});

describe('shiftPlaceholders', () => {
  it('moves every placeholder by the offset, two-digit ones included', () => {
    expect(shiftPlaceholders('select $1, $2, $10', 3)).toBe('select $4, $5, $13');
    expect(shiftPlaceholders('select $1', 0)).toBe('select $1');
  });
});
