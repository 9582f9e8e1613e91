import { sql } from 'drizzle-orm';
import type { Db } from '../../src/platform/db/database.js';
import type { JobName } from '../../src/platform/jobs/jobs.js';

/**
 * Waits until a queue has nothing waiting or running (the app must run its job workers: `startJobs: true`).
 * Reads pg-boss's own job table; fails when a job of the queue failed for good or the queue does not drain.
 */
export async function waitForQueue(db: Db, name: JobName, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await db.execute(
      sql`select count(*) filter (where state in ('created', 'retry', 'active'))::int as pending, count(*) filter (where state = 'failed')::int as failed
          from pgboss.job where name = ${name}`,
    );
    const [row] = (result as { rows: Array<{ pending: number; failed: number }> }).rows;
    if (row!.failed > 0) throw new Error(`a job of queue ${name} failed`);
    if (row!.pending === 0) return;
    if (Date.now() > deadline) throw new Error(`queue ${name} did not drain in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
