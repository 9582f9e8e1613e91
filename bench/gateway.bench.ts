// POST /v1/ai/text, metered, with API keys of 20 customers (each with a wallet) through the real service, against
// references measured in the same run: the fake OpenAI-compatible upstream alone, a bare Fastify + undici forwarder to
// that upstream (bench/forwarder.ts), and on PostgreSQL that forwarder with the two round trips a metered call may make
// (reserve, then a durable settle: the floor of metering on this machine). Beside the plain metered call, two of its
// kind reported against it: the call with a reasoning effort on a reasoning model (the fake bills reasoning tokens),
// and the same question through the Responses API (stored, its default). At 1 connection (the latency a lone caller
// sees) and 50 (a loaded server), on embedded PGlite and on a fresh PostgreSQL database. Every process is separate: the fake upstream, the
// forwarder, the service (`src/main.ts`) and autocannon here. After each database's run every wallet must equal its
// ledger. The targets are measured in turns (BENCH_SLICES slices each, see measureInterleaved), so a drifting machine
// weighs on the call and its references alike. On PostgreSQL, a second service with OpenTelemetry tracing on exports
// its spans (OTLP/HTTP) to a collector in this process: tracing's cost beside the call without it.
// Beside each service target, the statements and round trips it sent its database per call (its /metrics counters).
// BENCH_JSON=<file> writes the rows; BENCH_CPU_PROF=<dir> profiles the service; BENCH_CORE=1 measures only the plain
// metered call and its references (no reasoning, Responses or tracing rows).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { BENCH_CUSTOMERS, checkWallets, prepareCustomers, serverEnv } from './customers.js';
import { busyPercent, perRequest, postgresBackendsCpuMs, processParty, type CpuParty } from './cpu.js';
import {
  BENCH_CONNECTIONS,
  forEachDatabase,
  measure,
  measureInterleaved,
  printCpuTable,
  printTable,
  startHelper,
  startServer,
  writeJsonIfAsked,
  type BenchRow,
} from './lib.js';

const UPSTREAM_KEY = 'sk-bench-upstream-0001';
const UPSTREAM = 'upstream alone';
const FORWARDER = 'bare forwarder (Fastify + undici)';
const FLOOR = 'forwarder + reserve and settle (2 statements)';
const METERED = `POST /v1/ai/text metered (${BENCH_CUSTOMERS} customers)`;
const REASONING = 'the same with a reasoning effort (openai/gpt-5, low)';
const RESPONSES = 'POST /openai/v1/responses (stored, as by default)';
const TRACED = 'the same with tracing on (OTLP/HTTP to a collector)';

const upstream = await startHelper<{ baseUrl: string }>('fake-openai.ts');
const forwarder = await startHelper<{ baseUrl: string }>('forwarder.ts', { UPSTREAM_BASE_URL: upstream.info.baseUrl, UPSTREAM_API_KEY: UPSTREAM_KEY });
const rows: BenchRow[] = [];
let walletsOk = true;

// A collector's OTLP/HTTP endpoint: reads each export, counts its spans, answers 200.
let spansReceived = 0;
const collector = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans?: { scopeSpans?: { spans?: unknown[] }[] }[] };
    for (const resource of body.resourceSpans ?? []) for (const scope of resource.scopeSpans ?? []) spansReceived += scope.spans?.length ?? 0;
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
const collectorUrl = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;

const messages = [{ role: 'user', content: 'Tell me about lighthouses in one sentence.' }];
const gatewayBody = { model: 'openai/gpt-4o-mini', messages, maxTokens: 64 };
const reasoningBody = { model: 'openai/gpt-5', messages, maxTokens: 64, reasoning: { effort: 'low' } };
const responsesBody = { model: 'openai/gpt-4o-mini', input: messages[0]!.content, max_output_tokens: 64 };
// What each target's load costs in CPU: the load generator (always), the upstream, the app in front of it (forwarder
// or service; with PGlite the database runs inside the service) and PostgreSQL's backends of the bench database.
const upstreamCpu = processParty('upstream', upstream.pid);
const direct = {
  url: `${upstream.info.baseUrl}/chat/completions`,
  method: 'POST' as const,
  headers: { authorization: `Bearer ${UPSTREAM_KEY}` },
  body: { model: 'gpt-4o-mini', messages, max_completion_tokens: 64 },
  cpu: [upstreamCpu],
};
const viaForwarder = {
  url: `${forwarder.info.baseUrl}/v1/ai/text`,
  method: 'POST' as const,
  body: gatewayBody,
  cpu: [upstreamCpu, processParty('app', forwarder.pid)],
};

