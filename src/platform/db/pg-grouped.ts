import pg from 'pg';
import utils from 'pg/lib/utils.js';
import { GroupQuery, knownToAnswerNoRows, type Connection } from './pg-group-query.js';

/**
 * Group commit for the metering hot path on PostgreSQL. Statements sent while a group is in flight wait, and the next
 * group sends all that waited as ONE round trip: per statement Parse (first use on the connection only), Bind,
 * Describe (until its columns are known), Execute, and one Sync at the end, so they run in one implicit transaction
 * and share its commit (one WAL flush, one wake-up of the server). Alone (a quiet service) a statement goes at once.
 *
 * Groups go on one connection, the lane, so they never wait for each other's wallet locks, and the fewer, larger
 * groups share the most. The next group goes as soon as one's round trip ends, before its callers are answered; and
 * when PIPELINED_GROUP statements wait while a group is in flight, they go at once behind it on the same connection
 * (up to LANE_DEPTH groups), so the server runs them back to back instead of idling while the service reads one
 * group's answers and writes the next. A group of statements that need no WAL flush of their own (`asyncCommit`)
 * starts with `SET LOCAL synchronous_commit TO off`; any other waits for the flush, as its other statements must.
 *
 * A group that has gone unanswered for STALLED_MS (a statement waiting for a lock another transaction holds, say) no
 * longer holds the others back: once every group in flight is stalled, the next goes on another connection, up to
 * `slots` groups in flight. At most the groups on the lane wait behind such a lock.
 *
 * All or nothing: when one statement of a group fails, PostgreSQL rolls the whole group back; each statement is then
 * sent again on its own and answers for itself, so a group never changes what a statement does. A group written behind
 * a failed one still runs (the failure ends at its Sync). Statements of a group run in the order of their `order` key
 * (the wallet's owner): groups on two connections take wallet locks in the same order, so they never deadlock.
 */
export interface GroupedRunner {
  /** `asyncCommit`: the statement needs no WAL flush of its own (see bound.ts); a group of only such commits without. */
  run(text: string, name: string, values: unknown[], order: string, asyncCommit?: boolean): Promise<{ rows: unknown[] }>;
  /** What the runner sent so far, for metrics and tests. */
  stats(): GroupStats;
}

