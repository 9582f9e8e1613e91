import type { Metrics } from '../metrics/metrics.js';
import type { Database } from './database.js';

/** Counts the listening connection's returns after a loss, each of which dropped this instance's caches. */
export function registerListenerMetrics(metrics: Metrics, database: Database): void {
  const reconnects = metrics.counter({
    name: 'storefront_db_listener_reconnects_total',
    help: 'Times the LISTEN connection came back after a loss (every in-process cache was dropped); nothing on PGlite',
  });
  database.onListenerReset(() => reconnects.inc());
}