try {
  await forEachDatabase('gateway', async (database) => {
    const env = serverEnv(database, { OPENAI_API_KEY: UPSTREAM_KEY, OPENAI_BASE_URL: upstream.info.baseUrl });
    const customers = await prepareCustomers(env, { plan: 'starter', apiKeys: true });
    const server = await startServer(env);
    const floor =
      database.kind === 'postgres'
        ? await startHelper<{ baseUrl: string }>('forwarder.ts', {
            UPSTREAM_BASE_URL: upstream.info.baseUrl,
            UPSTREAM_API_KEY: UPSTREAM_KEY,
            FLOOR_DATABASE_URL: env.DATABASE_URL!,
          })
        : null;
    const databaseName = env.DATABASE_URL ? new URL(env.DATABASE_URL).pathname.slice(1) : null;
    const postgresCpu: CpuParty[] = databaseName ? [{ name: 'PostgreSQL', read: () => postgresBackendsCpuMs(databaseName) }] : [];
    const traced =
      database.kind === 'postgres' && !process.env.BENCH_CORE
        ? await startServer({ ...env, OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl, OTEL_SERVICE_NAME: 'storefront-bench' })
        : null;
    const viaFloor = floor && {
      url: `${floor.info.baseUrl}/v1/ai/text`,
      method: 'POST' as const,
      body: gatewayBody,
      cpu: [upstreamCpu, processParty('app', floor.pid), ...postgresCpu],
    };
    try {
      const metered = {
        url: `${server.url}/v1/ai/text`,
        method: 'POST' as const,
        body: gatewayBody,
        rotateHeaders: customers.map((c) => ({ authorization: `Bearer ${c.apiKey}` })),
        cpu: [upstreamCpu, processParty('app', server.pid), ...postgresCpu],
        databaseCounts: () => server.databaseCounts(),
      };
      const reasoning = { ...metered, body: reasoningBody };
      const responses = { ...metered, url: `${server.url}/openai/v1/responses`, body: responsesBody };
      const withTracing = traced && {
        ...metered,
        url: `${traced.url}/v1/ai/text`,
        cpu: [upstreamCpu, processParty('app', traced.pid), ...postgresCpu],
        databaseCounts: () => traced.databaseCounts(),
      };
      for (const target of [metered, reasoning, responses, ...(withTracing ? [withTracing] : [])]) {
        const probe = await fetch(target.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...target.rotateHeaders[0] },
          body: JSON.stringify(target.body),
        });
        if (probe.status !== 200) throw new Error(`the gateway answered ${probe.status} on ${target.url}: ${await probe.text()}`);
      }

      // Warm-up: JIT, connection pools and caches in their steady state.
      for (const target of [metered, reasoning, responses, viaForwarder, direct, ...(viaFloor ? [viaFloor] : []), ...(withTracing ? [withTracing] : [])])
        await measure('warm-up', database.kind, { ...target, connections: 10, durationSeconds: 2 });
      for (const connections of BENCH_CONNECTIONS) {
        const targets = [
          { target: UPSTREAM, options: direct },
          { target: FORWARDER, options: viaForwarder },
          ...(viaFloor ? [{ target: FLOOR, options: viaFloor }] : []),
          { target: METERED, options: metered },
          ...(process.env.BENCH_CORE
            ? []
            : [
                { target: REASONING, options: reasoning },
                { target: RESPONSES, options: responses },
              ]),
          ...(withTracing ? [{ target: TRACED, options: withTracing }] : []),
        ];
        rows.push(...(await measureInterleaved(database.kind, connections, targets)));
      }
      // Requests autocannon abandoned at the end of its run finish before the check.
      await new Promise((resolve) => setTimeout(resolve, 500));
      walletsOk = (await checkWallets(server.url, customers)) && walletsOk;
    } finally {
      await floor?.stop();
      await traced?.stop();
      await server.stop();
    }
  });
} finally {
  await forwarder.stop();
  await upstream.stop();
  collector.close();
}

