import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase } from '../../../test/helpers/test-database.js';
import { bound } from './bound.js';
import type { Database } from './database.js';
import { StatementConditionFailed, writeAsOneStatement } from './one-statement.js';

let opened: Awaited<ReturnType<typeof openTestDatabase>>;
let database: Database;

beforeAll(async () => {
  opened = await openTestDatabase();
  database = opened.database;
  await database.exec('create table one_statement_items (id int primary key, note text not null); create table one_statement_log (item int not null)');
});
afterAll(async () => opened?.close());

const count = async (table: string) => Number((await database.query<{ n: string }>(`select count(*) as n from ${table}`)).rows[0]!.n);

const parts = (id: number) => [
  { name: 'item', query: sql`insert into one_statement_items (id, note) values (${id}, 'first') returning id` },
  { name: 'log', query: sql`insert into one_statement_log (item) select id from item` },
];

describe('writeAsOneStatement', () => {
  it('writes every part in one round trip and returns the selected row', async () => {
    const before = database.statementCounts().statements;
    const row = await writeAsOneStatement<{ written: number }>(database.db, parts(1), {
      condition: { holds: sql`exists (select 1 from item)`, message: 'no item' },
      select: sql`(select count(*) from item)::int as written`,
    });
    expect(database.statementCounts().statements - before).toBe(1);
    expect(row.written).toBe(1);
    expect([await count('one_statement_items'), await count('one_statement_log')]).toEqual([1, 1]);
  });

  it('writes nothing when its condition does not hold', async () => {
    const attempt = writeAsOneStatement(database.db, parts(2), {
      condition: { holds: sql`not exists (select 1 from item)`, message: 'the item was written' },
      select: sql`1 as done`,
    });
    await expect(attempt).rejects.toBeInstanceOf(StatementConditionFailed);
    await expect(attempt).rejects.toThrow('the item was written');
    expect([await count('one_statement_items'), await count('one_statement_log')]).toEqual([1, 1]);
  });

  it('counts a unique violation of any part as a failed condition, and writes nothing', async () => {
    await expect(writeAsOneStatement(database.db, parts(1), { select: sql`1 as done` })).rejects.toBeInstanceOf(StatementConditionFailed);
    expect([await count('one_statement_items'), await count('one_statement_log')]).toEqual([1, 1]);
  });

  it('numbers the parameters of bound and Drizzle parts in turn, for every shape and every call of a shape', async () => {
    const mixed = (id: number, note: string) => [
      { name: 'item', query: bound('insert into one_statement_items (id, note) values ($1, $2) returning id, note', [id, note]) },
      { name: 'log', query: sql`insert into one_statement_log (item) select id + ${0} from item where note = ${note}` },
    ];
    for (const [id, note] of [
      [10, 'ten'],
      [11, 'eleven'],
    ] as const) {
      const row = await writeAsOneStatement<{ id: number; note: string }>(database.db, mixed(id, note), {
        condition: { holds: bound('exists (select 1 from item where id = $1)', [id]), message: 'no item' },
        select: bound('(select id from item) as id, $1::text as note', [note]),
      });
      expect(row).toEqual({ conditionHeld: true, id, note });
    }
    expect(await count('one_statement_log')).toBe(3);
  });

  it('passes other errors through', async () => {
    const broken = [{ name: 'bad', query: sql`insert into one_statement_items (id, note) values (3, null)` }];
    await expect(writeAsOneStatement(database.db, broken, { select: sql`1 as done` })).rejects.not.toBeInstanceOf(StatementConditionFailed);
  });
});
