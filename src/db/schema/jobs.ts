import { sql } from 'drizzle-orm';
import { doublePrecision, index, integer, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { users } from './auth.js';
import { createdAt, idColumn, tz } from './columns.js';

/** What a job makes: images (async image calls), a video, a lip-synced video, a video extension. */
export const JOB_KINDS = ['IMAGE', 'VIDEO', 'LIP_SYNC', 'VIDEO_EXTEND'] as const;
export type JobKind = (typeof JOB_KINDS)[number];

/** QUEUED -> RUNNING -> SUCCEEDED | FAILED; QUEUED or RUNNING -> CANCELED (by the owner). The last three are final. */
export const JOB_STATUSES = ['QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
export const FINAL_JOB_STATUSES: readonly JobStatus[] = ['SUCCEEDED', 'FAILED', 'CANCELED'];

/**
 * A long generation (spec A "Jobs and files"). The job id is also the wallet request id of its reservation, so the
 * charge of a job is settled exactly once by the wallet's unique key however often the job runs.
 */
export const jobs = pgTable(
  'jobs',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    kind: text('kind', { enum: JOB_KINDS }).notNull(),
    status: text('status', { enum: JOB_STATUSES }).notNull().default('QUEUED'),
    modelId: uuid('model_id').notNull(),
    modelSlug: text('model_slug').notNull(),
    subscriptionId: uuid('subscription_id'),
    /** The wallet request id of the job's reservation (the job id). */
    requestId: text('request_id').notNull().unique(),
    /** The normalised request: prompt, sizes, controls, sources already copied into our storage. */
    input: jsonb('input').$type<Record<string, unknown>>().notNull(),
    output: jsonb('output').$type<Record<string, unknown>>(),
    errorCode: text('error_code'),
    errorMessage: text('error_message'),
    /** Tokens reserved at submit: the price of the job, fixed then. */
    tokensReserved: integer('credits_reserved').notNull().default(0),
    /** Tokens finally charged (null until settled). */
    tokensConsumed: integer('credits_consumed'),
    /** 0 to 1. */
    progress: doublePrecision('progress').notNull().default(0),
    /** The provider's task id of an asynchronous upstream. */
    externalId: text('external_id'),
    providerAccountId: uuid('provider_account_id'),
    estimatedSeconds: integer('estimated_seconds'),
    /** Failed polls in a row (transient upstream trouble), reset by every good poll. */
    pollFailures: integer('poll_failures').notNull().default(0),
    createdAt: createdAt(),
    updatedAt: tz('updated_at').notNull().defaultNow(),
    startedAt: tz('started_at'),
    finishedAt: tz('finished_at'),
    /**
     * While a process runs a step of the job, the lease its heartbeat renews; null between steps (pg-boss holds the
     * next message). A lapsed lease means the process died mid-step: the jobs sweeper queues the step again.
     */
    leaseUntil: tz('lease_until'),
  },
  (t) => [
    index('jobs_user_created_idx').on(t.userId, t.createdAt, t.id),
    index('jobs_lease_idx')
      .on(t.leaseUntil)
      .where(sql`${t.leaseUntil} is not null`),
    // The open jobs alone, counted against the plan's concurrentJobs at every job submit (JobsService.openJobsLocked).
    index('jobs_open_idx')
      .on(t.userId)
      .where(sql`${t.status} in ('QUEUED', 'RUNNING')`),
  ],
);
