import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BuiltApp } from '../src/app.js';
import { jobs } from '../src/db/schema/jobs.js';
import { usageRecords } from '../src/db/schema/usage.js';
import { ledgerOf, setBalance, walletState } from './helpers/gateway.js';
import { sharedDatabase, type SharedDatabase } from './helpers/shared-database.js';
import { bearer, json, signUp } from './helpers/test-app.js';

/**
 * A job whose step was cut by a dead process (its pg-boss message taken and never finished, which pg-boss would hand
 * back only when it expires, 15 minutes later for media) is queued again by the jobs sweeper once the step's lease,
 * renewed by the heartbeat of the process that ran it, has lapsed. The kill test (test/scaled/kill.test.ts) does this
 * with a real SIGKILL; here the dead process's leftovers are written as it would leave them.
 */
let shared: SharedDatabase;
let queuer: BuiltApp;

beforeAll(async () => {
  shared = await sharedDatabase('resume');
  // Queues jobs but runs none of them: its messages wait for another instance's workers.
  queuer = await shared.instance();
  await queuer.platform.jobs.start({ workers: false });
});
afterAll(async () => {
  await queuer?.app.close();
  await shared?.close();
});

const messages = async (name: string, jobId: string) =>
  (await queuer.platform.database.query<{ state: string }>(`select state from pgboss.job where name = $1 and data->>'jobId' = $2`, [name, jobId])).rows;

/** What a process killed mid-step leaves: its message taken (active), the job RUNNING, the lease it renewed lapsed. */
async function cutMidStep(jobId: string, externalId: string | null = null) {
  await queuer.platform.db.execute(sql`update pgboss.job set state = 'active', started_on = now() where name = 'media.job-run' and data->>'jobId' = ${jobId}`);
  const lapsed = new Date(shared.clock.now().getTime() - 1_000);
  await queuer.platform.db.update(jobs).set({ status: 'RUNNING', startedAt: lapsed, leaseUntil: lapsed, externalId }).where(eq(jobs.id, jobId));
}

async function submit(accessToken: string, url: string, payload: Record<string, unknown>): Promise<string> {
  const response = await queuer.app.inject({ method: 'POST', url, headers: bearer(accessToken), payload });
  expect(response.statusCode, response.body).toBe(200);
  return json(response).jobId as string;
}

describe('a job cut mid-step by a dead process', () => {
  it('is queued again once its lease lapsed, finishes on another instance and is charged once', async () => {
    const { accessToken, user } = await signUp(queuer.app);
    const t = queuer as never;
    await setBalance(t, user.id, 10_000_000);
    const jobId = await submit(accessToken, '/v1/ai/image', { model: 'local/image', prompt: 'cut mid-step', width: 64, height: 64, async: true });
    await cutMidStep(jobId);

    const worker = await shared.instance({ startJobs: true });
    try {
      expect(await worker.services.jobs.resumeAbandoned()).toBe(1);
      // Queued again once: the job now waits for its new message, not for the dead one's expiry.
      expect(await worker.services.jobs.resumeAbandoned()).toBe(0);
      let job: any;
      for (let i = 0; ; i++) {
        job = json(await worker.app.inject({ method: 'GET', url: `/v1/jobs/${jobId}`, headers: bearer(accessToken) }));
        if (job.status === 'SUCCEEDED' || job.status === 'FAILED') break;
        if (i > 200) throw new Error(`the job was not taken over: ${JSON.stringify(job)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(job).toMatchObject({ status: 'SUCCEEDED', creditsConsumed: job.creditsReserved });
      expect(await ledgerOf(t, jobId)).toHaveLength(1);
      expect(await worker.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, jobId))).toHaveLength(1);
      const wallet = await walletState(t, user.id);
      expect(wallet.balance).toBe(wallet.ledgerSum);
      // The step that finished let go of its lease; a final job is never queued again.
      const [row] = await worker.platform.db.select({ leaseUntil: jobs.leaseUntil }).from(jobs).where(eq(jobs.id, jobId));
      expect(row!.leaseUntil).toBeNull();
      shared.clock.advance(10 * 60_000);
      expect(await worker.services.jobs.resumeAbandoned()).toBe(0);
    } finally {
      await worker.app.close();
    }
  });

  it('a video the provider already took is polled rather than submitted again', async () => {
    const { accessToken, user } = await signUp(queuer.app);
    await setBalance(queuer as never, user.id, 10_000_000);
    const jobId = await submit(accessToken, '/v1/ai/video', { model: 'local/video', prompt: 'cut while rendering', durationSeconds: 1 });
    await cutMidStep(jobId, 'upstream-task-1');
    expect(await queuer.services.jobs.resumeAbandoned()).toBe(1);
    expect((await messages('media.job-poll', jobId)).map((m) => m.state)).toEqual(['created']);
    // Cancelled, so the next case sees only its own job.
    expect((await queuer.app.inject({ method: 'POST', url: `/v1/jobs/${jobId}/cancel`, headers: bearer(accessToken) })).statusCode).toBe(200);
  });

  it('queues again a new job whose first message a dead process took before holding it, once the grace is over', async () => {
    const { accessToken, user } = await signUp(queuer.app);
    await setBalance(queuer as never, user.id, 10_000_000);
    const jobId = await submit(accessToken, '/v1/ai/image', { model: 'local/image', prompt: 'taken, never held', width: 64, height: 64, async: true });
    // pg-boss handed the message to a process that died before it held the job: the job is still QUEUED.
    await queuer.platform.db.execute(
      sql`update pgboss.job set state = 'active', started_on = now() where name = 'media.job-run' and data->>'jobId' = ${jobId}`,
    );
    shared.clock.advance(60_000); // within the 2-minute grace a message may still be waiting in a backlog
    expect(await queuer.services.jobs.resumeAbandoned()).toBe(0);
    shared.clock.advance(61_000);
    expect(await queuer.services.jobs.resumeAbandoned()).toBe(1);
    expect((await messages('media.job-run', jobId)).map((m) => m.state).sort()).toEqual(['active', 'created']);
    expect((await queuer.app.inject({ method: 'POST', url: `/v1/jobs/${jobId}/cancel`, headers: bearer(accessToken) })).statusCode).toBe(200);
  });

  it('leaves a job alone while a live process holds its step, and between steps', async () => {
    const { accessToken, user } = await signUp(queuer.app);
    await setBalance(queuer as never, user.id, 10_000_000);
    const jobId = await submit(accessToken, '/v1/ai/image', { model: 'local/image', prompt: 'held', width: 64, height: 64, async: true });
    await queuer.services.jobs.hold(jobId);
    shared.clock.advance(20_000); // within the 30 s lease its heartbeat renews
    expect(await queuer.services.jobs.resumeAbandoned()).toBe(0);
    await queuer.services.jobs.release(jobId);
    shared.clock.advance(10 * 60_000); // between steps pg-boss holds the next message: no lease, nothing to resume
    expect(await queuer.services.jobs.resumeAbandoned()).toBe(0);
    expect((await messages('media.job-run', jobId)).map((m) => m.state)).toEqual(['created']);
  });
});
