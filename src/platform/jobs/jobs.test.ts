import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { openTestDatabase } from '../../../test/helpers/test-database.js';
import type { Database } from '../db/database.js';
import { createJobs, defineJob, type Jobs } from './jobs.js';
import { QUEUE_WATCH_INTERVAL_MS, WORKER_FALLBACK_POLL_SECONDS } from './queue-watch.js';

declare module './jobs.js' {
  interface JobPayloads {
    'test.echo': { value: number };
    'test.flaky': { id: string };
  }
}

// pg-boss running on the very database the service uses: PGlite by default, PostgreSQL with TEST_DATABASE_URL.
let testDb: Awaited<ReturnType<typeof openTestDatabase>>;
let database: Database;
let jobs: Jobs;
const seen: number[] = [];
const attempts = new Map<string, number>();

beforeAll(async () => {
  testDb = await openTestDatabase();
  database = testDb.database;
  jobs = createJobs({ database, databaseUrl: testDb.url, logger: pino({ level: 'silent' }) });
  jobs.register([
    defineJob({ name: 'test.echo', handler: async ({ value }) => void seen.push(value) }),
    defineJob({
      name: 'test.flaky',
      options: { retryLimit: 2, retryDelaySeconds: 1, retryBackoff: false },
      handler: async ({ id }) => {
        const n = (attempts.get(id) ?? 0) + 1;
        attempts.set(id, n);
        if (n < 2) throw new Error('first attempt fails');
      },
    }),
  ]);
  await jobs.start();
});

afterAll(async () => {
  await jobs?.stop();
  await testDb.close();
});

const waitFor = async (check: () => boolean, timeoutMs = 15_000) => {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error('timed out waiting for the job');
    await new Promise((r) => setTimeout(r, 100));
  }
};

describe(`pg-boss on the service database`, () => {
  it('runs a queued job', async () => {
    await jobs.send('test.echo', { value: 42 });
    await waitFor(() => seen.includes(42));
  });

  it('retries a failing job until it succeeds', async () => {
    await jobs.send('test.flaky', { id: 'a' });
    await waitFor(() => attempts.get('a') === 2);
  });

  it('runs a delayed job only after its delay', async () => {
    const sentAt = Date.now();
    await jobs.send('test.echo', { value: 7 }, { startAfterSeconds: 2 });
    await waitFor(() => seen.includes(7));
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(1900);
  });

  it("queues inside a caller's transaction: the message exists exactly when the transaction commits", async () => {
    await expect(
      database.db.transaction(async (tx) => {
        await jobs.send('test.echo', { value: 1001 }, { tx });
        throw new Error('the caller rolls back');
      }),
    ).rejects.toThrow('the caller rolls back');
    await database.db.transaction(async (tx) => {
      await jobs.send('test.echo', { value: 1002 }, { tx, startAfterSeconds: 1 });
    });
    await waitFor(() => seen.includes(1002));
    const stored = await database.query<{ value: number }>(
      `select (data->>'value')::int as value from pgboss.job where name = 'test.echo' and (data->>'value')::int in (1001, 1002)`,
    );
    expect(stored.rows.map((row) => row.value)).toEqual([1002]);
    expect(seen).not.toContain(1001);
  });

  it("starts a job committed by another transaction or instance within the queue watch, not the workers' own slow poll", async () => {
    // Sent in a transaction, like a job another instance commits: nothing wakes the worker but the one statement that
    // watches every queue (the worker itself polls only every 30 s).
    await database.db.transaction(async (tx) => {
      await jobs.send('test.echo', { value: 2024 }, { tx });
    });
    await waitFor(() => seen.includes(2024), QUEUE_WATCH_INTERVAL_MS * 20);
    expect(QUEUE_WATCH_INTERVAL_MS * 20).toBeLessThan(WORKER_FALLBACK_POLL_SECONDS * 1000);
  });

  it('refuses a queue without a handler and a queue registered twice', async () => {
    await expect(jobs.send('nope' as never, {} as never)).rejects.toThrow(/No handler/);
    const other = createJobs({ database, databaseUrl: testDb.url, logger: pino({ level: 'silent' }) });
    expect(() =>
      other.register([defineJob({ name: 'test.echo', handler: async () => {} }), defineJob({ name: 'test.echo', handler: async () => {} })]),
    ).toThrow(/two handlers/);
  });

  it('names every queue that has no handler when asked to check a list of queues', () => {
    expect(() => jobs.assertHandled(['test.echo', 'test.flaky'])).not.toThrow();
    expect(() => jobs.assertHandled(['test.echo', 'mail.deliver', 'wallet.sweep-reservations'])).toThrow(
      'No handler is registered for job queue "mail.deliver", "wallet.sweep-reservations"',
    );
  });
});
