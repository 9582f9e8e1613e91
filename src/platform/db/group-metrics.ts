import type { Metrics } from '../metrics/metrics.js';
import { groupStatsOf } from './bound.js';
import type { Db } from './database.js';

/**
 * The group commit's counters (pg-grouped.ts), read from the runner when scraped: groups sent and the statements they
 * carried (their ratio is the mean group), how many were written behind a group in flight, and how many went on a
 * connection of their own because the groups in flight were stalled (a lock held long). Nothing on PGlite.
 */
export function registerGroupMetrics(metrics: Metrics, db: Db): void {
  const series = [
    { name: 'storefront_db_groups_total', help: 'Groups of statements sent to PostgreSQL in one round trip and one commit (group commit)', key: 'groups' },
    {
      name: 'storefront_db_grouped_statements_total',
      help: 'Statements sent in groups (divided by storefront_db_groups_total: the mean group)',
      key: 'statements',
    },
    { name: 'storefront_db_groups_pipelined_total', help: 'Groups written behind another one still in flight on the same connection', key: 'pipelined' },
    {
      name: 'storefront_db_groups_aside_total',
      help: 'Groups sent on another connection because every group in flight was stalled (waiting for a lock)',
      key: 'aside',
    },
  ] as const;
  for (const { name, help, key } of series) {
    metrics.counter({
      name,
      help,
      collect() {
        const stats = groupStatsOf(db);
        this.reset();
        if (stats) this.inc(stats[key]);
      },
    });
  }
}
