import { spawn, type ChildProcess } from 'node:child_process';
import { startCommand } from './start-command.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import pg from 'pg';
import { addCpu, busyPercent, measureCpu, perRequest, processParty, type CpuParty, type LoadCpu } from './cpu.js';

const root = path.join(import.meta.dirname, '..');

/** Every bench server signs and verifies tokens with this key, so tokens made during setup work on the server. */
export const BENCH_JWT_SECRET = 'bench-secret-that-is-long-enough-for-hs256';
/** Production mode wants /metrics behind a token or on a port of its own. */
export const BENCH_METRICS_TOKEN = 'bench-metrics-token-long-enough';
export const BENCH_SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
/** The connection counts every table is measured at: one caller alone, and a loaded server. */
export const BENCH_CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? '1,50').split(',').map(Number);

export interface BenchServer {
  url: string;
  /** The service's process, for CPU accounting (bench/cpu.ts). */
  pid: number | undefined;
  /** What the service sent its database so far, from its /metrics. */
  databaseCounts(): Promise<DatabaseCounts>;
  stop(): Promise<void>;
}

/** Statements and round trips a service sent its database (its `storefront_db_*_total` counters). */
export interface DatabaseCounts {
  statements: number;
  roundTrips: number;
}

/** Reads a service's database counters from its /metrics. */
export async function databaseCountsOf(url: string): Promise<DatabaseCounts> {
  const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${BENCH_METRICS_TOKEN}` } });
  if (!response.ok) throw new Error(`/metrics answered ${response.status}`);
  const text = await response.text();
  const counter = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { statements: counter('storefront_db_statements_total'), roundTrips: counter('storefront_db_round_trips_total') };
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Node flags for a server under test: with `BENCH_CPU_PROF=<dir>` it writes a V8 CPU profile there when it stops
 * (summarise it with `npx tsx bench/cpu-profile-summary.ts <file>`).
 */
const profileFlags = (): string[] => (process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []);

let built: Promise<void> | null = null;
/** `npm start`'s build (esbuild bundle of src/ into dist/), once per bench process. */
const buildOnce = () =>
  (built ??= new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, ['scripts/build.mjs'], { cwd: root, stdio: 'inherit' });
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`the build failed (${code})`))));
  }));

/**
 * Starts the real service in its own process, so the load generator does not share its event loop: what `npm start`
 * runs (the build, then its command: see `startCommand`).
 */
export async function startServer(env: Record<string, string> = {}): Promise<BenchServer> {
  await buildOnce();
  const port = await freePort();
  const ownDataDir = env.DATA_DIR ? null : await mkdtemp(path.join(os.tmpdir(), 'storefront-bench-'));
  const start = startCommand(root);
  const child: ChildProcess = spawn(process.execPath, [...profileFlags(), ...start.nodeArgs], {
    cwd: root,
    env: {
      ...process.env,
      ...start.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_MINUTE: '10000000',
      NODE_ENV: 'production',
      METRICS_TOKEN: BENCH_METRICS_TOKEN,
      JWT_SECRET: BENCH_JWT_SECRET,
      ...(ownDataDir ? { DATA_DIR: ownDataDir } : {}),
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error('the service exited during start');
    try {
      if ((await fetch(`${url}/readyz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('the service did not become ready');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    pid: child.pid,
    databaseCounts: () => databaseCountsOf(url),
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      if (ownDataDir) await rm(ownDataDir, { recursive: true, force: true });
    },
  };
}

