// GET /v1/usage (a feed page: first page, a page deep behind a cursor, filtered pages) and GET /v1/usage/summary over
// 1,000,000 usage records on a fresh PostgreSQL database, against GET /healthz on the same server, at 1 and 50
// connections. The rows are loaded in one INSERT ... SELECT generate_series: 100 users (the 20 signed-in bench
// customers among them) with 10,000 records each over the last 60 days. Prints the EXPLAIN plans of a page and of a
// summary. Target: p99 of a feed page <= 20 ms. BENCH_JSON=<file> writes the rows.
import pg from 'pg';
import { BENCH_CUSTOMERS, prepareCustomers, serverEnv } from './customers.js';
import { BENCH_CONNECTIONS, createBenchDatabase, measure, printTable, startServer, writeJsonIfAsked, type BenchRow } from './lib.js';

const ROWS = Number(process.env.BENCH_USAGE_ROWS ?? 1_000_000);
const USERS = 100;
const DAYS = 60;

const HEALTH = 'GET /healthz';
const rows: BenchRow[] = [];

let database;
try {
  database = await createBenchDatabase('postgres', 'usage_feed');
} catch (err) {
  console.warn(`Skipping the usage feed bench: no PostgreSQL (${(err as Error).message}); set BENCH_POSTGRES_URL.`);
  process.exit(0);
}

try {
  const env = serverEnv(database);
  const customers = await prepareCustomers(env, { count: BENCH_CUSTOMERS });
  const client = new pg.Client({ connectionString: env.DATABASE_URL });
  await client.connect();
  try {
    const users = [...customers.map((c) => c.userId), ...Array.from({ length: USERS - customers.length }, () => crypto.randomUUID())];
    const { rows: models } = await client.query<{ id: string }>(
      `select id from models where slug in ('local/text', 'local/image', 'local/audio') order by slug`,
    );
    const started = performance.now();
    await client.query(
      `insert into usage_records (id, user_id, model_id, request_id, operation, status, input_units, output_units, credits_consumed, latency_ms, metadata, created_at)
       select gen_random_uuid(),
              ($1::uuid[])[1 + g % ${USERS}],
              ($2::uuid[])[1 + g % 3],
              'bench-' || g,
              (array['text.generate', 'image.generate', 'prompt.enhance', 'audio.generate'])[1 + (g / ${USERS}) % 4],
              case (g / ${USERS}) % 20 when 0 then 'FAILED' when 1 then 'TIMEOUT' when 2 then 'PARTIAL' else 'SUCCESS' end,
              g % 500, g % 900, g % 5000, 50 + g % 2000, '{}'::jsonb,
              now() - make_interval(secs => g * ${(DAYS * 86_400) / ROWS})
       from generate_series(1, ${ROWS}) as g`,
      [users, models.map((m) => m.id)],
    );
    await client.query('vacuum analyze usage_records');
    console.log(
      `Loaded ${ROWS.toLocaleString('en')} usage records for ${USERS} users in ${((performance.now() - started) / 1000).toFixed(1)} s (with VACUUM ANALYZE).`,
    );

    const probeUser = customers[0]!.userId;
    const { rows: deep } = await client.query<{ id: string }>(
      `select id from usage_records where user_id = $1 order by created_at desc, id desc offset 5000 limit 1`,
      [probeUser],
    );
    const cursor = deep[0]!.id;
    const plan = async (label: string, text: string, values: unknown[]) => {
      const { rows: lines } = await client.query<{ 'QUERY PLAN': string }>(`explain (analyze, buffers, costs off) ${text}`, values);
      console.log(`\nEXPLAIN ${label}\n${lines.map((l) => `  ${l['QUERY PLAN']}`).join('\n')}`);
    };
    // The statements the service sends (src/modules/usage/feed.ts), with the probe user's values.
    await plan(
      'feed page after a cursor (limit 20)',
      `select * from usage_records where user_id = $1 and (created_at, id) < (select c.created_at, c.id from usage_records c where c.id = $2 and c.user_id = $1) order by created_at desc, id desc limit 21`,
      [probeUser, cursor],
    );
    await plan(
      'feed page filtered by status FAILED (limit 20)',
      `select * from usage_records where user_id = $1 and status = 'FAILED' order by created_at desc, id desc limit 21`,
      [probeUser],
    );
    await plan(
      'summary (month)',
      `select grouping(operation, status) = 0 as by_operation, operation, status, model_id, count(*)::int, coalesce(sum(input_units), 0)::bigint, coalesce(sum(output_units), 0)::bigint, coalesce(sum(credits_consumed), 0)::bigint, coalesce(sum(latency_ms), 0)::bigint
       from usage_records where user_id = $1 and created_at >= now() - interval '30 days' group by grouping sets ((operation, status), (model_id))`,
      [probeUser],
    );

    const server = await startServer(env);
    try {
      const auth = customers.map((c) => ({ authorization: `Bearer ${c.accessToken}` }));
      const one = { authorization: `Bearer ${customers[0]!.accessToken}` };
      const targets: Array<[string, { url: string; rotateHeaders?: Record<string, string>[]; headers?: Record<string, string> }]> = [
        [`GET /v1/usage first page (${customers.length} users)`, { url: `${server.url}/v1/usage`, rotateHeaders: auth }],
        ['GET /v1/usage page 251 (cursor)', { url: `${server.url}/v1/usage?cursor=${cursor}`, headers: one }],
        ['GET /v1/usage?limit=100', { url: `${server.url}/v1/usage?limit=100`, rotateHeaders: auth }],
        ['GET /v1/usage?status=FAILED', { url: `${server.url}/v1/usage?status=FAILED`, rotateHeaders: auth }],
        ['GET /v1/usage/summary (month)', { url: `${server.url}/v1/usage/summary`, rotateHeaders: auth }],
        ['GET /v1/usage/summary?window=day', { url: `${server.url}/v1/usage/summary?window=day`, rotateHeaders: auth }],
      ];
      for (const [, target] of targets) {
        const probe = await fetch(target.url, { headers: target.headers ?? target.rotateHeaders![0] });
        if (probe.status !== 200) throw new Error(`${target.url} answered ${probe.status}: ${await probe.text()}`);
      }
      await measure('warm-up', 'postgres', { ...targets[0]![1], connections: 10, durationSeconds: 2 });
      for (const connections of BENCH_CONNECTIONS) {
        rows.push(await measure(HEALTH, 'postgres', { url: `${server.url}/healthz`, connections }));
        for (const [name, target] of targets) rows.push(await measure(name, 'postgres', { ...target, connections }));
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      await server.stop();
    }
  } finally {
    await client.end();
  }
} finally {
  await database.cleanup();
}

printTable(
  `Usage feed and summary over ${ROWS.toLocaleString('en')} records (target: feed page p99 <= 20 ms)`,
  rows,
  (r) => (r.target === HEALTH ? undefined : rows.find((h) => h.target === HEALTH && h.connections === r.connections)),
  'healthz',
);
await writeJsonIfAsked(rows);
