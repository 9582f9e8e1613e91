import pg from 'pg';
import { inOneWrite } from './pg-pipelined-client.js';
import type { StatementCounts } from './statement-counts.js';

/**
 * Group commit for the metering hot path on PostgreSQL. Statements sent while a group is in flight wait, and the next
 * group sends all that waited in one write on a connection in node-postgres' pipeline mode (its documented
 * `pipeline: true`): BEGIN, each statement as a named prepared statement, COMMIT, so they share one transaction and
 * its commit (one WAL flush, one wake-up of the server) and one round trip. Alone (a quiet service) a statement goes at
 * once.
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
 * All or nothing: when one statement of a group fails, PostgreSQL rolls the whole group back (its COMMIT answers
 * ROLLBACK); each statement is then sent again on its own and answers for itself, so a group never changes what a
 * statement does. Statements of a group run in the order of their `order` key (the wallet's owner): groups on two
 * connections take wallet locks in the same order, so they never deadlock.
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
  values: unknown[];
  order: string;
  asyncCommit: boolean;
  resolve: (result: { rows: unknown[] }) => void;
  reject: (err: unknown) => void;
}

const MAX_GROUP = 64;
/** Far above a group's round trip under load (p99 ~9 ms on the bench's machine), far below a lock held for long. */
const STALLED_MS = 50;
/** Groups in flight on the lane at once: one being run by the server, one written behind it. */
const LANE_DEPTH = 2;
/**
 * The fewest statements sent behind a group in flight: below it they wait for the lane to empty, as a group's commit
 * and round trip would cost more than the wait (measured at 50 connections: 6 waiting did worse than 16).
 */
const PIPELINED_GROUP = 16;

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

/** The BEGIN of a group of only `asyncCommit` statements (a simple query may hold two). */
const BEGIN_ASYNC = 'begin; set local synchronous_commit to off';

/** The server ended the session (shut down, or the backend terminated): the connection goes with it. */
const isFatal = (err: unknown) => err instanceof pg.DatabaseError && (err.severity === 'FATAL' || err.severity === 'PANIC');

const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)));

/**
 * The pools of one database: `durable` commits synchronously, `quick` with `synchronous_commit = off`, and `pipelined`
 * (durable, in node-postgres' pipeline mode) carries the groups.
 */
export interface GroupPools {
  durable: pg.Pool;
  quick: pg.Pool;
  pipelined: pg.Pool;
}

/** `counts`: the database's; a group's round trip is counted here (its statements by the pipelined client). */
export function groupedRunner(pools: GroupPools, slots: number, counts: StatementCounts): GroupedRunner {
  const waiting: Waiting[] = [];
  let scheduled = false;
  const stats: GroupStats = { groups: 0, statements: 0, pipelined: 0, aside: 0 };

  /**
   * One statement by itself; `free` runs once its round trip is over, before its caller hears of it. When the server
   * ends the session before answering (a failover, say), the statement rolled back with it and is sent once more, as a
   * group's statements are.
   */
  const alone = (statement: Waiting, free?: () => void, again = false): Promise<void> =>
    (statement.asyncCommit ? pools.quick : pools.durable)
      .query({ name: statement.name, text: statement.text, values: statement.values })
      .finally(() => free?.())
      .then(statement.resolve, (err: unknown) => (again && isFatal(err) ? alone(statement) : statement.reject(err)));

  let lane: Lane | null = null;

  const joinLane = (): Lane => {
    if (!lane) {
      const opened: Lane = { client: pools.pipelined.connect(), groups: 0 };
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
    if (group.length === 1) return alone(group[0]!, free, true);
    const joined = onLane ? joinLane() : null;
    let client: pg.PoolClient;
    try {
      client = await (joined ? joined.client : pools.pipelined.connect());
    } catch (err) {
      if (joined) leaveLane(joined, null, asError(err));
      free();
      for (const statement of group) statement.reject(err);
      return;
    }
    let broken: Error | undefined;
    // The lane listens for its client's errors for as long as it holds it; a client of its own, for this group.
    const stopHearing = joined ? null : hearErrors(client, (err) => (broken ??= err));
    // In order, without waiting for the one before (node-postgres' pipeline mode), in one write.
    counts.roundTrips++;
    const [begun, answers, committed] = inOneWrite(client, () => {
      const begin = client.query(group.every((statement) => statement.asyncCommit) ? BEGIN_ASYNC : 'begin');
      const each = group.map((statement) => client.query({ name: statement.name, text: statement.text, values: statement.values }));
      return [begin, each, client.query('commit')] as const;
    });
    const [commit, begin, ...answered] = await Promise.allSettled<pg.QueryResult>([committed, begun, ...answers]);
    const failures = [begin, ...answered].flatMap((result) => (result?.status === 'rejected' ? [result.reason as unknown] : []));
    // The server ended the session before the COMMIT: the group rolled back. Lost without a word, or at the COMMIT itself,
    // the group is in doubt (it may have committed) and fails.
    const endedBefore = failures.find(isFatal);
    const commitError = commit?.status === 'rejected' ? (commit.reason as unknown) : undefined;
    const inDoubt = commitError !== undefined && endedBefore === undefined && (isFatal(commitError) || !(commitError instanceof pg.DatabaseError));
    if (endedBefore !== undefined || inDoubt) broken ??= asError(commitError ?? endedBefore);
    if (joined) leaveLane(joined, client, broken);
    else {
      stopHearing?.();
      client.release(broken);
    }
    free();
    if (commit?.status === 'fulfilled' && commit.value.command === 'COMMIT') {
      group.forEach((statement, i) => {
        const result = answered[i]!;
        if (result.status === 'fulfilled') statement.resolve(result.value);
        else statement.reject(result.reason); // refused before it reached the server (a value it cannot send)
      });
    } else if (inDoubt) for (const statement of group) statement.reject(commitError);
    // The server rolled the group back: each statement answers for itself.
    else await Promise.all(group.map((statement) => alone(statement)));
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
        waiting.push({ text, name, values, order, asyncCommit, resolve, reject });
        // Statements sent in the same turn of the event loop share a group even when a slot is free.
        if (!scheduled) {
          scheduled = true;
          queueMicrotask(pump);
        }
      });
    },
  };
}
