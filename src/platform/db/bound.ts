import type { SQLWrapper } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { asyncCommitPoolOf, driverClientOf, groupRunnerOf, preparedRunOf, type DbOrTx, type DriverClient, type SqlResult } from './database.js';
import type { GroupStats } from './pg-grouped.js';

/**
 * SQL text with its own positional placeholders ($1, $2 ...) and their values. The hot statements are written this
 * way: their text is a constant, so nothing is built per call, and on PostgreSQL a named prepared statement skips
 * parsing and planning after its first run on each connection. Values go to the driver as they are: JSON as text
 * (`$n::text::jsonb`), times as ISO strings.
 */
export interface BoundSql {
  readonly text: string;
  readonly values: unknown[];
}

export const bound = (text: string, values: unknown[]): BoundSql => ({ text, values });

export const isBound = (query: BoundSql | SQLWrapper): query is BoundSql => typeof (query as BoundSql).text === 'string';

/** Drizzle's SQL renderer for PostgreSQL, as the databases' own (no casing option is set on them). */
const dialect = new PgDialect();

const isNodePg = (client: DriverClient) => client instanceof pg.Pool || client instanceof pg.Client;

const preparedNames = new Map<string, string>();
const nameOf = (text: string): string => {
  let name = preparedNames.get(text);
  if (!name) {
    name = `sf_${preparedNames.size + 1}`;
    preparedNames.set(text, name);
  }
  return name;
};

/** What the group-commit runner of `handle`'s database sent so far; null on PGlite. */
export function groupStatsOf(handle: DbOrTx): GroupStats | null {
  const main = driverClientOf(handle);
  return main instanceof pg.Pool ? (groupRunnerOf(main)?.stats() ?? null) : null;
}

export interface RunOptions {
  /**
   * A statement of its own (not in a transaction) whose commit need not wait for the WAL flush, because a later
   * synchronous commit of the same flow makes it durable (see `asyncCommitPoolOf`).
   */
  asyncCommit?: boolean;
  /**
   * A statement of its own that may share a transaction and its commit with other concurrent grouped statements
   * (group commit on PostgreSQL, pg-grouped.ts); the value orders it in the group: the key of the wallet it locks. It
   * must lock no row other than that wallet's and rows of its own request (new ones, its reservation, its key entry),
   * and be all-or-nothing by itself. Inside a transaction, and on PGlite (one connection), it runs by itself. Grouped
   * statements of both kinds share one runner: a group of only `asyncCommit` ones commits without waiting for the
   * flush (`SET LOCAL synchronous_commit TO off`), a group with any other waits for it, as that one must.
   */
  group?: string;
}

/**
 * Runs bound SQL on the database, or on the connection of the open transaction `handle` is, as a named prepared
 * statement: pg prepares it once per connection, PGlite once per database (pglite-prepared.ts).
 */
export async function runBound<T = Record<string, unknown>>(handle: DbOrTx, statement: BoundSql, options: RunOptions = {}): Promise<SqlResult<T>> {
  const main = driverClientOf(handle);
  if (!main) throw new Error('runBound needs a Drizzle database or transaction of the pg or PGlite driver');
  const client: DriverClient = (options.asyncCommit ? asyncCommitPoolOf(handle) : undefined) ?? main;
  const { text, values } = statement;
  const runPrepared = preparedRunOf(client);
  const runner = options.group !== undefined && main instanceof pg.Pool ? groupRunnerOf(main) : undefined;
  let result: { rows: unknown[] };
  if (runPrepared) result = await runPrepared(text, values);
  else if (runner) result = await runner.run(text, nameOf(text), values, options.group!, options.asyncCommit === true);
  else if (isNodePg(client)) result = await client.query({ name: nameOf(text), text, values });
  else result = await client.query(text, values);
  return { rows: result.rows as T[] };
}

/** A Drizzle query as bound SQL (for the rare parts of a combined statement that are still built per call). */
export function toBound(query: SQLWrapper): BoundSql {
  const { sql, params } = dialect.sqlToQuery(query.getSQL());
  return { text: sql, values: params };
}

/** The text with every placeholder $n moved up by `offset` (to join several bound statements into one). */
export const shiftPlaceholders = (text: string, offset: number): string =>
  offset === 0 ? text : text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`);

/** Bound SQL whose placeholders were given names while its text was built (`namedStatement`). */
export interface NamedStatement {
  readonly text: string;
  /** The statement with these values, taken by placeholder name (a missing one is sent as null). */
  bind(values: Readonly<Record<string, unknown>>): BoundSql;
}

/**
 * Builds a statement's text once, naming its placeholders as it goes: `param('viewer', '::uuid')` is `$1::uuid` the
 * first time and the same number every later time, so a value used in several places is sent once. For statements
 * with a few shapes (a listing with or without a cursor, say): build each shape once and keep it.
 */
export function namedStatement(build: (param: (name: string, cast?: string) => string) => string): NamedStatement {
  const names: string[] = [];
  const text = build((name, cast = '') => {
    let index = names.indexOf(name);
    if (index < 0) index = names.push(name) - 1;
    return `$${index + 1}${cast}`;
  });
  return {
    text,
    bind: (values) =>
      bound(
        text,
        names.map((name) => values[name] ?? null),
      ),
  };
}
