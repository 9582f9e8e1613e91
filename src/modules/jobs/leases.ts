import { and, asc, eq, inArray, isNotNull, lt } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import { jobs } from '../../db/schema/jobs.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, Tx } from '../../platform/db/database.js';
import { defineJob, type AnyJobDefinition } from '../../platform/jobs/jobs.js';
import { createLeaseKeeper } from '../../platform/leases/lease-keeper.js';
import { metricsOrPrivate, type Metrics } from '../../platform/metrics/metrics.js';

export const RESUME_JOBS_QUEUE = 'jobs.resume-abandoned';

declare module '../../platform/jobs/jobs.js' {
  interface JobPayloads {
    /** Every minute: queue again the steps of jobs whose process died mid-step. */
    'jobs.resume-abandoned': Record<string, never>;
  }
}

type JobRow = typeof jobs.$inferSelect;
const OPEN = ['QUEUED', 'RUNNING'] as const;
/**
 * How long a queued step (a new job's first one, or one the sweeper queued again) waits for its message to start
 * before it counts as abandoned: pg-boss hands a message to one process, and a process killed between taking it and
 * holding the job's lease would otherwise strand the job until the message expires (15 minutes for media). A step
 * still waiting in a backlog past it is queued twice; steps are safe to run twice.
 */
const QUEUED_GRACE_SECONDS = 120;
const RESUME_BATCH = 100;

export interface JobLeaseDeps {
  db: Db;
  clock: Clock;
  logger: FastifyBaseLogger;
  /** The lease of a running step, renewed every third of it while this process lives (default 30 s). */
  leaseSeconds?: number;
  metrics?: Metrics;
}

/** Queues the next step of a job whose process died mid-step, inside the sweeper's transaction. */
export type ResumeHandler = (job: JobRow, tx: Tx) => Promise<void>;

/**
 * Who runs a job's step holds it with a short lease that this process's heartbeat renews. pg-boss would hand the
 * message of a step cut by a dead process to another instance only when it expires (15 minutes for media); the
 * sweeper here sees the lapsed lease within a minute and has the job's runner queue the step again. Steps are safe
 * to run twice (the reservation and the settlement are keyed by the job), so a message that does come back later
 * finds the job final or runs it once more harmlessly.
 */
export function createJobLeases(deps: JobLeaseDeps) {
  const { db, clock, logger } = deps;
  const leaseSeconds = deps.leaseSeconds ?? 30;
  const resumeHandlers: ResumeHandler[] = [];
  const resumedTotal = metricsOrPrivate(deps.metrics).counter({
    name: 'storefront_jobs_resumed_total',
    help: 'Jobs whose step a dead process left mid-way (its lease lapsed) and that the jobs sweeper queued again',
  });
  resumedTotal.inc(0);
  const leaseEnd = (seconds: number) => new Date(clock.now().getTime() + seconds * 1000);
  const keeper = createLeaseKeeper({
    intervalMs: (leaseSeconds * 1000) / 3,
    onError: (err) => logger.warn({ err }, 'renewing the leases of running jobs failed'),
    renew: async (ids) => {
      await db
        .update(jobs)
        .set({ leaseUntil: leaseEnd(leaseSeconds) })
        .where(and(inArray(jobs.id, ids), inArray(jobs.status, [...OPEN])));
    },
  });

  /** Queues again the steps of up to `limit` jobs whose lease lapsed; returns how many. */
  async function resumeAbandoned(limit = RESUME_BATCH): Promise<number> {
    if (resumeHandlers.length === 0) return 0;
    const resumed = await db.transaction(async (tx) => {
      const abandoned = await tx
        .select()
        .from(jobs)
        .where(and(isNotNull(jobs.leaseUntil), lt(jobs.leaseUntil, clock.now()), inArray(jobs.status, [...OPEN])))
        .orderBy(asc(jobs.leaseUntil))
        .limit(limit)
        .for('update', { skipLocked: true });
      const ids = abandoned.map((job) => job.id);
      if (ids.length > 0)
        await tx
          .update(jobs)
          .set({ leaseUntil: leaseEnd(QUEUED_GRACE_SECONDS) })
          .where(inArray(jobs.id, ids));
      for (const job of abandoned) {
        for (const handler of resumeHandlers) await handler(job, tx);
      }
      return ids;
    });
    resumedTotal.inc(resumed.length);
    if (resumed.length > 0) logger.warn({ jobIds: resumed }, 'jobs left mid-step by a dead process were queued again');
    return resumed.length;
  }

  return {
    /** The lease a new job is created with: its first step must start within the grace, or it is queued again. */
    queuedUntil: (): Date => leaseEnd(QUEUED_GRACE_SECONDS),

    /** This process runs a step of the job: the lease is taken now and renewed until `release`. */
    hold: async (jobId: string): Promise<void> => {
      await db
        .update(jobs)
        .set({ leaseUntil: leaseEnd(leaseSeconds) })
        .where(and(eq(jobs.id, jobId), inArray(jobs.status, [...OPEN])));
      keeper.hold(jobId);
    },

    /** The step ended (done, failed, or its next step queued): nobody holds the job until a step starts again. */
    release: async (jobId: string): Promise<void> => {
      keeper.letGo(jobId);
      await db
        .update(jobs)
        .set({ leaseUntil: null })
        .where(and(eq(jobs.id, jobId), isNotNull(jobs.leaseUntil)));
    },

    /** Registers how a job's step is queued again (the job's runner knows its queues). */
    onResume: (handler: ResumeHandler): void => {
      resumeHandlers.push(handler);
    },

    resumeAbandoned,

    definitions: (): AnyJobDefinition[] => {
      return [
        defineJob({
          name: RESUME_JOBS_QUEUE,
          options: { cron: '* * * * *', retryLimit: 1, expireInSeconds: 300 },
          handler: async () => {
            while ((await resumeAbandoned()) === RESUME_BATCH) {
              // a backlog (many jobs cut at once): keep going
            }
          },
        }),
      ];
    },

    stop: () => keeper.stop(),
  };
}

export type JobLeases = ReturnType<typeof createJobLeases>;
