import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { usageRecords } from '../src/db/schema/usage.js';
import { ManualClock } from '../src/platform/clock/clock.js';
import { ledgerOf, walletState } from './helpers/gateway.js';
import { createTestDatabase, type TestDatabase } from './helpers/test-database.js';
import { testEnv } from './helpers/test-app.js';
import { freePort } from './helpers/free-port.js';

/**
 * A real process killed with SIGKILL after its upstream answered and before the settlement committed: the answer's
 * cost is on the reservation (marked in flight), so the sweeper of the next instance charges it and writes the usage
 * record it would have written. Usage and ledger agree. The window is held open by a file store (an S3-compatible
 * endpoint) that accepts the connection of the upload and never answers it.
 */
const root = path.join(import.meta.dirname, '..');
let dataDir: string;
let testDb: TestDatabase | null = null;
let store: http.Server;
const uploads: string[] = [];

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'storefront-crash-'));
  // On PostgreSQL both processes share a database of their own; embedded, they take turns on DATA_DIR.
  if (process.env.TEST_DATABASE_URL) testDb = await createTestDatabase();
  store = http.createServer((req) => {
    // Every upload hangs: the process is mid-settlement when it is killed.
    uploads.push(`${req.method} ${req.url}`);
  });
  await new Promise<void>((resolve) => store.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  store?.closeAllConnections();
  await new Promise((resolve) => store?.close(resolve));
  await testDb?.drop();
  await rm(dataDir, { recursive: true, force: true });
});


/** The test settings plus a file store at the endpoint that never answers an upload. */
const baseEnv = () =>
  testEnv(testDb?.url ?? null, dataDir, {
    S3_BUCKET: 'crash-test',
    S3_REGION: 'us-east-1',
    S3_ENDPOINT: `http://127.0.0.1:${(store.address() as AddressInfo).port}`,
    S3_ACCESS_KEY_ID: 'test',
    S3_SECRET_ACCESS_KEY: 'test-secret',
    S3_FORCE_PATH_STYLE: 'true',
  });

async function startProcess(): Promise<{ child: ChildProcess; port: number; logs: string[] }> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, ...baseEnv(), PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', NODE_ENV: 'development' };
  if (!testDb) delete env.DATABASE_URL;
  delete env.REDIS_URL;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: string[] = [];
  child.stdout.on('data', (d: Buffer) => logs.push(d.toString()));
  child.stderr.on('data', (d: Buffer) => logs.push(d.toString()));
  const started = Date.now();
  while (!logs.join('').includes('storefront is ready')) {
    if (child.exitCode !== null) throw new Error(`server exited early:\n${logs.join('')}`);
    if (Date.now() - started > 60_000) throw new Error(`server did not start:\n${logs.join('')}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { child, port, logs };
}

describe('a process killed between the upstream answer and the settlement', () => {
  it('is settled by the sweeper on the cost it marked: charged once, with its usage record', async () => {
    const running = await startProcess();
    const url = (p: string) => `http://127.0.0.1:${running.port}${p}`;
    let killed = false;
    try {
      const signup = await fetch(url('/v1/auth/signup'), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: `crash.${process.pid}.${Date.now()}@example.com`, password: 'correct horse battery', name: 'Crash Test' }),
      });
      expect(signup.status).toBe(201);
      const { accessToken, user } = (await signup.json()) as { accessToken: string; user: { id: string } };
      // The answer never comes: the process is killed while it stores the audio.
      void fetch(url('/v1/ai/audio'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
        body: JSON.stringify({ model: 'local/speech', text: 'This sentence is paid for and never delivered.' }),
      }).catch(() => undefined);
      const waitingSince = Date.now();
      while (uploads.length === 0) {
        if (Date.now() - waitingSince > 30_000) throw new Error(`the upload never started:\n${running.logs.join('')}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const exited = new Promise((resolve) => running.child.once('exit', resolve));
      running.child.kill('SIGKILL');
      killed = true;
      await exited;

      // The next instance, once the dead one's lease has run out.
      const clock = new ManualClock(new Date(Date.now() + 2 * 60_000));
      const config = loadConfig(baseEnv());
      const next = await buildApp(config, { clock, startJobs: false });
      try {
        expect(await next.services.wallet.sweepExpired()).toEqual({ settled: 1, released: 0 });
        const [record] = await next.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, user.id));
        expect(record).toMatchObject({ operation: 'audio.speech', status: 'PARTIAL' });
        expect(record!.tokensConsumed).toBeGreaterThan(0);
        expect(record!.metadata).toMatchObject({ settledBy: 'sweeper', modelSlug: 'local/speech' });
        const ledger = await ledgerOf({ platform: next.platform } as never, record!.requestId);
        expect(-ledger.reduce((sum, row) => sum + row.amount, 0)).toBe(record!.tokensConsumed);
        const wallet = await walletState({ platform: next.platform } as never, user.id);
        expect(wallet.balance).toBe(wallet.ledgerSum);
        expect(await next.services.wallet.findImbalances()).toEqual([]);
        // A second sweep finds nothing more to do.
        expect(await next.services.wallet.sweepExpired()).toEqual({ settled: 0, released: 0 });
      } finally {
        await next.app.close();
      }
    } finally {
      if (!killed) running.child.kill('SIGKILL');
    }
  }, 120_000);
});
