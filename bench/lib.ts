import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';

const root = path.join(import.meta.dirname, '..');

export interface BenchServer {
  url: string;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Starts the real service in its own process (so the load generator does not share its event loop). */
export async function startServer(env: Record<string, string> = {}): Promise<BenchServer> {
  const port = await freePort();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'storefront-bench-'));
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: root,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '10000000', NODE_ENV: 'production', ...env },
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
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

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
