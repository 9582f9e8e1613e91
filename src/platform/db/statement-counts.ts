import pg from 'pg';

/**
 * What a database handle sent: statements (BEGIN and COMMIT included; a group of the group-commit runner counts each
 * of its statements) and round trips (each wait for the server's answer: one per statement sent alone, one per group).
 * Counted by subclasses of the drivers' own client classes (node-postgres' pool takes its `Client` class as an
 * option; PGlite is a class: pglite-client.ts), so no connection is patched. Exported as metrics, read by tests and
 * benches.
 */
export interface StatementCounts {
  statements: number;
  roundTrips: number;
}

export type StatementObserver = (statement: { text: string; values: unknown[] }) => void;

/** A node-postgres `query` call's statement: `(text, values)` or `({ text, values, ... })`. */
function statementOf(args: unknown[]): { text: string; values: unknown[] } {
  const [first, second] = args;
  if (typeof first === 'string') return { text: first, values: Array.isArray(second) ? (second as unknown[]) : [] };
  const config = first as { text?: string; values?: unknown[] };
  return { text: config.text ?? '', values: config.values ?? (Array.isArray(second) ? (second as unknown[]) : []) };
}

type Query = (...args: unknown[]) => unknown;

/**
 * node-postgres' Client, counting: every `query` is a statement, and a round trip unless the client pipelines (the
 * group-commit runner counts a group's round trip itself). `observers` see each statement as sent (for tests that
 * check plans); the group commit's statements go through `query` too.
 */
export function countingPgClient(counts: StatementCounts, observers: ReadonlySet<StatementObserver>): typeof pg.Client {
  return class CountingClient extends pg.Client {
    // The driver's overloads in one: whatever `query` takes goes on as it came.
    override query(...args: Parameters<Query>): never {
      counts.statements++;
      if (!this.pipeline) counts.roundTrips++;
      if (observers.size > 0) for (const observer of observers) observer(statementOf(args));
      return (super.query as Query).apply(this, args) as never;
    }
  };
}
