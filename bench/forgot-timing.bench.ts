// POST /v1/account/password/forgot: does a known email answer measurably slower than an unknown one?
// Interleaves requests for fresh known and unknown emails one at a time and compares the median latencies;
// a ratio near 1.00 means response time does not tell which emails have accounts.
import { performance } from 'node:perf_hooks';
import { signUpForBench, startServer } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const WARM_UP = 5;
const databaseUrl = process.env.DATABASE_URL;
const server = await startServer(databaseUrl ? { DATABASE_URL: databaseUrl } : {});

async function emailOfNewUser(label: string): Promise<string> {
  const accessToken = await signUpForBench(server.url, label);
  const me = await fetch(`${server.url}/v1/users/me`, { headers: { authorization: `Bearer ${accessToken}` } });
  return ((await me.json()) as { user: { email: string } }).user.email;
}

async function timedForgot(email: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${server.url}/v1/account/password/forgot`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email }),
  });
  await response.arrayBuffer();
  const elapsed = performance.now() - started;
  if (response.status !== 200) throw new Error(`forgot answered ${response.status}`);
  return elapsed;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

try {
  // Every known request gets a fresh account, so each one takes the full path (no 60-second repeat rule).
  const known: string[] = [];
  for (let i = 0; i < ROUNDS + WARM_UP; i++) known.push(await emailOfNewUser(`forgot-known-${i}`));
  const unknown = known.map((_, i) => `forgot-unknown-${i}.${Date.now()}@example.com`);

  const knownMs: number[] = [];
  const unknownMs: number[] = [];
  for (let i = 0; i < ROUNDS + WARM_UP; i++) {
    // alternate which goes first, so neither side always follows the other
    let k: number;
    let u: number;
    if (i % 2 === 0) {
      k = await timedForgot(known[i]!);
      u = await timedForgot(unknown[i]!);
    } else {
      u = await timedForgot(unknown[i]!);
      k = await timedForgot(known[i]!);
    }
    if (i < WARM_UP) continue;
    knownMs.push(k);
    unknownMs.push(u);
  }
  const knownMedian = median(knownMs);
  const unknownMedian = median(unknownMs);
  console.log(`\nPOST /v1/account/password/forgot, ${ROUNDS} interleaved requests each (${databaseUrl ? 'PostgreSQL' : 'embedded PGlite'})`);
  console.table([
    { email: 'known', 'median ms': knownMedian.toFixed(2), 'min ms': Math.min(...knownMs).toFixed(2), 'max ms': Math.max(...knownMs).toFixed(2) },
    { email: 'unknown', 'median ms': unknownMedian.toFixed(2), 'min ms': Math.min(...unknownMs).toFixed(2), 'max ms': Math.max(...unknownMs).toFixed(2) },
  ]);
  console.log(`known / unknown median ratio: ${(knownMedian / unknownMedian).toFixed(2)} (aim: within 1.20)`);
} finally {
  await server.stop();
}
