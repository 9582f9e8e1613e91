import { mkdirSync } from 'node:fs';
import type { PGliteOptions } from '@electric-sql/pglite';
import type { ExtractTablesWithRelations } from 'drizzle-orm';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import pg from 'pg';
import { lockEmbeddedDatabase } from './embedded-lock.js';
import { driverClientOf, type DriverClient } from './drizzle-session.js';
import { groupedRunner, type GroupedRunner } from './pg-grouped.js';
import { createPgListener } from './pg-listener.js';
import { pipelinedClient } from './pg-pipelined-client.js';
import { EmbeddedClient, preparedRunOf } from './pglite-client.js';
import { countingPgClient, type StatementCounts, type StatementObserver } from './statement-counts.js';

// No relational `schema` is handed to Drizzle: the code uses the query builder on tables it imports, so the platform
// knows no domain table (and `db.query.<table>` does not exist).
type NoSchema = Record<string, never>;
export type Db = PgDatabase<PgQueryResultHKT, NoSchema>;
export type Tx = PgTransaction<PgQueryResultHKT, NoSchema, ExtractTablesWithRelations<NoSchema>>;
/** Services take either the database or an open transaction, so callers can compose them atomically. */
export type DbOrTx = Db | Tx;

export interface SqlResult<T> {
  rows: T[];
}

