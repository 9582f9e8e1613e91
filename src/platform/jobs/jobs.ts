import PgBoss from 'pg-boss';
import type { FastifyBaseLogger } from 'fastify';
import { queryInTransaction, type Database, type DbOrTx } from '../db/database.js';
import type { Metrics } from '../metrics/metrics.js';
import { watchQueues, WORKER_FALLBACK_POLL_SECONDS } from './queue-watch.js';

/** Each module adds its queues here: `declare module '.../jobs.js' { interface JobPayloads { 'x.y': {...} } }`. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface JobPayloads {}
export type JobName = Extract<keyof JobPayloads, string>;

export interface JobOptions {
  retryLimit?: number;
  retryDelaySeconds?: number;
  retryBackoff?: boolean;
  expireInSeconds?: number;
  /** A cron expression: the queue also runs on this schedule (payload `{}`). */
  cron?: string;
  /** Parallel jobs of this queue per instance. */
  concurrency?: number;
}

export interface JobDefinition<N extends JobName = JobName> {
  name: N;
  handler: (payload: JobPayloads[N], meta: { id: string; retryCount: number }) => Promise<void>;
  options?: JobOptions;
}

/** Any one queue's definition (a union over queue names, so each handler keeps its own payload type). */
export type AnyJobDefinition = { [N in JobName]: JobDefinition<N> }[JobName];

export const defineJob = <N extends JobName>(definition: JobDefinition<N>): JobDefinition<N> => definition;

export interface SendOptions {
  startAfterSeconds?: number;
  /** Deduplicates: a second send with the same key while the first is queued is dropped. */
  singletonKey?: string;
  /** Queues the message inside this transaction: it exists exactly when the caller's rows commit. */
  tx?: DbOrTx;
}

export interface Jobs {
  /** Adds queues and their handlers; before `start`. A queue name registered twice fails. */
  register(definitions: AnyJobDefinition[]): void;
  /** Throws, naming them, unless each of these queues has a handler (the boot passes every queue code can send to). */
  assertHandled(queues: readonly JobName[]): void;
  send<N extends JobName>(name: N, payload: JobPayloads[N], options?: SendOptions): Promise<string | null>;
  /** Starts the workers and schedules; `workers: false` only enqueues (useful for one-off scripts). */
  start(options?: { workers?: boolean }): Promise<void>;
  stop(timeoutMs?: number): Promise<void>;
  readonly running: boolean;
}

/**
 * pg-boss on the service's own database. On the embedded database pg-boss talks through our PGlite handle
 * (multi-statement SQL goes through `exec`); on PostgreSQL it keeps a small pool of its own.
 */
export function createJobs(options: { database: Database; databaseUrl: string | null; logger: FastifyBaseLogger; metrics?: Metrics }): Jobs {
  const { database, logger } = options;
  const byName = new Map<string, AnyJobDefinition>();
  if (options.metrics) registerQueueMetrics(options.metrics, database, () => [...byName.keys()], logger);

  const boss = new PgBoss(
    database.kind === 'pg' && options.databaseUrl
      ? { connectionString: options.databaseUrl, max: 4, schedule: true }
      : { db: { executeSql: embeddedExecutor(database) }, schedule: true },
  );
  boss.on('error', (err) => logger.error({ err }, 'job queue error'));
  let running = false;
  const workerIds = new Map<string, string[]>();
  const wake = (queue: string) => {
    for (const id of workerIds.get(queue) ?? []) boss.notifyWorker(id);
  };
  let watch: { stop(): Promise<void> } | null = null;

  return {
    get running() {
      return running;
    },
    register(definitions) {
      if (running) throw new Error('Register job queues before the job runner starts');
      for (const definition of definitions) {
        if (byName.has(definition.name)) throw new Error(`Job queue "${definition.name}" has two handlers`);
        byName.set(definition.name, definition);
      }
    },
    assertHandled(queues) {
      const missing = queues.filter((name) => !byName.has(name));
      if (missing.length > 0) {
        throw new Error(
          `No handler is registered for job queue ${missing.map((name) => `"${name}"`).join(', ')}: every queue code can send to needs one at start`,
        );
      }
    },
    async send(name, payload, sendOptions = {}) {
      const definition = byName.get(name);
      if (!definition) throw new Error(`No handler is registered for job queue "${name}"`);
      const id = await boss.send(name, payload as object, {
        retryLimit: definition.options?.retryLimit ?? 3,
        retryDelay: definition.options?.retryDelaySeconds ?? 5,
        retryBackoff: definition.options?.retryBackoff ?? true,
        expireInSeconds: definition.options?.expireInSeconds ?? 15 * 60,
        startAfter: sendOptions.startAfterSeconds,
        singletonKey: sendOptions.singletonKey,
        ...(sendOptions.tx ? { db: inTransaction(sendOptions.tx) } : {}),
      });
      // Sent outside a transaction, the job is there now: this instance's workers take it at once. One sent in a
      // transaction exists only once the caller commits; the queue watch finds it then.
      if (!sendOptions.tx && !sendOptions.startAfterSeconds) wake(name);
      return id;
    },
    async start({ workers = true } = {}) {
      await boss.start();
      for (const definition of byName.values()) {
        await boss.createQueue(definition.name);
        if (!workers) continue;
        const concurrency = definition.options?.concurrency ?? 1;
        for (let i = 0; i < concurrency; i++) {
          const id = await boss.work(
            definition.name,
            { pollingIntervalSeconds: WORKER_FALLBACK_POLL_SECONDS, batchSize: 1, includeMetadata: true },
            async (jobs) => {
              for (const job of jobs) {
                await (definition.handler as JobDefinition['handler'])(job.data as never, { id: job.id, retryCount: job.retryCount });
              }
            },
          );
          workerIds.set(definition.name, [...(workerIds.get(definition.name) ?? []), id]);
        }
        if (definition.options?.cron) await boss.schedule(definition.name, definition.options.cron, {});
      }
      if (workers) watch = watchQueues({ database, logger, onWaiting: (queues) => queues.forEach(wake) });
      running = true;
    },
    async stop(timeoutMs = 10_000) {
      if (!running) return;
      running = false;
      await watch?.stop();
      watch = null;
      workerIds.clear();
      await boss.stop({ graceful: true, wait: true, timeout: timeoutMs });
    },
  };
}

