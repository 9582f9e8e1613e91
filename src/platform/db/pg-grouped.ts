import pg from 'pg';
import utils from 'pg/lib/utils.js';
import { encodeGroup } from './pg-group-encoder.js';

/**
 * Group commit for the metering hot path on PostgreSQL. Statements sent while a group is in flight wait, and the next
 * group sends all that waited as ONE round trip: per statement Parse (first use on the connection only), Bind,
 * Describe (until its columns are known), Execute, and one Sync at the end, so they run in one implicit transaction
 * and share its commit (one WAL flush, one wake-up of the server). Alone (a quiet service) a statement goes at once, as
 * by itself.
 *
 * One group is in flight at a time: the fewer, larger groups share the most, and groups of one runner never wait for
 * each other's wallet locks. A group that has gone unanswered for STALLED_MS (a statement waiting for a lock another
 * transaction holds, say) no longer holds the others back: the next group goes on another connection, up to `slots`.
 * The next group goes out as soon as a group's round trip ends, before its callers are answered. Statements that need
 * no WAL flush of their own (`asyncCommit`) share the runner with the others: a group of only such commits on the
 * `quick` pool, any other group on the `durable` one, waiting for the flush as its other statements must.
 *
 * All or nothing: when one statement of a group fails, PostgreSQL rolls the whole group back; each statement is then
 * sent again on its own and answers for itself, so a group never changes what a statement does. Statements of a group
 * run in the order of their `order` key (the wallet's owner): two groups in flight take wallet locks in the same
 * order, so they never deadlock each other.
 */
export interface GroupedRunner {
  /** `asyncCommit`: the statement needs no WAL flush of its own (see bound.ts); a group of only such goes on `quick`. */
  run(text: string, name: string, values: unknown[], order: string, asyncCommit?: boolean): Promise<{ rows: unknown[] }>;
}

interface Waiting {
  text: string;
  name: string;
  values: (string | Buffer | null)[];
  order: string;
  asyncCommit: boolean;
  resolve: (result: { rows: unknown[] }) => void;
  reject: (err: unknown) => void;
}

interface ProtocolField {
  name: string;
  dataTypeID: number;
  format: string;
}

interface Connection {
  parsedStatements: Record<string, string>;
  stream: { writable: boolean; write(bytes: Buffer): boolean };
}

const MAX_GROUP = 64;
/** Far above a group's round trip under load (p99 ~9 ms on the bench's machine), far below a lock held for long. */
const STALLED_MS = 50;

/** How a statement's rows are read: node-postgres' own parser per column, and every column set to null to copy. */
interface RowShape {
  fields: ProtocolField[];
  names: string[];
  parsers: ((value: string) => unknown)[];
  /** Each row starts as a copy of this (one shape, no growing). */
  emptyRow: Record<string, unknown>;
}

function rowShape(fields: ProtocolField[]): RowShape {
  const emptyRow: Record<string, unknown> = {};
  for (const field of fields) emptyRow[field.name] = null;
  return {
    fields,
    names: fields.map((field) => field.name),
    parsers: fields.map((field) => pg.types.getTypeParser(field.dataTypeID, 'text') as (value: string) => unknown),
    emptyRow,
  };
}

const sameFields = (a: ProtocolField[], b: ProtocolField[]) => a.length === b.length && a.every((field, i) => field.name === b[i]!.name && field.dataTypeID === b[i]!.dataTypeID);

/**
 * A prepared statement describes the same columns every time: its shape is built once (by statement name), and once it
 * is known the statement is no longer described. PostgreSQL refuses to run a prepared statement whose result columns
 * changed (a migration altered a table it reads): "cached plan must not change result type", so a known shape holds.
 */
const shapes = new Map<string, RowShape>();

/** One group on the wire, as a node-postgres submittable: its rows by statement, or where it failed. */
class GroupQuery {
  readonly rows: Record<string, unknown>[][] = [];
  /** Statements whose text this group parsed on the connection (by position). */
  readonly parsedHere = new Set<number>();
  /** The shapes known when the group was sent, by position; the other statements are described. */
  private readonly known: (RowShape | undefined)[];
  private shape: RowShape | null = null;
  private current: Record<string, unknown>[] = [];
  readonly done: Promise<void>;
  private settle!: { resolve(): void; reject(err: unknown): void };

  constructor(readonly statements: Waiting[]) {
    this.done = new Promise<void>((resolve, reject) => (this.settle = { resolve, reject }));
    this.known = statements.map((statement) => shapes.get(statement.name));
  }

  /** The position of the statement that was answering when the group failed. */
  get position(): number {
    return this.rows.length;
  }

  submit(connection: Connection): null {
    this.statements.forEach((statement, i) => {
      if (connection.parsedStatements[statement.name] !== undefined) return;
      connection.parsedStatements[statement.name] = statement.text;
      this.parsedHere.add(i);
    });
    // As node-postgres does: a closed stream writes nothing, and the connection's error answers the group.
    if (connection.stream.writable) connection.stream.write(encodeGroup(this.statements, { parse: this.parsedHere, describe: this.toDescribe() }));
    return null;
  }

  private toDescribe(): Set<number> {
    const positions = new Set<number>();
    this.known.forEach((shape, i) => shape === undefined && positions.add(i));
    return positions;
  }

