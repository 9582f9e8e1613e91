import { PGlite, type PGliteOptions, type Results, type Transaction } from '@electric-sql/pglite';
import { pglitePrepared, type PreparedRun } from './pglite-prepared.js';
import type { StatementCounts } from './statement-counts.js';

/**
 * The embedded database's client: PGlite, through its public API only, with what the service adds.
 * - Counting: each `query` and `exec` (one trip into the database), a transaction's BEGIN and COMMIT, and each prepared
 *   statement are counted in `counts` (statement-counts.ts).
 * - Prepared statements (pglite-prepared.ts) go through PGlite's protocol API, which takes none of its locks. Inside a
 *   transaction, `runExclusive` (documented for exactly this) keeps the transaction's own queries out. Outside one,
 *   `runExclusive` alone would let the statement run inside another caller's open transaction (PGlite frees its query
 *   lock between a transaction's statements), so transactions take turns here, and a statement outside them takes a
 *   turn too: it runs between transactions, never inside one.
 * Drizzle and pg-boss use it as the PGlite it is.
 */
/** The prepared-statement runner of each embedded client and of each transaction it handed out, by that handle. */
const preparedRuns = new WeakMap<object, PreparedRun>();

/** How bound SQL runs as a prepared statement on `handle`; undefined unless it is an embedded client or its transaction. */
export const preparedRunOf = (handle: object): PreparedRun | undefined => preparedRuns.get(handle);

export class EmbeddedClient extends PGlite {
  readonly counts: StatementCounts = { statements: 0, roundTrips: 0 };
  readonly #execute: PreparedRun = pglitePrepared(this);
  /** Settles when the transaction or statement that last took a turn ends. */
  #turn: Promise<unknown> = Promise.resolve();
  /** A prepared statement of its own: between transactions, alone, then synced to disk as PGlite's `query` does. */
  readonly #outside: PreparedRun = (text, values) => this.#takeTurn(() => this.runExclusive(() => this.#runPrepared(text, values, true)));

  static async open(options: PGliteOptions): Promise<EmbeddedClient> {
    const client = new EmbeddedClient(options);
    await client.waitReady;
    preparedRuns.set(client, client.#outside);
    return client;
  }

  #count(): void {
    this.counts.statements++;
    this.counts.roundTrips++;
  }

  /** Runs `fn` once the transactions and statements that took a turn before it have ended. */
  #takeTurn<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#turn.then(fn, fn);
    this.#turn = run.catch(() => undefined);
    return run;
  }

  override query<T>(...args: Parameters<PGlite['query']>): Promise<Results<T>> {
    this.#count();
    return super.query<T>(...args);
  }

  override exec(...args: Parameters<PGlite['exec']>): ReturnType<PGlite['exec']> {
    this.#count();
    return super.exec(...args);
  }

  override transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.#takeTurn(() => {
      this.#count();
      return super.transaction((tx) => fn(this.#counted(tx))).finally(() => this.#count());
    });
  }

  async #runPrepared(text: string, values: unknown[], sync: boolean): Promise<{ rows: unknown[] }> {
    this.#count();
    const result = await this.#execute(text, values);
    if (sync) await this.syncToFs();
    return result;
  }

  /** A transaction whose `query` and `exec` count (everything else is the transaction's own). */
  #counted(tx: Transaction): Transaction {
    const counted = Object.create(tx) as Transaction;
    counted.query = (...args) => {
      this.#count();
      return tx.query(...args);
    };
    counted.exec = (...args) => {
      this.#count();
      return tx.exec(...args);
    };
    preparedRuns.set(counted, (text, values) => this.runExclusive(() => this.#runPrepared(text, values, false)));
    return counted;
  }
}
