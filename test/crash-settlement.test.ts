import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { gatewayIdempotency } from '../src/db/schema/gateway.js';
import { usageRecords } from '../src/db/schema/usage.js';
import { ManualClock } from '../src/platform/clock/clock.js';
import { startFakeOpenAi, type FakeUpstream } from './helpers/fake-upstreams.js';
import { ledgerOf, providerEnv, walletState } from './helpers/gateway.js';
import { createTestDatabase, type TestDatabase } from './helpers/test-database.js';
import { json, testEnv } from './helpers/test-app.js';
import { freePort } from './helpers/free-port.js';

/**
 * A real process killed with SIGKILL after its upstream answered and before the settlement committed: the answer's
 * cost is on the reservation (marked in flight), so the sweeper of the next instance charges it and writes the usage
 * record it would have written. Usage and ledger agree. The window is held open by a file store (an S3-compatible
 * endpoint) that accepts the connection of the upload and never answers it; a call killed before its upstream
 * answered is held open by an upstream that never answers, and is refunded by the sweeper.
 */
const root = path.join(import.meta.dirname, '..');
let dataDir: string;
let testDb: TestDatabase | null = null;
let store: http.Server;
const uploads: string[] = [];
/** An OpenAI-compatible upstream whose completions hang while `hanging` (the process is killed waiting for one). */
let upstream: FakeUpstream;
let hanging = false;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'storefront-crash-'));
  // On PostgreSQL both processes share a database of their own; embedded, they take turns on DATA_DIR.
  if (process.env.TEST_DATABASE_URL) testDb = await createTestDatabase();
  store = http.createServer((req) => {
    // Every upload hangs: the process is mid-settlement when it is killed.
    uploads.push(`${req.method} ${req.url}`);
  });
  await new Promise<void>((resolve) => store.listen(0, '127.0.0.1', resolve));
  upstream = await startFakeOpenAi((request) => (request.method === 'POST' && hanging ? { kind: 'hang' } : { kind: 'ok' }));
});
afterAll(async () => {
  await upstream?.close();
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
    ...providerEnv('OPENAI', upstream.baseUrl, ['sk-crash-0001']),
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
    // A cold start transpiles the sources with tsx; on a busy machine that takes a while. One that never gets ready
    // is stopped, or it would keep the embedded database from the next test.
    if (Date.now() - started > 120_000) {
      await kill(child);
      throw new Error(`server did not start:\n${logs.join('')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { child, port, logs };
}

/** A new user of the running process, with its access token. */
async function signUpAt(port: number): Promise<{ accessToken: string; user: { id: string } }> {
  const signup = await fetch(`http://127.0.0.1:${port}/v1/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `crash.${process.pid}.${Date.now()}@example.com`, password: 'correct horse battery', name: 'Crash Test' }),
  });
  expect(signup.status).toBe(201);
  return (await signup.json()) as { accessToken: string; user: { id: string } };
}

/** A call the process will never answer: sent, and its failure (the kill) ignored. */
function sendAndForget(port: number, route: string, accessToken: string, body: unknown, idempotencyKey?: string): void {
  const headers = {
    'content-type': 'application/json',
    authorization: `Bearer ${accessToken}`,
    ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
  };
  void fetch(`http://127.0.0.1:${port}${route}`, { method: 'POST', headers, body: JSON.stringify(body) }).catch(() => undefined);
}

async function waitFor(done: () => boolean, what: string, logs: string[]): Promise<void> {
  const waitingSince = Date.now();
  while (!done()) {
    if (Date.now() - waitingSince > 30_000) throw new Error(`${what} never happened:\n${logs.join('')}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function kill(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/** The next instance, once the dead one's leases have run out; the test runs its sweeper when it chooses. */
async function nextInstance() {
  const next = await buildApp(loadConfig(baseEnv()), { clock: new ManualClock(new Date(Date.now() + 2 * 60_000)), startJobs: false });
  next.services.wallet.stop(); // its sweep timer would sweep on its own
  return next;
}

describe('a process killed between the upstream answer and the settlement', () => {
  it('is settled by the sweeper on the cost it marked: charged once, with its usage record', async () => {
    const running = await startProcess();
    let killed = false;
    try {
      const { accessToken, user } = await signUpAt(running.port);
      // The answer never comes: the process is killed while it stores the audio.
      const uploadsBefore = uploads.length;
      sendAndForget(running.port, '/v1/ai/audio', accessToken, { model: 'local/speech', text: 'This sentence is paid for and never delivered.' });
      await waitFor(() => uploads.length > uploadsBefore, 'the upload', running.logs);
      await kill(running.child);
      killed = true;

      const next = await nextInstance();
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
  }, 240_000);
});

describe('the Idempotency-Keys of a killed process', () => {
  it('follow their reservations, closed by the first retry once the lease lapsed: the charged call is never charged again, the refunded one runs once', async () => {
    const speech = { model: 'local/speech', text: 'Paid for once, however often it is retried.' };
    const text = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Refunded first, then answered once.' }] };
    hanging = true;
    const running = await startProcess();
    let killed = false;
    try {
      const { accessToken, user } = await signUpAt(running.port);
      const uploadsBefore = uploads.length;
      const callsBefore = upstream.calls().length;
      // Charged: the audio's cost is marked on its reservation, then storing the file hangs.
      sendAndForget(running.port, '/v1/ai/audio', accessToken, speech, 'speech-key');
      // Refunded: the text call hangs at the upstream with its tokens reserved and no usage reported.
      sendAndForget(running.port, '/v1/ai/text', accessToken, text, 'text-key');
      await waitFor(() => uploads.length > uploadsBefore && upstream.calls().length > callsBefore, 'both calls in flight', running.logs);
      await kill(running.child);
      killed = true;
      hanging = false;

      const next = await nextInstance();
      try {
        const t = { platform: next.platform } as never;
        const retry = (route: string, key: string, body: object) =>
          next.app.inject({ method: 'POST', url: route, headers: { authorization: `Bearer ${accessToken}`, 'idempotency-key': key }, payload: body });
        const retrySpeech = () => retry('/v1/ai/audio', 'speech-key', speech);
        const retryText = () => retry('/v1/ai/text', 'text-key', text);
        const usageOf = (operation: string) =>
          next.platform.db
            .select()
            .from(usageRecords)
            .where(and(eq(usageRecords.userId, user.id), eq(usageRecords.operation, operation)));

        // No sweep has run yet: the first retry of each key finds its reservation's lease lapsed and closes it itself,
        // as the sweeper would, the key following in the same transaction. The audio is settled on its marked cost.
        const charged = await retrySpeech();
        expect(charged.statusCode).toBe(409);
        const entries = await next.platform.db.select().from(gatewayIdempotency).where(eq(gatewayIdempotency.userId, user.id)).orderBy(gatewayIdempotency.key);
        expect(entries.map((e) => [e.key, e.status])).toEqual([
          ['speech-key', 'CHARGED'],
          ['text-key', 'IN_PROGRESS'],
        ]);
        const [speechUsage] = await usageOf('audio.speech');
        expect(speechUsage).toMatchObject({ status: 'PARTIAL', requestId: entries[0]!.requestId });
        // Charged: the key keeps what is known of its answer (charged, the audio lost with the process), never a second charge.
        expect(json(charged).error).toMatchObject({
          code: 'CONFLICT',
          message: expect.stringContaining('was charged'),
          details: { idempotencyKey: 'speech-key', requestId: speechUsage!.requestId },
        });
        expect((await retrySpeech()).statusCode).toBe(409);
        expect(await usageOf('audio.speech')).toHaveLength(1);

        // Refunded: two parallel retries run the call once (the first to close the reservation frees the key and takes
        // it); the other is told it is running, or gets its answer.
        const callsAfterKill = upstream.calls().length;
        const retries = await Promise.all([retryText(), retryText()]);
        const ran = retries.filter((r) => r.statusCode === 200 && r.headers['idempotent-replayed'] === undefined);
        expect(ran).toHaveLength(1);
        const other = retries.find((r) => r !== ran[0])!;
        if (other.statusCode === 409) expect(json(other).error.message).toMatch(/still running/);
        else expect(other.headers['idempotent-replayed']).toBe('true');
        expect(upstream.calls().length - callsAfterKill).toBe(1);
        const replay = await retryText();
        expect(replay.headers['idempotent-replayed']).toBe('true');
        expect(json(replay)).toEqual(json(ran[0]!));
        // Nothing is left for the sweeper.
        expect(await next.services.wallet.sweepExpired()).toEqual({ settled: 0, released: 0 });

        // One charge: the retry's; the killed call left a refund (FAILED, closed as the sweeper would) and nothing else.
        const textUsage = await usageOf('text.generate');
        expect(textUsage.map((r) => r.status).sort()).toEqual(['FAILED', 'SUCCESS']);
        const success = textUsage.find((r) => r.status === 'SUCCESS')!;
        expect(success.requestId).toBe(json(ran[0]!).requestId);
        const chargedFor = async (requestId: string) => (await ledgerOf(t, requestId)).reduce((sum, row) => sum - row.amount, 0);
        expect(await chargedFor(textUsage.find((r) => r.status === 'FAILED')!.requestId)).toBe(0);
        expect(await chargedFor(success.requestId)).toBe(success.tokensConsumed);
        expect(await chargedFor(speechUsage!.requestId)).toBe(speechUsage!.tokensConsumed);
        const after = await walletState(t, user.id);
        expect(after.balance).toBe(after.ledgerSum);
        expect(await next.services.wallet.findImbalances()).toEqual([]);
      } finally {
        await next.app.close();
      }
    } finally {
      if (!killed) running.child.kill('SIGKILL');
      hanging = false;
    }
  }, 240_000);
});
