// Resident memory of the built service, started as `npm start` starts it (start-command.ts): 2 s after it is ready,
// idle (15 s after), and after a few seconds of load on a cheap route and an authenticated read; on the embedded default
// and on PostgreSQL (a fresh database on BENCH_PG_URL, default the local one; skipped with a reason when it does not
// answer). Run `npm run build` first.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { adminQuery, withDatabaseName } from '../test/helpers/pg-admin.js';
import { freePort, load, signUpForBench } from './lib.js';
import { startCommand } from './start-command.js';

const root = path.join(import.meta.dirname, '..');
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);

const rssMb = (child: ChildProcess): number => {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024);
};

async function measure(database: string, env: Record<string, string>) {
  const port = await freePort();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'storefront-memory-'));
  const start = startCommand(root);
  const child = spawn(process.execPath, start.nodeArgs, {
    cwd: root,
    env: {
      ...process.env,
      ...start.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_MINUTE: '10000000',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    while (
      !(await fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      ))
    ) {
      if (child.exitCode !== null) throw new Error('the service exited during start');
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 2000));
    const started = rssMb(child);
    // Idle: once the service has settled (heap-settle.ts): it compacts at its first quiet window, 6 s after ready, and
    // V8 returns its young generation by the young collection a window later.
    await new Promise((r) => setTimeout(r, 13_000));
    const idle = rssMb(child);
    const token = await signUpForBench(url, 'memory');
    await load('healthz', { url: `${url}/healthz`, durationSeconds: SECONDS });
    await load('users/me', { url: `${url}/v1/users/me`, headers: { authorization: `Bearer ${token}` }, durationSeconds: SECONDS });
    const loaded = rssMb(child);
    return { target: 'storefront', database, startedRssMb: started, idleRssMb: idle, afterLoadRssMb: loaded };
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    await rm(dataDir, { recursive: true, force: true });
  }
}

const rows = [await measure('embedded', {})];
const dbName = `sf_bench_memory_${process.pid}`;
try {
  await adminQuery(PG_URL, `CREATE DATABASE ${dbName}`);
  try {
    rows.push(await measure('postgres', { DATABASE_URL: withDatabaseName(PG_URL, dbName) }));
  } finally {
    await adminQuery(PG_URL, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  }
} catch (err) {
  console.log(`PostgreSQL at ${PG_URL} skipped: ${(err as Error).message}`);
}
console.table(rows);
if (process.env.BENCH_JSON) await writeFile(process.env.BENCH_JSON, JSON.stringify(rows, null, 2));
