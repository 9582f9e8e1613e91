import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase } from '../../../test/helpers/test-database.js';
import { bound, groupStatsOf, runBound } from './bound.js';
import { openDatabase, type Database, type StatementCounts } from './database.js';

// Grouped statements (group commit, pg-grouped.ts) on both databases: on PostgreSQL concurrent ones share round trips
// and a commit; on PGlite (one connection) each runs by itself. Either way each answers exactly as it would alone.
let opened: Awaited<ReturnType<typeof openTestDatabase>>;
let database: Database;
/** The same database through one connection (PostgreSQL), so every group meets the same connection's state. */
let single: Database;

beforeAll(async () => {
  opened = await openTestDatabase();
  database = opened.database;
  single = opened.url ? await openDatabase({ url: opened.url, poolSize: 1 }) : database;
  await database.exec(`
    create table grouped_probe (id int primary key, note text, doc jsonb, at timestamptz, n bigint, flag boolean);
    create table grouped_counter (id int primary key, n int not null default 0);
    insert into grouped_counter (id) select generate_series(1, 5);`);
});
afterAll(async () => {
  if (single !== database) await single?.close();
  await opened?.close();
});

const sentSince = (before: StatementCounts): StatementCounts => {
  const now = database.statementCounts();
  return { statements: now.statements - before.statements, roundTrips: now.roundTrips - before.roundTrips };
};

const INSERT = 'insert into grouped_probe (id, note) values ($1, $2) returning id, note';
const insert = (db: Database, id: number, note: string) => runBound<{ id: number; note: string }>(db.db, bound(INSERT, [id, note]), { group: `w${id % 3}` });
const addToCounter = (id: number) =>
  runBound(database.db, bound('update grouped_counter set n = n + 1 where id = $1 returning id', [id]), { group: `counter-${id}` });

/** Runs `body` while another session's open transaction holds counter row `id` locked (PostgreSQL only). */
async function withRowLocked(id: number, body: (holder: pg.Client) => Promise<void>): Promise<void> {
  const holder = new pg.Client({ connectionString: opened.url! });
  await holder.connect();
  try {
    await holder.query('begin');
    await holder.query('update grouped_counter set n = n where id = $1', [id]);
    await body(holder);
  } finally {
    await holder.end();
  }
}