function embeddedExecutor(database: Database) {
  // pg-boss sends its migrations as multi-statement strings without parameters, which only `exec` accepts.
  return (text: string, values?: unknown[]) => (values && values.length > 0 ? database.query(text, values) : database.exec(text));
}

/** pg-boss's statements on a caller's Drizzle transaction (pg-boss's `db` send option). */
const inTransaction = (tx: DbOrTx) => ({ executeSql: (text: string, values: unknown[] = []) => queryInTransaction(tx, text, values) });

/**
 * Queue depth and the age of the oldest waiting job per queue, read from pg-boss's job table when scraped (one
 * grouped query on its index of waiting jobs, job_i5). Waiting means ready to run now: created or retrying and due; a job
 * delayed on purpose (a webhook retry in an hour) is not late. Every registered queue reports, 0 when empty.
 */
type QueueBacklog = { waiting: number; oldestSeconds: number };

function registerQueueMetrics(metrics: Metrics, database: Database, queues: () => string[], logger: FastifyBaseLogger): void {
  let backlog: Promise<Map<string, QueueBacklog>> | null = null;
  // Both gauges are collected in one scrape: they share one query.
  const read = () =>
    (backlog ??= database
      .query<{ name: string; waiting: number; oldest: number }>(
        `select name, count(*)::int as waiting, coalesce(extract(epoch from now() - min(created_on)), 0)::float8 as oldest
         from pgboss.job where state < 'active' and start_after <= now() group by name`,
      )
      .then(
        (result) => new Map(result.rows.map((row) => [row.name, { waiting: Number(row.waiting), oldestSeconds: Math.max(0, Number(row.oldest)) }])),
        (err: unknown) => {
          // Before pg-boss created its schema (a process that never started the job runner) there is no backlog.
          logger.debug({ err }, 'job queue metrics unavailable');
          return new Map<string, QueueBacklog>();
        },
      )
      .finally(() => setTimeout(() => (backlog = null), 0)));
  const gauges: { name: string; help: string; value: (row: QueueBacklog | undefined) => number }[] = [
    {
      name: 'storefront_jobs_waiting',
      help: 'Jobs ready to run and not yet started, by queue (read from pg-boss when scraped)',
      value: (row) => row?.waiting ?? 0,
    },
    {
      name: 'storefront_jobs_oldest_waiting_seconds',
      help: 'Age of the oldest job ready to run and not yet started, by queue (0 when none waits)',
      value: (row) => row?.oldestSeconds ?? 0,
    },
  ];
  for (const { name, help, value } of gauges) {
    metrics.gauge({
      name,
      help,
      labelNames: ['queue'],
      async collect() {
        const rows = await read();
        this.reset();
        for (const queue of new Set([...queues(), ...rows.keys()])) this.set({ queue }, value(rows.get(queue)));
      },
    });
  }
}
