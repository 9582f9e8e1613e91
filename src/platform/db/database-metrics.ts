import type { Metrics } from '../metrics/metrics.js';
import { groupStatsOf } from './bound.js';
import type { Database } from './database.js';
import type { GroupStats } from './pg-grouped.js';
import type { StatementCounts } from './statement-counts.js';

const counters: { name: string; help: string; read: (counts: StatementCounts, groups: GroupStats | null) => number | undefined }[] = [
  {
    name: 'storefront_db_statements_total',
    help: 'Statements sent to the database (BEGIN and COMMIT included, each statement of a group)',
    read: (counts) => counts.statements,
  },
  {
    name: 'storefront_db_round_trips_total',
    help: "Round trips to the database: waits for the server's answer (a statement sent alone, or a group)",
    read: (counts) => counts.roundTrips,
  },
  {
    name: 'storefront_db_groups_total',
    help: 'Groups of statements sent to PostgreSQL in one round trip and one commit (group commit)',
    read: (_, g) => g?.groups,
  },
  {
    name: 'storefront_db_grouped_statements_total',
    help: 'Statements sent in groups (divided by storefront_db_groups_total: the mean group)',
    read: (_, g) => g?.statements,
  },
  {
    name: 'storefront_db_groups_pipelined_total',
    help: 'Groups written behind another one still in flight on the same connection',
    read: (_, g) => g?.pipelined,
  },
  {
    name: 'storefront_db_groups_aside_total',
    help: 'Groups sent on another connection because every group in flight was stalled (waiting for a lock)',
    read: (_, g) => g?.aside,
  },
];

/**
 * The database's counters, read when scraped: statements and round trips sent (statement-counts.ts), and the group
 * commit's groups (pg-grouped.ts): groups sent and the statements they carried (their ratio is the mean group), how
 * many were written behind a group in flight, and how many went on a connection of their own because the groups in
 * flight were stalled (a lock held long). No group series has a value on PGlite.
 */
export function registerDatabaseMetrics(metrics: Metrics, database: Database): void {
  for (const { name, help, read } of counters) {
    metrics.counter({
      name,
      help,
      collect() {
        const value = read(database.statementCounts(), groupStatsOf(database.db));
        this.reset();
        if (value !== undefined) this.inc(value);
      },
    });
  }
}
