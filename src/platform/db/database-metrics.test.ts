import { afterAll, beforeAll, expect, it } from 'vitest';
import { openTestDatabase } from '../../../test/helpers/test-database.js';
import { createMetrics } from '../metrics/metrics.js';
import { bound, runBound } from './bound.js';
import { registerDatabaseMetrics } from './database-metrics.js';

let opened: Awaited<ReturnType<typeof openTestDatabase>>;
beforeAll(async () => {
  opened = await openTestDatabase();
});
afterAll(async () => {
  await opened?.close();
});

const value = async (metrics: ReturnType<typeof createMetrics>, name: string) => (await metrics.registry.getSingleMetric(name)!.get()).values[0]?.value ?? 0;

it('counts statements, round trips, and the groups with their statements when scraped (groups on PostgreSQL only)', async () => {
  const metrics = createMetrics({ processMetrics: false });
  registerDatabaseMetrics(metrics, opened.database);
  const names = ['storefront_db_statements_total', 'storefront_db_round_trips_total', 'storefront_db_groups_total', 'storefront_db_grouped_statements_total'];
  const before = await Promise.all(names.map((name) => value(metrics, name)));
  const select = (n: number) => runBound(opened.database.db, bound('select $1::int as n', [n]), { group: `g${n}` });
  await Promise.all([1, 2, 3].map(select));
  const after = await Promise.all(names.map((name) => value(metrics, name)));
  const sent = after.map((n, i) => n - before[i]!);
  // PostgreSQL: one group of three between its BEGIN and COMMIT, in one round trip; PGlite: three statements by themselves.
  expect(sent).toEqual(opened.database.kind === 'pg' ? [5, 1, 1, 3] : [3, 3, 0, 0]);
  const text = await metrics.registry.metrics();
  for (const name of ['storefront_db_groups_pipelined_total', 'storefront_db_groups_aside_total']) expect(text).toContain(`# TYPE ${name} counter`);
});