/** Runs a bench/*.ts helper in its own process; it prints one JSON line (e.g. its base URL) once it listens. */
export async function startHelper<T>(script: string, env: Record<string, string> = {}): Promise<{ info: T; pid: number | undefined; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, script)], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`${script} exited (${code})`)));
  });
  return {
    info: JSON.parse(line) as T,
    pid: child.pid,
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Databases: embedded PGlite in a temporary directory, or a fresh PostgreSQL database created (and dropped) here.

export type BenchDatabaseKind = 'embedded' | 'postgres';

export interface BenchDatabase {
  kind: BenchDatabaseKind;
  /** What a server (or the in-process setup) needs to use this database. */
  env: Record<string, string>;
  cleanup(): Promise<void>;
}

/** `BENCH_DATABASES` (default `embedded,postgres`). */
export const benchDatabaseKinds = (): BenchDatabaseKind[] =>
  (process.env.BENCH_DATABASES ?? 'embedded,postgres').split(',').map((k) => k.trim()) as BenchDatabaseKind[];

/** The server a fresh PostgreSQL database is created on: `BENCH_POSTGRES_URL`, else `DATABASE_URL`, else the local one. */
const postgresAdminUrl = () => process.env.BENCH_POSTGRES_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function adminQuery(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

export async function createBenchDatabase(kind: BenchDatabaseKind, label: string): Promise<BenchDatabase> {
  if (kind === 'embedded') {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), `storefront-bench-${label}-`));
    return { kind, env: { DATA_DIR: dataDir }, cleanup: () => rm(dataDir, { recursive: true, force: true }) };
  }
  const adminUrl = postgresAdminUrl();
  const name = `sf_bench_${label}_${process.pid}`;
  await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const dataDir = await mkdtemp(path.join(os.tmpdir(), `storefront-bench-${label}-`));
  return {
    kind,
    env: { DATABASE_URL: url.toString(), DATA_DIR: dataDir },
    async cleanup() {
      await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Runs `body` once per database of `BENCH_DATABASES`; a PostgreSQL server that cannot be reached is reported and skipped. */
export async function forEachDatabase(label: string, body: (database: BenchDatabase) => Promise<void>): Promise<void> {
  for (const kind of benchDatabaseKinds()) {
    let database: BenchDatabase;
    try {
      database = await createBenchDatabase(kind, label);
    } catch (err) {
      console.warn(`\nSkipping ${kind}: ${(err as Error).message} (set BENCH_POSTGRES_URL, or BENCH_DATABASES=embedded)`);
      continue;
    }
    try {
      await body(database);
    } finally {
      await database.cleanup();
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Load and tables.

/** One row of a bench table; `BENCH_JSON=<file>` writes the rows as a JSON array. */
export interface BenchRow {
  target: string;
  database: BenchDatabaseKind;
  connections: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** What the load cost each process, with the requests it completed (when it was given CPU parties); not in BENCH_JSON. */
  cpu?: LoadCpu | null;
  /** Statements and round trips to the database per request (when the target's counters were given). */
  perCall?: DatabaseCounts & { requests: number };
}

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: unknown;
  connections: number;
  durationSeconds?: number;
  /** Each connection cycles through these headers (e.g. 20 customers' credentials). */
  rotateHeaders?: Record<string, string>[];
  /** Processes whose CPU time the load is charged with (bench/cpu.ts); the load generator is always one. */
  cpu?: CpuParty[];
  /** The target's database counters (a service's `databaseCounts`), read before and after the load. */
  databaseCounts?: () => Promise<DatabaseCounts>;
}

export async function measure(target: string, database: BenchDatabaseKind, options: LoadOptions): Promise<BenchRow> {
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers = { ...(body ? { 'content-type': 'application/json' } : {}), ...options.headers };
  const parties = options.cpu ? [processParty('load generator', process.pid), ...options.cpu] : [];
  const countsBefore = await options.databaseCounts?.();
  const { result, cpu } = await measureCpu(parties, () =>
    autocannon({
      url: options.url,
      method: options.method ?? 'GET',
      headers,
      body,
      connections: options.connections,
      duration: options.durationSeconds ?? BENCH_SECONDS,
      ...(options.rotateHeaders?.length ? { requests: options.rotateHeaders.map((extra) => ({ headers: { ...headers, ...extra } })) } : {}),
    }),
  );
  return {
    target,
    database,
    connections: options.connections,
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    ...(options.cpu ? { cpu: cpu && { ...cpu, requests: result.requests.total } } : {}),
    ...(countsBefore ? { perCall: perCall(countsBefore, await options.databaseCounts!(), result.requests.total) } : {}),
  };
}

function perCall(before: DatabaseCounts, after: DatabaseCounts, requests: number): DatabaseCounts & { requests: number } {
  const per = (n: number) => (requests > 0 ? n / requests : 0);
  return { statements: per(after.statements - before.statements), roundTrips: per(after.roundTrips - before.roundTrips), requests };
}

/** Per-call counts of slices, weighted by their requests. */
function mergePerCall(runs: BenchRow[]): BenchRow['perCall'] {
  const measured = runs.flatMap((run) => (run.perCall ? [run.perCall] : []));
  const requests = measured.reduce((sum, one) => sum + one.requests, 0);
  if (measured.length === 0 || requests === 0) return undefined;
  const total = (key: 'statements' | 'roundTrips') => measured.reduce((sum, one) => sum + one[key] * one.requests, 0) / requests;
  return { statements: total('statements'), roundTrips: total('roundTrips'), requests };
}

/** How many slices `measureInterleaved` cuts each target's load into (`BENCH_SLICES`, default 3). */
export const BENCH_SLICES = Math.max(1, Number(process.env.BENCH_SLICES ?? 3));

/**
 * Measures targets that are compared with each other (a call and its in-run reference) in turns: each target's load is
 * cut into BENCH_SLICES slices of about BENCH_SECONDS / BENCH_SLICES (at least 2 s), run round-robin, so a machine whose
 * speed drifts over a run (a shared VM) weighs on every target alike instead of on whichever ran in its slow minute.
 * A row's req/s is the mean over its slices, its p50 the median slice's, its p99 the worst slice's, its errors the sum.
 */
export async function measureInterleaved(
  database: BenchDatabaseKind,
  connections: number,
  targets: { target: string; options: Omit<LoadOptions, 'connections'> }[],
): Promise<BenchRow[]> {
  const seconds = Math.max(2, Math.round(BENCH_SECONDS / BENCH_SLICES));
  const slices = targets.map((): BenchRow[] => []);
  for (let slice = 0; slice < BENCH_SLICES; slice++) {
    for (const [i, { target, options }] of targets.entries())
      slices[i]!.push(await measure(target, database, { ...options, connections, durationSeconds: seconds }));
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  return targets.map(({ target }, i) => {
    const runs = slices[i]!;
    return {
      target,
      database,
      connections,
      rps: Math.round(runs.reduce((sum, run) => sum + run.rps, 0) / runs.length),
      p50: median(runs.map((run) => run.p50)),
      p99: Math.max(...runs.map((run) => run.p99)),
      errors: runs.reduce((sum, run) => sum + run.errors, 0),
      ...(runs.some((run) => run.cpu) ? { cpu: runs.reduce<LoadCpu | null>((sum, run) => addCpu(sum, run.cpu), null) } : {}),
      ...(runs.some((run) => run.perCall) ? { perCall: mergePerCall(runs) } : {}),
    };
  });
}

/** Prints rows as a table with each row's ratio to its reference row (same database and connections). */
export function printTable(title: string, rows: BenchRow[], referenceOf: (row: BenchRow) => BenchRow | undefined, referenceName: string): void {
  console.log(`\n${title}`);
  console.table(
    rows.map((r) => {
      const ref = referenceOf(r);
      return {
        target: r.target,
        database: r.database,
        conns: r.connections,
        'req/s': r.rps,
        'p50 ms': r.p50,
        'p99 ms': r.p99,
        [`vs ${referenceName}`]: ref ? (r.rps / ref.rps).toFixed(2) : '',
        'p50 +ms': ref ? (r.p50 - ref.p50).toFixed(1) : '',
        errors: r.errors,
        ...(rows.some((row) => row.perCall)
          ? { 'statements/call': r.perCall?.statements.toFixed(2) ?? '', 'round trips/call': r.perCall?.roundTrips.toFixed(2) ?? '' }
          : {}),
      };
    }),
  );
}

/**
 * Prints what each measured row cost in CPU: µs of user + system time per request by process (bench/cpu.ts), their
 * sum, and how busy the machine was. Nothing when no row was measured with CPU parties (or not on Linux).
 */
export function printCpuTable(title: string, rows: BenchRow[]): void {
  const measured = rows.filter((r) => r.cpu);
  if (measured.length === 0) return;
  const parties = [...new Set(measured.flatMap((r) => Object.keys(r.cpu!.ms)))];
  console.log(`\n${title}`);
  console.table(
    measured.map((r) => {
      const { byParty, total } = perRequest(r.cpu!);
      return {
        target: r.target,
        database: r.database,
        conns: r.connections,
        ...Object.fromEntries(parties.map((party) => [`${party} µs`, byParty[party] === undefined ? '' : Math.round(byParty[party])])),
        'total µs': Math.round(total),
        'machine busy': `${busyPercent(r.cpu!)}%`,
      };
    }),
  );
}

export async function writeJsonIfAsked(rows: BenchRow[]): Promise<void> {
  const file = process.env.BENCH_JSON;
  if (!file) return;
  const contract = rows.map(({ target, database, connections, rps, p50, p99, errors, perCall }) => ({
    target,
    database,
    connections,
    rps,
    p50,
    p99,
    errors,
    ...(perCall ? { statementsPerCall: Number(perCall.statements.toFixed(2)), roundTripsPerCall: Number(perCall.roundTrips.toFixed(2)) } : {}),
  }));
  await writeFile(file, `${JSON.stringify(contract, null, 2)}\n`);
  console.log(`Rows written to ${file}`);
}

/** Signs a fresh user up on a running server and returns their access token. */
export async function signUpForBench(baseUrl: string, label = 'bench'): Promise<string> {
  const response = await fetch(`${baseUrl}/v1/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `${label}.${Date.now()}.${Math.random().toString(36).slice(2, 8)}@example.com`, password: 'benchmark password' }),
  });
  if (response.status !== 201) throw new Error(`bench sign-up failed: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { accessToken: string }).accessToken;
}

// ---------------------------------------------------------------------------------------------------------------
// Kept for catalog.bench.ts.

export interface LoadResult {
  name: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  non2xx: number;
}

export async function load(
  name: string,
  options: { url: string; method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string; connections?: number; durationSeconds?: number },
): Promise<LoadResult> {
  const result = await autocannon({
    url: options.url,
    method: options.method ?? 'GET',
    headers: options.headers,
    body: options.body,
    connections: options.connections ?? 20,
    duration: options.durationSeconds ?? Number(process.env.BENCH_SECONDS ?? 8),
  });
  return {
    name,
    requestsPerSecond: Math.round(result.requests.average),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
  };
}

export function report(title: string, results: LoadResult[], baseline: LoadResult): void {
  console.log(`\n${title}`);
  console.table(
    results.map((r) => ({
      target: r.name,
      'req/s': r.requestsPerSecond,
      'p50 ms': r.p50Ms,
      'p99 ms': r.p99Ms,
      'vs baseline': r === baseline ? '1.00' : (r.requestsPerSecond / baseline.requestsPerSecond).toFixed(2),
      errors: r.errors + r.non2xx,
    })),
  );
}