/** The one handle the rest of the service gets: Drizzle plus the few raw operations platform code needs. */
export interface Database {
  readonly kind: 'pglite' | 'pg';
  readonly db: Db;
  query<T = Record<string, unknown>>(text: string, values?: unknown[]): Promise<SqlResult<T>>;
  /** Runs one or more parameterless statements; returns the rows of the last one. */
  exec(text: string): Promise<SqlResult<Record<string, unknown>>>;
  /**
   * Calls `onMessage` with each NOTIFY on `channel` until the returned function is called. The subscription outlives
   * a lost listening connection: it is opened again and LISTENs again by itself (see `onListenerReset`).
   */
  listen(channel: string, onMessage: (payload: string) => void): Promise<() => Promise<void>>;
  /**
   * Calls `callback` each time the listening connection is back after a loss (or after failed attempts), once it
   * LISTENs again on every channel: notifications sent meanwhile may have been missed, so whatever they keep fresh must
   * be dropped, and a read that started before the call must not be kept. Anything committed after the call is heard.
   * Callbacks run synchronously, in registration order; one that throws is reported to `onError` and the others still
   * run. Never called on the embedded database. Returns the function that stops the calls.
   */
  onListenerReset(callback: () => void): () => void;
  notify(channel: string, payload: string): Promise<void>;
  /** The embedded database's files as a tarball (tests start from a migrated snapshot); undefined on PostgreSQL. */
  dumpDataDir?: () => Promise<Blob>;
  /** Statements and round trips sent to the database so far (statement-counts.ts); for metrics, tests and benches. */
  statementCounts(): StatementCounts;
  /**
   * PostgreSQL only: calls `observer` with every statement a pooled connection is sent (the text and the values exactly
   * as sent, group commit's included). For tests that check the plans of what the service really sends. Returns the
   * function that stops observing.
   */
  observeStatements?: (observer: StatementObserver) => () => void;
  /** Runs `fn` while holding a session-level advisory lock, serialising it across instances. */
  withAdvisoryLock<T>(lockId: number, fn: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export type { StatementCounts, StatementObserver };
export { driverClientOf, preparedRunOf, type DriverClient };

/**
 * Sends SQL with positional parameters ($1, $2 ...) on the connection of an open Drizzle transaction, for libraries
 * that bring their own statements (pg-boss). The parameters keep their identity, so one used twice is typed once.
 */
export async function queryInTransaction(tx: DbOrTx, text: string, values: unknown[]): Promise<SqlResult<Record<string, unknown>>> {
  const client = driverClientOf(tx);
  if (!client || !('rollback' in tx)) throw new Error('queryInTransaction needs an open transaction of the pg or PGlite driver');
  const result = await client.query(text, values);
  return { rows: result.rows as Record<string, unknown>[] };
}

export type DatabaseOptions = { url: string; poolSize?: number; onError?: (err: Error) => void } | { dataDir?: string; loadDataDir?: Blob | File };

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  return 'url' in options ? openPostgres(options.url, options.poolSize ?? 10, options.onError) : openPglite(options);
}

/**
 * PGlite's WebAssembly heap holds Postgres' shared buffers and never shrinks; the 128MB default cost ~130MB of resident
 * memory for a one-process database whose files the OS caches anyway.
 */
const EMBEDDED_SETTINGS = ['shared_buffers = 32MB'];

async function openPglite(options: { dataDir?: string; loadDataDir?: Blob | File }): Promise<Database> {
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
  const unlock = options.dataDir ? lockEmbeddedDatabase(options.dataDir) : () => undefined;
  let client: EmbeddedClient;
  try {
    const pgliteOptions: PGliteOptions = { dataDir: options.dataDir, loadDataDir: options.loadDataDir, postgresqlconf: EMBEDDED_SETTINGS };
    client = await EmbeddedClient.open(pgliteOptions);
    // PGlite keeps its options object for good (its output hooks close over it): the snapshot would stay with it.
    pgliteOptions.loadDataDir = undefined;
  } catch (err) {
    unlock();
    throw err;
  }
  const db = drizzlePglite(client) as unknown as Db;
  return {
    kind: 'pglite',
    db,
    statementCounts: () => ({ ...client.counts }),
    dumpDataDir: async () => client.dumpDataDir('none'),
    async query<T>(text: string, values?: unknown[]) {
      const result = await client.query<T>(text, values);
      return { rows: result.rows };
    },
    async exec(text) {
      const results = await client.exec(text);
      return { rows: results.at(-1)?.rows ?? [] };
    },
    async listen(channel, onMessage) {
      const unlisten = await client.listen(channel, onMessage);
      return async () => unlisten();
    },
    onListenerReset: () => () => undefined, // in-process: nothing is ever missed
    async notify(channel, payload) {
      await client.query('select pg_notify($1, $2)', [channel, payload]);
    },
    async withAdvisoryLock(_lockId, fn) {
      return fn(); // one embedded connection: nothing else can run migrations concurrently
    },
    async close() {
      if (!client.closed) await client.close();
      unlock();
    },
  };
}

/** The `options` a DATABASE_URL carries (kept: the pools add their own settings to them). */
function optionsOf(url: string): string {
  try {
    return new URL(url).searchParams.get('options') ?? '';
  } catch {
    return '';
  }
}

/** The `options` of the service's PostgreSQL connections: a DATABASE_URL's own, then ours (tests open theirs alike). */
export const serviceConnectionOptions = (url: string): string => `${optionsOf(url)} -c jit=off`.trim();

/**
 * Connections of the same database with `synchronous_commit = off`, by the database handle they belong to: for a
 * statement whose durability a later synchronous commit of the same flow provides (PostgreSQL flushes its WAL in order,
 * so that commit makes the earlier one durable too). A server crash in between loses both, consistently.
 */
const asyncCommitPools = new WeakMap<object, pg.Pool>();

/** The async-commit pool of a PostgreSQL database handle; undefined on PGlite and for transactions. */
export const asyncCommitPoolOf = (db: DbOrTx): pg.Pool | undefined => asyncCommitPools.get(db);

/** The group-commit runner (pg-grouped.ts) of a PostgreSQL database, by its main pool. */
const groupRunners = new WeakMap<pg.Pool, GroupedRunner>();

/** The runner that groups statements sent through `pool` (the main pool of a PostgreSQL database). */
export const groupRunnerOf = (pool: pg.Pool): GroupedRunner | undefined => groupRunners.get(pool);

async function openPostgres(url: string, poolSize: number, onError?: (err: Error) => void): Promise<Database> {
  const counts: StatementCounts = { statements: 0, roundTrips: 0 };
  const observers = new Set<StatementObserver>();
  const Client = countingPgClient(counts, observers);
  const newPool = (config: pg.PoolConfig, PoolClient: typeof pg.Client = Client) => {
    const created = new pg.Pool(Object.assign({}, config, { Client: PoolClient }));
    created.on('error', (err) => onError?.(err));
    return created;
  };
  // Plans follow PostgreSQL's default (plan_cache_mode=auto): a list or feed statement is planned with its values (a
  // generic plan knows neither its LIMIT nor its filters, estimates a tenth of the table and, past jit_above_cost,
  // compiled itself with JIT at every call: 250 ms a feed page at a million posts), and a named hot statement
  // (`bound.ts`) moves to its generic plan by itself after five runs on a connection when that plan costs no more.
  // JIT is off: its compile time (tens to thousands of ms) dwarfs any short statement this service runs.
  const settings = serviceConnectionOptions(url);
  const pool = newPool({ connectionString: url, max: poolSize, options: settings });
  const asyncCommitPool = newPool({ connectionString: url, max: Math.max(2, Math.ceil(poolSize / 2)), options: `${settings} -c synchronous_commit=off` });
  // Group commit (pg-grouped.ts): on its lane one group being run and one written behind it; more, on other
  // connections, only while those stall (a lock held long), so a stall never stops the rest.
  const groupSlots = Math.max(1, Math.ceil(poolSize / 4));
  const pipelinedPool = newPool({ connectionString: url, max: groupSlots, options: settings }, pipelinedClient(Client));
  const db = drizzleNodePg(pool) as unknown as Db;
  asyncCommitPools.set(db, asyncCommitPool);
  groupRunners.set(pool, groupedRunner({ durable: pool, quick: asyncCommitPool, pipelined: pipelinedPool }, groupSlots, counts));
  const listener = createPgListener({ client: { connectionString: url, options: settings }, onError });

  return {
    kind: 'pg',
    db,
    statementCounts: () => ({ ...counts }),
    observeStatements(observer) {
      observers.add(observer);
      return () => observers.delete(observer);
    },
    async query<T>(text: string, values?: unknown[]) {
      const result = await pool.query(text, values);
      return { rows: result.rows as T[] };
    },
    async exec(text) {
      const result = (await pool.query(text)) as unknown as pg.QueryResult | pg.QueryResult[];
      const last = Array.isArray(result) ? result.at(-1) : result;
      return { rows: (last?.rows ?? []) as Record<string, unknown>[] };
    },
    listen: (channel, onMessage) => listener.listen(channel, onMessage),
    onListenerReset: (callback) => listener.onReset(callback),
    async notify(channel, payload) {
      await pool.query('select pg_notify($1, $2)', [channel, payload]);
    },
    async withAdvisoryLock(lockId, fn) {
      const client = await pool.connect();
      try {
        await client.query('select pg_advisory_lock($1)', [lockId]);
        return await fn();
      } finally {
        await client.query('select pg_advisory_unlock($1)', [lockId]).catch(() => undefined);
        client.release();
      }
    },
    async close() {
      await listener.close();
      if (!pool.ended) await pool.end();
      if (!asyncCommitPool.ended) await asyncCommitPool.end();
      if (!pipelinedPool.ended) await pipelinedPool.end();
    },
  };
}