  handleRowDescription(message: { fields: ProtocolField[] }): void {
    const name = this.statements[this.position]!.name;
    let shape = shapes.get(name);
    if (!shape || !sameFields(shape.fields, message.fields)) {
      shape = rowShape(message.fields);
      shapes.set(name, shape);
    }
    this.shape = shape;
  }

  handleDataRow(message: { fields: (string | null)[] }): void {
    // A statement that was not described answers with its rows at once: its shape was known when the group went out.
    const { names, parsers, emptyRow } = (this.shape ??= this.known[this.position]!);
    const row = { ...emptyRow };
    const values = message.fields;
    for (let i = 0; i < values.length; i++) {
      const value = values[i] as string | null;
      row[names[i]!] = value === null ? null : parsers[i]!(value);
    }
    this.current.push(row);
  }

  handleCommandComplete(): void {
    this.rows.push(this.current);
    this.current = [];
    this.shape = null;
  }

  handleEmptyQuery(): void {
    this.handleCommandComplete();
  }

  handleError(err: unknown): void {
    this.settle.reject(err);
  }

  handleReadyForQuery(): void {
    this.settle.resolve();
  }

  handlePortalSuspended(): void {}
  handleCopyInResponse(): void {}
  handleCopyData(): void {}
}

/** `durable`: connections that commit synchronously; `quick`: with `synchronous_commit = off` (the same database). */
export function groupedRunner(pools: { durable: pg.Pool; quick: pg.Pool }, slots: number): GroupedRunner {
  const waiting: Waiting[] = [];
  let scheduled = false;

  /** One statement by itself; `free` runs once its round trip is over, before its caller hears of it. */
  const alone = (statement: Waiting, free?: () => void) =>
    (statement.asyncCommit ? pools.quick : pools.durable)
      .query({ name: statement.name, text: statement.text, values: statement.values })
      .finally(() => free?.())
      .then(statement.resolve, statement.reject);

  /**
   * Sends a group and answers its statements. `free` runs as soon as the round trip is over, before the answers: the
   * next group goes out while this one's callers carry on, so the server does not wait for them.
   */
  async function send(group: Waiting[], free: () => void): Promise<void> {
    if (group.length === 1) return alone(group[0]!, free);
    let client: pg.PoolClient;
    try {
      client = await (group.every((statement) => statement.asyncCommit) ? pools.quick : pools.durable).connect();
    } catch (err) {
      free();
      for (const statement of group) statement.reject(err);
      return;
    }
    const query = new GroupQuery(group);
    let failed: unknown;
    let broken: Error | undefined;
    try {
      void client.query(query as unknown as pg.QueryConfig);
      await query.done;
    } catch (err) {
      failed = err;
      if (!(err instanceof pg.DatabaseError)) broken = err instanceof Error ? err : new Error(String(err));
      else {
        // Parses after the failing statement were skipped; the failing one's own parse may or may not have run.
        const connection = (client as unknown as { connection: Connection }).connection;
        for (const i of query.parsedHere) {
          if (i > query.position) delete connection.parsedStatements[group[i]!.name];
          else if (i === query.position) broken = err;
        }
      }
    } finally {
      client.release(broken);
    }
    free();
    if (failed === undefined) group.forEach((statement, i) => statement.resolve({ rows: query.rows[i] ?? [] }));
    // The server rolled the group back: each statement answers for itself. A lost connection may have committed it.
    else if (failed instanceof pg.DatabaseError) await Promise.all(group.map((statement) => alone(statement)));
    else for (const statement of group) statement.reject(failed);
  }

  /** When each group in flight was sent. */
  const inFlight = new Set<{ sentAt: number }>();
  let stallCheck: NodeJS.Timeout | null = null;

  /** Milliseconds until every group in flight counts as stalled (0: none is in flight, or all are). */
  function untilAllStalled(now: number): number {
    let wait = 0;
    for (const group of inFlight) wait = Math.max(wait, group.sentAt + STALLED_MS - now);
    return wait;
  }

  function pump(): void {
    scheduled = false;
    let now = performance.now();
    while (waiting.length > 0 && inFlight.size < slots && untilAllStalled(now) === 0) {
      const group = waiting.splice(0, MAX_GROUP).sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0));
      const entry = { sentAt: now };
      inFlight.add(entry);
      const free = () => {
        if (inFlight.delete(entry)) pump();
      };
      void send(group, free)
        // Not expected (send answers every statement itself); a settled promise ignores a second answer.
        .catch((err: unknown) => group.forEach((statement) => statement.reject(err)))
        .finally(free);
      now = performance.now();
    }
    // Statements wait behind a group that may stall: look again when it would count as stalled.
    if (waiting.length > 0 && inFlight.size < slots && stallCheck === null) {
      stallCheck = setTimeout(() => {
        stallCheck = null;
        pump();
      }, untilAllStalled(now));
      stallCheck.unref();
    }
  }

  return {
    run(text, name, values, order, asyncCommit = false) {
      return new Promise((resolve, reject) => {
        let prepared: (string | Buffer | null)[];
        try {
          prepared = values.map((value) => utils.prepareValue(value) as string | Buffer | null);
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
          return;
        }
        waiting.push({ text, name, values: prepared, order, asyncCommit, resolve, reject });
        // Statements sent in the same turn of the event loop share a group even when a slot is free.
        if (!scheduled) {
          scheduled = true;
          queueMicrotask(pump);
        }
      });
    },
  };
}