/**
 * The call's CPU cost against the forwarder's, the ceiling it sets: were the machine as busy under the call as under
 * the forwarder, the call's req/s could be at most the forwarder's times their ratio of CPU per request.
 */
function cpuCeiling(call: BenchRow, forwarder: BenchRow): string | null {
  if (!call.cpu || !forwarder.cpu) return null;
  const callUs = perRequest(call.cpu).total;
  const forwarderUs = perRequest(forwarder.cpu).total;
  return (
    `CPU: the metered call costs the machine ${Math.round(callUs)} µs per request, the forwarder ${Math.round(forwarderUs)} µs; at the forwarder's ` +
    `machine use (${busyPercent(forwarder.cpu)}% busy, against ${busyPercent(call.cpu)}% under the call) that allows the call at most ${((100 * forwarderUs) / callUs).toFixed(0)}% of its req/s`
  );
}

const reference = (row: BenchRow, target: string) => rows.find((r) => r.target === target && r.database === row.database && r.connections === row.connections);
printTable('Metered text call vs the upstream alone', rows, (r) => (r.target === UPSTREAM ? undefined : reference(r, UPSTREAM)), 'upstream');
printCpuTable('CPU per request (user + system time by process; the machine has ' + availableParallelism() + ' processors)', rows);
console.log('\nRatios in this run (targets on PostgreSQL: ≥ 20% of the forwarder at 50 connections, ≤ +2 ms p50 at 1):');
for (const database of new Set(rows.map((r) => r.database))) {
  for (const connections of BENCH_CONNECTIONS) {
    const metered = rows.find((r) => r.target === METERED && r.database === database && r.connections === connections);
    const fwd = metered && reference(metered, FORWARDER);
    const up = metered && reference(metered, UPSTREAM);
    if (!metered || !fwd || !up) continue;
    const floor = reference(metered, FLOOR);
    const vsFloor = floor
      ? `; the floor (forwarder + 2 statements) does ${floor.rps} req/s = ${((100 * floor.rps) / fwd.rps).toFixed(0)}% of the forwarder, p50 +${(floor.p50 - up.p50).toFixed(1)} ms, and the metered call ${((100 * metered.rps) / floor.rps).toFixed(0)}% of the floor`
      : '';
    console.log(
      `  ${database}, ${connections} conn: metered ${metered.rps} req/s = ${((100 * metered.rps) / fwd.rps).toFixed(0)}% of the forwarder's ${fwd.rps}; p50 +${(metered.p50 - up.p50).toFixed(1)} ms over the upstream (forwarder +${(fwd.p50 - up.p50).toFixed(1)} ms)${vsFloor}`,
    );
    const cpuBound = cpuCeiling(metered, fwd);
    if (cpuBound) console.log(`    ${cpuBound}`);
    for (const other of [REASONING, RESPONSES, TRACED]) {
      const row = reference(metered, other);
      if (row)
        console.log(
          `    ${other}: ${row.rps} req/s = ${((100 * row.rps) / metered.rps).toFixed(0)}% of the plain metered call, p50 ${row.p50 - metered.p50 >= 0 ? '+' : ''}${(row.p50 - metered.p50).toFixed(1)} ms`,
        );
    }
  }
}
if (spansReceived > 0) console.log(`\nThe collector received ${spansReceived} spans from the traced service.`);
await writeJsonIfAsked(rows);
if (!walletsOk) {
  console.error('A wallet does not equal its ledger.');
  process.exit(1);
}
