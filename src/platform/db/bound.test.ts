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

const setting = async (options: { asyncCommit?: boolean; group?: string }) =>
  (await runBound<{ value: string }>(database.db, bound('select current_setting($1) as value', ['synchronous_commit']), options)).rows[0]!.value;

describe('runBound', () => {
  it('runs the same text with new values each time, in one round trip', async () => {
    const before = database.statementCounts().statements;
    for (const n of [1, 2, 3]) expect((await runBound<{ twice: number }>(database.db, bound('select $1::int * 2 as twice', [n]))).rows[0]!.twice).toBe(n * 2);
    expect(database.statementCounts().statements - before).toBe(3);
  });

  it('sends an asyncCommit statement through connections that do not wait for the WAL flush on PostgreSQL only', async () => {
    const usual = await setting({});
    expect(await setting({ asyncCommit: true })).toBe(database.kind === 'pg' ? 'off' : usual);
    // Grouped (group commit) too, alone or with others of their kind; a group with any other statement commits as that
    // one must, waiting for the flush.
    const grouped = await Promise.all([setting({ asyncCommit: true, group: 'a' }), setting({ asyncCommit: true, group: 'b' })]);
    expect(grouped).toEqual(database.kind === 'pg' ? ['off', 'off'] : [usual, usual]);
    const mixed = await Promise.all([setting({ asyncCommit: true, group: 'a' }), setting({ group: 'b' })]);
    expect(mixed).toEqual([usual, usual]);
  });

  it('leaves plans to PostgreSQL: list statements with their values, a named key lookup generic after five runs', async () => {
    const mode = (await runBound<{ value: string }>(database.db, bound('select current_setting($1) as value', ['plan_cache_mode']))).rows[0]!.value;
    expect(mode).toBe('auto');
    if (database.kind !== 'pg') return;
    const lookup = 'select id from users where id = $1::uuid';
    const plans = await database.db.transaction(async (tx) => {
      for (let run = 0; run < 7; run++) await runBound(tx, bound(lookup, ['00000000-0000-7000-8000-000000000000']));
      return runBound<{ generic: string; custom: string }>(
        tx,
        bound('select generic_plans as generic, custom_plans as custom from pg_prepared_statements where statement = $1', [lookup]),
      );
    });
    expect(plans.rows).toEqual([{ generic: '2', custom: '5' }]);
  });

  it('runs on the connection of an open transaction, whatever asyncCommit says', async () => {
    await database.db.transaction(async (tx) => {
      await runBound(tx, bound("select set_config('storefront.probe', $1, true)", ['inside']));
      const seen = await runBound<{ value: string }>(tx, bound("select current_setting('storefront.probe', true) as value", []), { asyncCommit: true });
      expect(seen.rows[0]!.value).toBe('inside');
    });
  });
});

describe('runBound as a prepared statement (pg per connection, PGlite per database)', () => {
  beforeAll(async () => {
    await database.exec(`create table bound_probe (id int primary key, doc jsonb, at timestamptz, n bigint, flag boolean, note text)`);
  });

  it("reads back what the driver's own query reads: JSON, times, bigints, booleans and nulls", async () => {
    const insert = bound('insert into bound_probe (id, doc, at, n, flag, note) values ($1, $2::text::jsonb, $3::timestamptz, $4, $5, $6)', []);
    const rows: unknown[][] = [
      [1, JSON.stringify({ a: [1, 'two'] }), '2026-11-27T10:00:00.000Z', '9007199254740993', true, null],
      [2, null, null, 42, false, 'plain'],
    ];
    for (const values of rows) await runBound(database.db, { ...insert, values });
    const select = 'select id, doc, at, n, flag, note from bound_probe where id = any($1::int[]) order by id';
    const viaBound = await runBound(database.db, bound(select, [[1, 2]]));
    const viaQuery = await database.query(select, [[1, 2]]);
    expect(viaBound.rows).toEqual(viaQuery.rows);
    expect(viaBound.rows[0]).toMatchObject({ id: 1, doc: { a: [1, 'two'] }, flag: true, note: null });
  });

  it('parses each text once: the same statement stays prepared and runs again with new values', async () => {
    const text = 'select $1::int + 100 as plus /* prepared-once probe */';
    await database.db.transaction(async (tx) => {
      for (const n of [1, 2, 3]) expect((await runBound<{ plus: number }>(tx, bound(text, [n]))).rows[0]!.plus).toBe(100 + n);
      const prepared = await runBound<{ count: number }>(tx, bound('select count(*)::int as count from pg_prepared_statements where statement = $1', [text]));
      expect(prepared.rows[0]!.count).toBe(1);
    });
  });

  it('keeps answering past 500 different texts, and PGlite keeps at most 500 of them prepared', async () => {
    for (let n = 0; n < 520; n++)
      expect((await runBound<{ n: number }>(database.db, bound(`select $1::int as n /* distinct ${n} */`, [n]))).rows[0]!.n).toBe(n);
    const prepared = await database.query<{ count: number }>("select count(*)::int as count from pg_prepared_statements where statement like '%/* distinct %'");
    if (database.kind === 'pglite') expect(prepared.rows[0]!.count).toBeLessThanOrEqual(500);
    expect((await runBound<{ n: number }>(database.db, bound('select $1::int as n /* distinct 0 */', [7]))).rows[0]!.n).toBe(7);
  });

  it("refuses with the database's error code, and the next statement runs normally", async () => {
    const insert = bound('insert into bound_probe (id, note) values ($1, $2)', []);
    await runBound(database.db, { ...insert, values: [10, 'first'] });
    await expect(runBound(database.db, { ...insert, values: [10, 'again'] })).rejects.toMatchObject({ code: '23505' });
    await expect(runBound(database.db, bound('selec nothing', []))).rejects.toMatchObject({ code: '42601' });
    await runBound(database.db, { ...insert, values: [11, 'after'] });
    const notes = await database.query<{ note: string }>('select note from bound_probe where id in (10, 11) order by id');
    expect(notes.rows.map((r) => r.note)).toEqual(['first', 'after']);
  });

  it('belongs to its transaction: rolled back with it, while a statement outside it is not', async () => {
    const insert = bound('insert into bound_probe (id, note) values ($1, $2)', []);
    let outside: Promise<unknown> | undefined;
    await database.db
      .transaction(async (tx) => {
        await runBound(tx, { ...insert, values: [20, 'inside'] });
        outside = runBound(database.db, { ...insert, values: [21, 'outside'] }); // PGlite: waits for the transaction
        throw new Error('roll back');
      })
      .catch((err: Error) => expect(err.message).toBe('roll back'));
    await outside;
    const ids = await database.query<{ id: number }>('select id from bound_probe where id in (20, 21) order by id');
    expect(ids.rows.map((r) => r.id)).toEqual([21]);
  });
});

describe('shiftPlaceholders', () => {
  it('moves every placeholder by the offset, two-digit ones included', () => {
    expect(shiftPlaceholders('select $1, $2, $10', 3)).toBe('select $4, $5, $13');
    expect(shiftPlaceholders('select $1', 0)).toBe('select $1');
  });
});
