// POST /v1/ai/text with an API key through the gateway to a fake OpenAI-compatible upstream, against the same
// request sent straight to that upstream, in one run: req/s, p50/p99 and the latency the gateway adds.
// The app runs in this process (so the bench can give the user a plan with API access and a large balance); the
// fake upstream runs in a child process and autocannon in worker threads, so neither shares the app's event loop.
// Embedded database by default; PostgreSQL when DATABASE_URL is set.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { eq } from 'drizzle-orm';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { plans } from '../src/db/schema/plans.js';
import { subscriptions } from '../src/db/schema/subscriptions.js';

const root = path.join(import.meta.dirname, '..');
const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 20);
const databaseUrl = process.env.DATABASE_URL;

interface Result {
  name: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  errors: number;
}

async function fire(name: string, url: string, headers: Record<string, string>, body: unknown, duration = seconds, parallel = connections, rotateAuth: string[] = []): Promise<Result> {
  const result = await autocannon({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    connections: parallel,
    duration,
    workers: Math.min(2, parallel),
    // Each connection cycles through these credentials, so the load spreads over that many wallets.
    ...(rotateAuth.length > 0 ? { requests: rotateAuth.map((authorization) => ({ headers: { 'content-type': 'application/json', authorization } })) } : {}),
  });
  return { name, requestsPerSecond: Math.round(result.requests.average), p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + result.non2xx };
}

