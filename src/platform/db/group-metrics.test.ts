import { afterAll, beforeAll, expect, it } from 'vitest';
import { openTestDatabase } from '../../../test/helpers/test-database.js';
import { createMetrics } from '../metrics/metrics.js';
import { bound, runBound } from './bound.js';
import { registerGroupMetrics } from './group-metrics.js';

let opened: Awaited<ReturnType<typeof openTestDatabase>>;
beforeAll(async () => {
  opened = await openTestDatabase();
});
afterAll(async () => {
  await opened?.close();
});

const value = async (metrics: ReturnType<typeof createMetrics>, name: string) => (await metrics.registry.getSingleMetric(name)!.get()).values[0]?.value ?? 0;

it('counts the groups and their statements when scraped (PostgreSQL), and nothing on the embedded database', async () => {
  const metrics = createMetrics({ processMetrics: false });
  registerGroupMetrics(metrics, opened.database.db);
  const groups = await value(metrics, 'storefront_db_groups_total');
  const statements = await value(metrics, 'storefront_db_grouped_statements_total');
  const select = (n: number) => runBound(opened.database.db, bound('select $1::int as n', [n]), { group: `g${n}` });
  await Promise.all([1, 2, 3].map(select));
  const grouped = opened.database.kind === 'pg';
  expect(await value(metrics, 'storefront_db_groups_total')).toBe(groups + (grouped ? 1 : 0));
  expect(await value(metrics, 'storefront_db_grouped_statements_total')).toBe(statements + (grouped ? 3 : 0));
  const text = await metrics.registry.metrics();
  for (const name of ['storefront_db_groups_pipelined_total', 'storefront_db_groups_aside_total']) expect(text).toContain(`# TYPE ${name} counter`);
});