describe('grouped statements', () => {
  it('answer each caller with its own rows; concurrent ones share one round trip on PostgreSQL', async () => {
    const before = database.statementCounts();
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => insert(database, i + 1, `note ${i + 1}`)));
    expect(results.map((r) => r.rows)).toEqual(Array.from({ length: 40 }, (_, i) => [{ id: i + 1, note: `note ${i + 1}` }]));
    // PostgreSQL: BEGIN, the 40 and COMMIT in one round trip.
    expect(sentSince(before)).toEqual(database.kind === 'pg' ? { statements: 42, roundTrips: 1 } : { statements: 40, roundTrips: 40 });
    const count = await database.query<{ count: number }>('select count(*)::int as count from grouped_probe where id <= 40');
    expect(count.rows[0]!.count).toBe(40);
  });

  it("read back what the driver's own query reads: JSON, times, bigints, booleans and nulls", async () => {
    const text = 'insert into grouped_probe (id, doc, at, n, flag) values ($1, $2::text::jsonb, $3::timestamptz, $4, $5) returning doc, at, n, flag, note';
    const [grouped, other] = await Promise.all([
      runBound(database.db, bound(text, [101, JSON.stringify({ a: [1, 'two'] }), '2026-11-27T10:00:00.000Z', '9007199254740993', true]), { group: 'a' }),
      runBound(database.db, bound(text, [102, null, null, 42, false]), { group: 'b' }),
    ]);
    const viaQuery = await database.query('select doc, at, n, flag, note from grouped_probe where id in (101, 102) order by id');
    expect([grouped.rows[0], other.rows[0]]).toEqual(viaQuery.rows);
    expect(grouped.rows[0]).toMatchObject({ doc: { a: [1, 'two'] }, flag: true, note: null });
  });

  it('read the same values once their columns are known and no longer described', async () => {
    const text = 'insert into grouped_probe (id, doc, at, n, flag) values ($1, $2::text::jsonb, $3::timestamptz, $4, $5) returning id, doc, at, n, flag, note';
    const run = (id: number) =>
      runBound(single.db, bound(text, [id, JSON.stringify({ id }), '2026-11-27T10:00:00.000Z', String(2 ** 53 + id), id % 2 === 0]), { group: `s${id}` });
    // First round described (the shape is learnt), the later ones not: every round reads the same kinds of values.
    for (const round of [0, 1, 2]) {
      const ids = [111, 112, 113].map((id) => id + round * 10);
      const results = await Promise.all(ids.map(run));
      const viaQuery = await single.query(`select id, doc, at, n, flag, note from grouped_probe where id in (${ids.join(', ')}) order by id`);
      expect(results.map((r) => r.rows[0])).toEqual(viaQuery.rows);
      expect(results[0]!.rows[0]).toMatchObject({ doc: { id: ids[0] }, at: new Date('2026-11-27T10:00:00.000Z'), flag: ids[0]! % 2 === 0, note: null });
    }
  });

  it('one failing statement fails alone: the others of its group are written, each once', async () => {
    const before = database.statementCounts();
    const results = await Promise.allSettled([insert(database, 201, 'first'), insert(database, 1, 'taken id'), insert(database, 202, 'third')]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ code: '23505' });
    // PostgreSQL: the group, rolled back as a whole, then each statement by itself.
    expect(sentSince(before)).toEqual(database.kind === 'pg' ? { statements: 8, roundTrips: 4 } : { statements: 3, roundTrips: 3 });
    const rows = await database.query<{ id: number; note: string }>('select id, note from grouped_probe where id in (1, 201, 202) order by id');
    expect(rows.rows).toEqual([
      { id: 1, note: 'note 1' },
      { id: 201, note: 'first' },
      { id: 202, note: 'third' },
    ]);
  });

  it('keeps a connection usable after a group failed around texts it was preparing for the first time', async () => {
    const fresh = (n: number) => bound(`insert into grouped_probe (id, note) values ($1, $2) returning id /* fresh ${n} */`, [300 + n, `fresh ${n}`]);
    // Fails only after `marked` in the same transaction: inside a group, never by itself (so its retry keeps the connection).
    const marked = bound("select set_config('grouped.fail', 'yes', true) as marked", []);
    const failsAfterMarked = bound("select 1 / (case when current_setting('grouped.fail', true) = 'yes' then 0 else 1 end) as one", []);
    await runBound(single.db, failsAfterMarked, { group: 'b' });
    // On one connection: the group fails at a text prepared before, so the new text after it was never prepared.
    const first = await Promise.allSettled([
      runBound(single.db, marked, { group: 'a' }),
      runBound(single.db, failsAfterMarked, { group: 'b' }),
      runBound(single.db, fresh(1), { group: 'c' }),
    ]);
    expect(first.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    // Then a new text fails at its own preparation.
    const second = await Promise.allSettled([
      runBound(single.db, fresh(2), { group: 'x' }),
      runBound(single.db, bound('insert into grouped_probe (id, note) valuez ($1, $2)', [399, 'syntax']), { group: 'y' }),
      runBound(single.db, fresh(3), { group: 'z' }),
    ]);
    expect(second.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((second[1] as PromiseRejectedResult).reason).toMatchObject({ code: '42601' });
    // Every text runs again, grouped, on what the connection now holds.
    const again = await Promise.all([1, 2, 3].map((n) => runBound<{ id: number }>(single.db, { ...fresh(n), values: [310 + n, 'again'] }, { group: 'x' })));
    expect(again.map((r) => r.rows[0]!.id)).toEqual([311, 312, 313]);
  });

  it('apply every update to the rows they share, whatever order they were sent in', async () => {
    const ids = Array.from({ length: 200 }, (_, i) => ((i * 7) % 5) + 1);
    await Promise.all(ids.map(addToCounter));
    const counts = await database.query<{ id: number; n: number }>('select id, n from grouped_counter order by id');
    expect(counts.rows).toEqual([1, 2, 3, 4, 5].map((id) => ({ id, n: 40 })));
  });

  it('treats a value the driver cannot send as that statement alone would be, and sends the rest', async () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const alone = await runBound(database.db, bound(INSERT, [403, circular])).then(
      () => 'fulfilled',
      () => 'rejected',
    );
    if (database.kind === 'pg') expect(alone).toBe('rejected'); // node-postgres cannot serialise it
    const results = await Promise.allSettled([insert(database, 401, 'kept'), runBound(database.db, bound(INSERT, [402, circular]), { group: 'w' })]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', alone]);
    const rows = await database.query<{ id: number }>('select id from grouped_probe where id in (401, 402) order by id');
    expect(rows.rows).toEqual(alone === 'fulfilled' ? [{ id: 401 }, { id: 402 }] : [{ id: 401 }]);
  });

  it('write the statements that wait behind a group in flight on the same connection, once there are enough of them', async () => {
    const text = 'insert into grouped_probe (id, note) values ($1, $2) returning id, pg_backend_pid() as backend';
    const put = (id: number) => runBound<{ id: number; backend: number }>(database.db, bound(text, [id, `lane ${id}`]), { group: `l${id % 4}` });
    const before = groupStatsOf(database.db);
    const first = Promise.all([501, 502, 503].map(put));
    await Promise.resolve(); // the first group is on its way
    const behind = Promise.all(Array.from({ length: 20 }, (_, i) => put(510 + i)));
    const rows = [...(await first), ...(await behind)].map((r) => r.rows[0]!);
    expect(rows.map((row) => row.id)).toEqual([501, 502, 503, ...Array.from({ length: 20 }, (_, i) => 510 + i)]);
    const after = groupStatsOf(database.db);
    if (database.kind !== 'pg') return expect(after).toBeNull();
    expect(new Set(rows.map((row) => row.backend)).size).toBe(1);
    expect(after).toMatchObject({ groups: before!.groups + 2, statements: before!.statements + 23, pipelined: before!.pipelined + 1, aside: before!.aside });
  });

  it('run a group written behind a failing one as if it had been sent alone', async () => {
    const before = groupStatsOf(database.db);
    const first = Promise.allSettled([insert(database, 601, 'first'), insert(database, 1, 'taken id')]);
    await Promise.resolve(); // the first group is on its way
    const behind = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => insert(database, 610 + i, `behind ${i}`)));
    expect((await first).map((r) => r.status)).toEqual(['fulfilled', 'rejected']);
    expect(behind.every((r) => r.status === 'fulfilled')).toBe(true);
    const count = await database.query<{ count: number }>('select count(*)::int as count from grouped_probe where id = 601 or id between 610 and 629');
    expect(count.rows[0]!.count).toBe(21);
    if (database.kind === 'pg') expect(groupStatsOf(database.db)!.pipelined).toBe(before!.pipelined + 1);
  });

  it('commit a group of statements that need no flush of their own without waiting for it, and any other group with it', async () => {
    const mode = (asyncCommit: boolean) =>
      runBound<{ mode: string }>(database.db, bound("select current_setting('synchronous_commit') as mode", []), { group: 'mode', asyncCommit }).then(
        (r) => r.rows[0]!.mode,
      );
    const quick = await Promise.all([mode(true), mode(true), mode(true)]);
    const mixed = await Promise.all([mode(true), mode(false), mode(true)]);
    // PGlite has no WAL flush to wait for: each statement runs by itself with the database's setting.
    expect(quick).toEqual(database.kind === 'pg' ? ['off', 'off', 'off'] : quick.map(() => quick[0]));
    expect(mixed).toEqual(database.kind === 'pg' ? ['on', 'on', 'on'] : mixed.map(() => mixed[0]));
  });

  it.runIf(process.env.TEST_DATABASE_URL)('retry the statements of a group whose connection the server cut, once, and go on', async () => {
    const counter = async (id: number) => (await database.query<{ n: number }>('select n from grouped_counter where id = $1', [id])).rows[0]!.n;
    const before = await counter(4);
    await withRowLocked(4, async (holder) => {
      const cut = addToCounter(4);
      // The group's backend waits for the row lock; the server then ends its session (its transaction rolls back).
      let waiting: number | undefined;
      while (waiting === undefined) {
        const found = await holder.query<{ pid: number }>("select pid from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'");
        waiting = found.rows[0]?.pid;
      }
      await holder.query('select pg_terminate_backend($1)', [waiting]);
      await holder.query('rollback');
      // Sent again by itself, it is answered once the lock is free, and counted once.
      expect((await cut).rows).toEqual([{ id: 4 }]);
      expect(await counter(4)).toBe(before + 1);
      expect((await Promise.all([addToCounter(3), addToCounter(4)])).map((r) => r.rows)).toEqual([[{ id: 3 }], [{ id: 4 }]]);
    });
  });

  // One connection on PGlite: a lock another session holds cannot exist there.
  it.runIf(process.env.TEST_DATABASE_URL)('let the others go when a group waits for a lock another transaction holds', async () => {
    await withRowLocked(5, async (holder) => {
      let lockedDone = false;
      const locked = addToCounter(5).then((result) => {
        lockedDone = true;
        return result;
      });
      await new Promise((resolve) => setImmediate(resolve));
      // Sent while the first group waits for the lock: answered while the lock is still held, on another connection.
      const before = groupStatsOf(database.db)!;
      const others = await Promise.all([addToCounter(1), addToCounter(2)]);
      expect(groupStatsOf(database.db)!.aside).toBe(before.aside + 1);
      expect(others.map((r) => r.rows)).toEqual([[{ id: 1 }], [{ id: 2 }]]);
      expect(lockedDone).toBe(false);
      await holder.query('commit');
      expect((await locked).rows).toEqual([{ id: 5 }]);
    });
    const counts = await database.query<{ id: number; n: number }>('select id, n from grouped_counter where id in (1, 2, 5) order by id');
    expect(counts.rows).toEqual([
      { id: 1, n: 41 },
      { id: 2, n: 41 },
      { id: 5, n: 41 },
    ]);
  });
});