async function startUpstream(): Promise<{ baseUrl: string; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'fake-openai.ts')], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the fake upstream exited (${code})`)));
  });
  const { baseUrl } = JSON.parse(line) as { baseUrl: string };
  return {
    baseUrl,
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

const upstream = await startUpstream();
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'storefront-bench-gateway-'));
const config = loadConfig({
  DATA_DIR: dataDir,
  LOG_LEVEL: 'warn',
  NODE_ENV: 'production',
  RATE_LIMIT_PER_MINUTE: '10000000',
  JWT_SECRET: 'bench-secret-that-is-long-enough-for-hs256',
  OPENAI_API_KEY: 'sk-bench-upstream-0001',
  OPENAI_BASE_URL: upstream.baseUrl,
  ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
});
const { app, platform, services } = await buildApp(config, { startJobs: false });
try {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

  const signup = await fetch(`${base}/v1/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `bench.gateway.${Date.now()}@example.com`, password: 'benchmark password' }),
  });
  const { accessToken, user } = (await signup.json()) as { accessToken: string; user: { id: string } };
  // Setup the product has no API for yet: a plan with API access, and a balance that never runs out.
  const [starter] = await platform.db.select({ id: plans.id }).from(plans).where(eq(plans.slug, 'starter'));
  await platform.db.update(subscriptions).set({ planId: starter!.id }).where(eq(subscriptions.userId, user.id));
  await services.wallet.credit({ userId: user.id, kind: 'ADJUSTMENT', amount: 1_000_000_000_000, idempotencyKey: `bench:${user.id}`, note: 'benchmark balance' });
  const keyResponse = await fetch(`${base}/v1/account/api-keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
    body: JSON.stringify({ label: 'bench', scopes: ['ai:text'] }),
  });
  const { key } = (await keyResponse.json()) as { key: string };

  // More customers, each with their own wallet and key: the realistic shape of production load.
  const otherKeys: string[] = [];
  for (let i = 0; i < Number(process.env.BENCH_USERS ?? 20); i++) {
    const other = (await (
      await fetch(`${base}/v1/auth/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: `bench.gateway.${Date.now()}.${i}@example.com`, password: 'benchmark password' }) })
    ).json()) as { accessToken: string; user: { id: string } };
    await platform.db.update(subscriptions).set({ planId: starter!.id }).where(eq(subscriptions.userId, other.user.id));
    await services.wallet.credit({ userId: other.user.id, kind: 'ADJUSTMENT', amount: 1_000_000_000_000, idempotencyKey: `bench:${other.user.id}`, note: 'benchmark balance' });
    const created = (await (
      await fetch(`${base}/v1/account/api-keys`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${other.accessToken}` }, body: JSON.stringify({ label: 'bench', scopes: ['ai:text'] }) })
    ).json()) as { key: string };
    otherKeys.push(`Bearer ${created.key}`);
  }

  const messages = [{ role: 'user', content: 'Tell me about lighthouses in one sentence.' }];
  const direct = { url: `${upstream.baseUrl}/chat/completions`, headers: { authorization: 'Bearer sk-bench-upstream-0001' }, body: { model: 'gpt-4o-mini', messages, max_completion_tokens: 64 } };
  const gateway = { url: `${base}/v1/ai/text`, headers: { authorization: `Bearer ${key}` }, body: { model: 'openai/gpt-4o-mini', messages, maxTokens: 64 } };

  const probe = await fetch(gateway.url, { method: 'POST', headers: { 'content-type': 'application/json', ...gateway.headers }, body: JSON.stringify(gateway.body) });
  if (probe.status !== 200) throw new Error(`the gateway answered ${probe.status}: ${await probe.text()}`);

  // Warm-up: JIT, connection pools and caches in their steady state.
  await fire('warm-up', gateway.url, gateway.headers, gateway.body, 2);
  await fire('warm-up', direct.url, direct.headers, direct.body, 2);
  const baseline = await fire('straight to the fake upstream', direct.url, direct.headers, direct.body);
  const through = await fire('POST /v1/ai/text (API key, gateway, one wallet)', gateway.url, gateway.headers, gateway.body);
  const spread = await fire(`POST /v1/ai/text (${otherKeys.length} customers)`, gateway.url, gateway.headers, gateway.body, seconds, connections, otherKeys);
  // One connection: the latency a single caller sees, without queueing behind the others.
  const baselineOne = await fire('straight to the fake upstream, 1 connection', direct.url, direct.headers, direct.body, seconds, 1);
  const throughOne = await fire('gateway, 1 connection', gateway.url, gateway.headers, gateway.body, seconds, 1);

  console.log(`\nText gateway vs the upstream alone (${databaseUrl ? 'PostgreSQL' : 'embedded PGlite'}, ${connections} connections, ${seconds} s each)`);
  console.table(
    [baseline, through, spread, baselineOne, throughOne].map((r) => ({
      target: r.name,
      'req/s': r.requestsPerSecond,
      'p50 ms': r.p50,
      'p99 ms': r.p99,
      'vs upstream': (r.requestsPerSecond / (r === baselineOne || r === throughOne ? baselineOne : baseline).requestsPerSecond).toFixed(2),
      errors: r.errors,
    })),
  );
  console.log(`Added latency at ${connections} connections: p50 +${(through.p50 - baseline.p50).toFixed(1)} ms, p99 +${(through.p99 - baseline.p99).toFixed(1)} ms`);
  console.log(`Added latency at 1 connection: p50 +${(throughOne.p50 - baselineOne.p50).toFixed(1)} ms, p99 +${(throughOne.p99 - baselineOne.p99).toFixed(1)} ms`);
  console.log(`Added latency at ${connections} connections over ${otherKeys.length} wallets: p50 +${(spread.p50 - baseline.p50).toFixed(1)} ms, p99 +${(spread.p99 - baseline.p99).toFixed(1)} ms`);
  console.log('With one wallet every request waits for that wallet row (reserve and settle each commit under its lock); separate customers do not.');
  // Let requests autocannon abandoned at the end of its run finish before checking and closing.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const { tokens, totals } = await services.wallet.balance({ userId: user.id });
  const ledgerSum = totals.purchased + totals.bonus + totals.granted + totals.converted + totals.adjusted - totals.spent;
  console.log(`Wallet after the run: balance ${tokens}, sum of ledger ${ledgerSum} (${tokens === ledgerSum ? 'equal' : 'MISMATCH'}); ${totals.spent} tokens spent.`);
} finally {
  await app.close();
  await upstream.stop();
  await rm(dataDir, { recursive: true, force: true });
}
