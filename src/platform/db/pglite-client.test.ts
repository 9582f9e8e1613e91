import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bound, runBound } from './bound.js';
import { openDatabase, type Database } from './database.js';

// The embedded client through PGlite's public API: prepared statements take their turn between transactions and never
// run inside another caller's open one; everything sent is counted.
let database: Database;

beforeAll(async () => {
  database = await openDatabase({});
  await database.exec('create table turn_probe (id int primary key)');
});
afterAll(async () => database?.close());

const marker = bound("select coalesce(current_setting('probe.marker', true), '') as marker, (select count(*)::int from turn_probe) as rows", []);

describe('the embedded client', () => {
  it('runs a prepared statement outside an open transaction, after it, never inside it', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inside!: () => void;
    const entered = new Promise<void>((resolve) => (inside = resolve));
    const order: string[] = [];
    const transaction = database.db.transaction(async (tx) => {
      await tx.execute(sql`select set_config('probe.marker', 'inside', true)`);
      await tx.execute(sql`insert into turn_probe (id) values (1)`);
      inside();
      await held;
      order.push('transaction ends');
    });
    await entered;
    const outside = runBound<{ marker: string; rows: number }>(database.db, marker).then((result) => {
      order.push('statement runs');
      return result.rows[0]!;
    });
    // Give the statement every chance to run while the transaction is open.
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    release();
    await transaction;
    expect(await outside).toEqual({ marker: '', rows: 1 });
    expect(order).toEqual(['transaction ends', 'statement runs']);
  });

  it("runs a transaction's prepared statements inside it", async () => {
    const seen = await database.db.transaction(async (tx) => {
      await tx.execute(sql`select set_config('probe.marker', 'mine', true)`);
      return (await runBound<{ marker: string }>(tx, marker)).rows[0]!.marker;
    });
    expect(seen).toBe('mine');
  });

  it('counts what it is sent: queries, prepared statements, and a transaction with its BEGIN and COMMIT', async () => {
    const before = database.statementCounts();
    await database.query('select 1');
    await runBound(database.db, marker);
    await database.db.transaction(async (tx) => {
      await runBound(tx, marker);
      await tx.execute(sql`select 2`);
    });
    const after = database.statementCounts();
    expect({ statements: after.statements - before.statements, roundTrips: after.roundTrips - before.roundTrips }).toEqual({ statements: 6, roundTrips: 6 });
  });

  it('lets a failed statement end its turn: the next one runs', async () => {
    await expect(runBound(database.db, bound('select 1 / 0 as never', []))).rejects.toThrow(/division by zero/);
    expect((await runBound<{ rows: number }>(database.db, marker)).rows[0]!.rows).toBe(1);
    await expect(database.db.transaction(async () => Promise.reject(new Error('rolled back')))).rejects.toThrow('rolled back');
    expect((await runBound<{ rows: number }>(database.db, marker)).rows[0]!.rows).toBe(1);
  });
});