export interface GroupStats {
  /** Groups sent, and the statements in them. */
  groups: number;
  statements: number;
  /** Groups written behind another one in flight on the lane. */
  pipelined: number;
  /** Groups sent on a connection of their own because every group in flight was stalled. */
  aside: number;
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

const MAX_GROUP = 64;
/** Far above a group's round trip under load (p99 ~9 ms on the bench's machine), far below a lock held for long. */
const STALLED_MS = 50;
/**
 * Groups in flight on the lane at once: one being run by the server, one written behind it (node-postgres holds that one
 * in its queue until the first is answered; a third would queue behind a queued query, which pg 8 deprecates).
 */
const LANE_DEPTH = 2;
/**
 * The fewest statements sent behind a group in flight: below it they wait for the lane to empty, as a group's commit
 * and round trip would cost more than the wait (measured at 50 connections: 6 waiting did worse than 16).
 */
const PIPELINED_GROUP = 16;

/** The first statement of a group of `asyncCommit` statements: its commit does not wait for the WAL flush. */
const ASYNC_COMMIT = 'sf_group_async_commit';
knownToAnswerNoRows(ASYNC_COMMIT);
const asyncCommitStatement: Waiting = {
  text: 'set local synchronous_commit to off',
  name: ASYNC_COMMIT,
  values: [],
  order: '',
  asyncCommit: true,
  resolve: () => {},
  reject: () => {},
};

/** The connection groups are written on, held while groups are in flight on it. */
interface Lane {
  client: Promise<pg.PoolClient>;
  groups: number;
  /** Set when a group left the connection in doubt (or it failed): it is closed once its last group is answered. */
  broken?: Error;
  /** Stops listening for the client's errors (set once it is connected). */
  stopHearing?: () => void;
}

/**
 * Listens for the errors of a client taken from the pool: node-postgres emits a lost connection as an `error` event as
 * well as failing its queries, and a checked-out client has no listener of the pool's, so one unheard would crash the
 * process. Returns the function that stops listening (before the client goes back).
 */
function hearErrors(client: pg.PoolClient, onError: (err: Error) => void): () => void {
  client.on('error', onError);
  return () => client.removeListener('error', onError);
}

/** `durable`: connections that commit synchronously; `quick`: with `synchronous_commit = off` (the same database). */
export function groupedRunner(pools: { durable: pg.Pool; quick: pg.Pool }, slots: number): GroupedRunner {
  const waiting: Waiting[] = [];
  let scheduled = false;
  const stats: GroupStats = { groups: 0, statements: 0, pipelined: 0, aside: 0 };

  /** One statement by itself; `free` runs once its round trip is over, before its caller hears of it. */
  const alone = (statement: Waiting, free?: () => void) =>
    (statement.asyncCommit ? pools.quick : pools.durable)
      .query({ name: statement.name, text: statement.text, values: statement.values })
      .finally(() => free?.())
      .then(statement.resolve, statement.reject);

  let lane: Lane | null = null;

  const joinLane = (): Lane => {
    if (!lane) {
      const opened: Lane = { client: pools.durable.connect(), groups: 0 };
      opened.client.then(
        (client) => (opened.stopHearing = hearErrors(client, (err) => (opened.broken ??= err))),
        () => {},
      );
      lane = opened;
    }
    lane.groups++;
    return lane;
  };

  /** A group leaves the lane; the connection goes back to the pool (or is closed, when in doubt) with the last one. */
  function leaveLane(left: Lane, client: pg.PoolClient | null, broken: Error | undefined): void {
    left.broken ??= broken;
    left.groups--;
    if (left.broken || left.groups === 0) {
      if (lane === left) lane = null;
      if (left.groups === 0 && client) {
        left.stopHearing?.();
        client.release(left.broken);
      }
    }
  }

  /**
   * Sends a group and answers its statements: on the lane, or on a connection of its own while the lane is stalled.
   * `free` runs as soon as the round trip is over, before the answers, so the next group goes out while this one's
   * callers carry on.
   */
  async function send(group: Waiting[], free: () => void, onLane: boolean): Promise<void> {
    if (!onLane && group.length === 1) return alone(group[0]!, free);
    const asyncOnly = group.every((statement) => statement.asyncCommit);
    const statements = onLane && asyncOnly ? [asyncCommitStatement, ...group] : group;
    const joined = onLane ? joinLane() : null;
    let client: pg.PoolClient;
    try {
      client = await (joined ? joined.client : (asyncOnly ? pools.quick : pools.durable).connect());
    } catch (err) {
      if (joined) leaveLane(joined, null, err instanceof Error ? err : new Error(String(err)));
      free();
      for (const statement of group) statement.reject(err);
      return;
    }
    const connection = (client as unknown as { connection: Connection }).connection;
    const query = new GroupQuery(statements);
    let failed: unknown;
    let broken: Error | undefined;
    // The lane listens for its client's errors for as long as it holds it; a client of its own, for this group.
    const stopHearing = joined ? null : hearErrors(client, (err) => (broken ??= err));
    try {
      query.writeTo(connection);
      void client.query(query as unknown as pg.QueryConfig);
      await query.done;
    } catch (err) {
      failed = err;
      if (!(err instanceof pg.DatabaseError)) broken = err instanceof Error ? err : new Error(String(err));
      // The server ended the session (shut down, or the backend terminated): the connection goes with it.
      else if (err.severity === 'FATAL' || err.severity === 'PANIC') broken = err;
      else {
        // Parses after the failing statement were skipped; the failing one's own parse may or may not have run.
        for (const i of query.parsedHere) {
          if (i > query.position) delete connection.parsedStatements[statements[i]!.name];
          else if (i === query.position) broken = err;
        }
      }
    } finally {
      if (joined) leaveLane(joined, client, broken);
      else {
        stopHearing?.();
        client.release(broken);
      }
    }
    free();
    const offset = statements.length - group.length;
    if (failed === undefined) group.forEach((statement, i) => statement.resolve({ rows: query.rows[i + offset] ?? [] }));
    // The server rolled the group back: each statement answers for itself. A lost connection may have committed it.
    else if (failed instanceof pg.DatabaseError) await Promise.all(group.map((statement) => alone(statement)));
    else for (const statement of group) statement.reject(failed);
  }

  /** When each group in flight was sent, and whether on the lane. */
  const inFlight = new Set<{ sentAt: number; onLane: boolean }>();
  let stallCheck: NodeJS.Timeout | null = null;

  /** Milliseconds until every group in flight counts as stalled (0: none is in flight, or all are). */
  function untilAllStalled(now: number): number {
    let wait = 0;
    for (const group of inFlight) wait = Math.max(wait, group.sentAt + STALLED_MS - now);
    return wait;
  }

  /** Where the next group goes now: the lane, another connection (the lane is stalled), or nowhere yet (null). */
  function nextGroupGoes(now: number): 'lane' | 'aside' | null {
    if (inFlight.size === 0) return 'lane';
    if (untilAllStalled(now) === 0) return inFlight.size < slots ? 'aside' : null;
    let onLane = 0;
    for (const group of inFlight) if (group.onLane) onLane++;
    return onLane === inFlight.size && onLane < LANE_DEPTH && waiting.length >= PIPELINED_GROUP ? 'lane' : null;
  }

  function pump(): void {
    scheduled = false;
    let now = performance.now();
    for (let goes = nextGroupGoes(now); waiting.length > 0 && goes !== null; goes = nextGroupGoes(now)) {
      const group = waiting.splice(0, MAX_GROUP).sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0));
      const entry = { sentAt: now, onLane: goes === 'lane' };
      stats.groups++;
      stats.statements += group.length;
      if (goes === 'aside') stats.aside++;
      else if (inFlight.size > 0) stats.pipelined++;
      inFlight.add(entry);
      const free = () => {
        if (inFlight.delete(entry)) pump();
      };
      void send(group, free, entry.onLane)
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
    stats: () => ({ ...stats }),
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
