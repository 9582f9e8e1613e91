// First start on the embedded default: `node dist/main.js` with an empty DATA_DIR until /healthz answers, against a
// restart on the same (existing) DATA_DIR as the in-run reference. Run `npm run build` first (it makes the snapshot).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './lib.js';

const root = path.join(import.meta.dirname, '..');
const RUNS = Number(process.env.BENCH_RUNS ?? 3);

async function timeToHealthy(dataDir: string): Promise<number> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, ['--enable-source-maps', 'dist/main.js'], {
    cwd: root,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error('the service exited during start');
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return performance.now() - started;
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}

if (!existsSync(path.join(root, 'dist', 'main.js'))) throw new Error('run `npm run build` first');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const first: number[] = [];
const restart: number[] = [];
for (let i = 0; i < RUNS; i++) {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'storefront-first-start-'));
  first.push(await timeToHealthy(dataDir));
  restart.push(await timeToHealthy(dataDir));
  await rm(dataDir, { recursive: true, force: true });
}
const rows = [
  { target: 'first start (empty DATA_DIR)', database: 'embedded', ms: Math.round(median(first)), runs: first.map(Math.round) },
  { target: 'restart (existing DATA_DIR)', database: 'embedded', ms: Math.round(median(restart)), runs: restart.map(Math.round) },
];
console.table(rows);
console.log(`first start / restart: ${(median(first) / median(restart)).toFixed(2)}x`);
if (process.env.BENCH_JSON) await writeFile(process.env.BENCH_JSON, JSON.stringify(rows, null, 2));
