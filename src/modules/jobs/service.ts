import { and, eq, inArray, sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import { FINAL_JOB_STATUSES, jobs, type JobKind, type JobStatus } from '../../db/schema/jobs.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx, Tx } from '../../platform/db/database.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { conflict, notFound } from '../../platform/http/errors.js';
import { newestFirstPage } from '../../platform/http/pagination.js';
import type { Metrics } from '../../platform/metrics/metrics.js';
import type { WalletService } from '../wallet/service.js';
import { cancelJob, type JobCanceller } from './cancel.js';
import { createJobLeases } from './leases.js';

export type { CancelSettlement, JobCanceller } from './cancel.js';

export type JobRow = typeof jobs.$inferSelect;
/** Whose wallet a job is metered against (its `input.owner`): a workspace's when set, else the user's. */
export interface JobOwner {
  userId?: string | null;
  workspaceId?: string | null;
}
export type NewJob = Omit<typeof jobs.$inferInsert, 'createdAt' | 'updatedAt' | 'status'>;

/** The job as clients see it (GET /v1/jobs/:id, list items, stream events). */
export interface JobView {
  jobId: string;
  id: string;
  kind: JobKind;
  status: JobStatus;
  model: string;
  progress: number;
  output: Record<string, unknown> | null;
  errorCode: string | null;
  errorMessage: string | null;
  creditsReserved: number;
  creditsConsumed: number | null;
  /** The provider's task id stays server-side; only its time estimate is shown. */
  estimatedSeconds: number | null;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

export interface JobListQuery {
  limit: number;
  cursor?: string;
  status?: JobStatus;
  kind?: JobKind;
}

export interface JobsServiceDeps {
  db: Db;
  clock: Clock;
  events: EventBus;
  logger: FastifyBaseLogger;
  wallet: Pick<WalletService, 'release'>;
  /** The lease of a running step, renewed by this process's heartbeat (default 30 s; see leases.ts). */
  stepLeaseSeconds?: number;
  metrics?: Metrics;
}

/** The LISTEN/NOTIFY channel of job changes; the payload names the job only (readers load it). */
export const JOB_CHANGED_CHANNEL = 'job_changed';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isFinal = (status: JobStatus) => FINAL_JOB_STATUSES.includes(status);

export const toJobView = (row: JobRow): JobView => ({
  jobId: row.id,
  id: row.id,
  kind: row.kind,
  status: row.status,
  model: row.modelSlug,
  progress: row.progress,
  output: row.output ?? null,
  errorCode: row.errorCode,
  errorMessage: row.errorMessage,
  creditsReserved: row.tokensReserved,
  creditsConsumed: row.tokensConsumed,
  estimatedSeconds: row.externalId ? row.estimatedSeconds : null,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
  startedAt: row.startedAt?.toISOString() ?? null,
  finishedAt: row.finishedAt?.toISOString() ?? null,
});

/**
 * Jobs: the rows, their state machine and change notifications. Who runs a job (the media gateway) changes it through
 * `update`/`lockOpen`; every change is announced on `job_changed` after it committed, so streams on any instance follow.
 */
export function createJobsService(deps: JobsServiceDeps) {
  const { db, clock, events, logger, wallet } = deps;
  const watchers = new Map<string, Set<() => void>>();
  let subscription: Promise<void> | null = null;
  let canceller: JobCanceller | null = null;
  const leases = createJobLeases({ db, clock, logger, leaseSeconds: deps.stepLeaseSeconds, metrics: deps.metrics });

  function subscribeOnce(): Promise<void> {
    subscription ??= events
      .subscribe(JOB_CHANGED_CHANNEL, (payload) => {
        const jobId = (payload as { jobId?: unknown } | null)?.jobId;
        if (typeof jobId !== 'string') return;
        for (const callback of watchers.get(jobId) ?? []) callback();
      })
      .then(() => undefined)
      .catch((err: unknown) => {
        subscription = null;
        throw err;
      });
    return subscription;
  }
  // Changes announced while the listener was reconnecting were missed: every watcher reads its job again.
  events.onReconnect(() => {
    for (const callbacks of watchers.values()) for (const callback of callbacks) callback();
  });

  async function ownJob(userId: string, id: string): Promise<JobRow> {
    if (!UUID.test(id)) throw notFound('No such job.');
    const [row] = await db
      .select()
      .from(jobs)
      .where(and(eq(jobs.id, id), eq(jobs.userId, userId)));
    if (!row) throw notFound('No such job.');
    return row;
  }

  async function announce(jobId: string): Promise<void> {
    await events.publish(JOB_CHANGED_CHANNEL, { jobId }).catch((err: unknown) => logger.warn({ err, jobId }, 'announcing a job change failed'));
  }

  return {
    announce,

    /** Step leases: `hold` while a process runs a step, `release` after; see leases.ts. */
    hold: leases.hold,
    release: leases.release,
    onResume: leases.onResume,
    resumeAbandoned: leases.resumeAbandoned,
    jobs: leases.definitions,
    stop: leases.stop,

    /** Inserts a QUEUED job (inside the caller's transaction when given). */
    async create(job: NewJob, tx: DbOrTx = db): Promise<JobRow> {
      const now = clock.now();
      const [row] = await tx
        .insert(jobs)
        .values({ ...job, status: 'QUEUED', leaseUntil: leases.queuedUntil(), createdAt: now, updatedAt: now })
        .returning();
      return row!;
    },

    async get(id: string, tx: DbOrTx = db): Promise<JobRow | undefined> {
      const [row] = await tx.select().from(jobs).where(eq(jobs.id, id));
      return row;
    },

    /** The caller's job; 404 for a missing or foreign one. */
    async getOwn(userId: string, id: string): Promise<JobView> {
      return toJobView(await ownJob(userId, id));
    },

    async list(userId: string, query: JobListQuery): Promise<{ items: JobView[]; nextCursor: string | null }> {
      const filters = and(
        eq(jobs.userId, userId),
        query.status ? eq(jobs.status, query.status) : undefined,
        query.kind ? eq(jobs.kind, query.kind) : undefined,
      );
      const page = await newestFirstPage(db, jobs, 'createdAt', filters, query);
      return { items: page.items.map(toJobView), nextCursor: page.nextCursor };
    },

    /** Locks the job inside `tx` and returns it while it is still open (QUEUED or RUNNING); null once it is final. */
    async lockOpen(tx: Tx, id: string): Promise<JobRow | null> {
      const [row] = await tx.select().from(jobs).where(eq(jobs.id, id)).for('update');
      return row && !isFinal(row.status) ? row : null;
    },

    /**
     * Changes an open job; a final job is never changed again (returns null). Call `announce` after the transaction
     * commits (the method does it itself when it runs outside one).
     */
    async update(id: string, changes: Partial<Omit<JobRow, 'id' | 'userId' | 'createdAt'>>, tx?: DbOrTx): Promise<JobRow | null> {
      const now = clock.now();
      const final = changes.status && isFinal(changes.status);
      const [row] = await (tx ?? db)
        .update(jobs)
        .set({ ...changes, updatedAt: now, ...(final ? { finishedAt: now } : {}) })
        .where(and(eq(jobs.id, id), inArray(jobs.status, ['QUEUED', 'RUNNING'])))
        .returning();
      if (row && !tx) await announce(id);
      return row ?? null;
    },

    /** Registers how cancellations are paid for (see `JobCanceller`); without one they are refunded in full. */
    setCanceller(value: JobCanceller): void {
      canceller = value;
    },

    /**
     * Cancels an open job of the caller. A job its provider never got is refunded in full; one it got is refunded only
     * when the provider confirms it stopped the task unbilled, and is otherwise charged (see cancel.ts).
     */
    async cancel(userId: string, id: string): Promise<JobView> {
      const job = await ownJob(userId, id);
      const outcome = isFinal(job.status) ? { row: job, canceled: false } : await cancelJob({ db, clock, logger, wallet }, canceller, job);
      if (!outcome.canceled) {
        throw conflict(`This job has already finished (${outcome.row.status}); only a QUEUED or RUNNING job can be cancelled.`, { status: outcome.row.status });
      }
      await announce(id);
      return toJobView(outcome.row);
    },

    /**
     * The owner's jobs QUEUED or RUNNING, inside the transaction that creates the next one: an advisory lock on the
     * owner, held until `tx` ends, serialises the owner's job creations on every instance, so a count followed by an
     * insert in the same transaction cannot be outrun by a parallel submit.
     */
    async openJobsLocked(tx: Tx, owner: JobOwner): Promise<number> {
      const key = owner.workspaceId ? `workspace:${owner.workspaceId}` : `user:${owner.userId}`;
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`jobs:${key}`}))`);
      const ownerIs = owner.workspaceId
        ? sql`${jobs.input}->'owner'->>'workspaceId' = ${owner.workspaceId}`
        : and(eq(jobs.userId, owner.userId!), sql`${jobs.input}->'owner'->>'userId' = ${owner.userId!}`);
      const [row] = await tx
        .select({ open: sql<number>`count(*)::int` })
        .from(jobs)
        // Spelled as the partial index jobs_open_idx is, so a prepared (generic) plan can use it.
        .where(and(sql`${jobs.status} in ('QUEUED', 'RUNNING')`, ownerIs));
      return Number(row?.open ?? 0);
    },

    /**
     * Calls `onChange` whenever the job may have changed (any instance). Returns the unsubscribe function.
     * Subscribe before reading the current state, so no change falls between the two.
     */
    async watch(jobId: string, onChange: () => void): Promise<() => void> {
      await subscribeOnce();
      let set = watchers.get(jobId);
      if (!set) watchers.set(jobId, (set = new Set()));
      set.add(onChange);
      return () => {
        set.delete(onChange);
        if (set.size === 0 && watchers.get(jobId) === set) watchers.delete(jobId);
      };
    },
  };
}

export type JobsService = ReturnType<typeof createJobsService>;

/** The Job resource's schema, for surfaces that show jobs (the admin playground polls its video jobs). */
export { JobSchema } from './schemas.js';
