import { and, eq, sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import { webhookAttempts, webhookDeliveries, webhookEndpoints } from '../../db/schema/webhooks.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db } from '../../platform/db/database.js';
import { claimUndispatchedEvents } from '../../platform/events/outbox.js';
import type { Jobs } from '../../platform/jobs/jobs.js';
import { metricsOrPrivate, type Metrics } from '../../platform/metrics/metrics.js';
import { FetchError } from '../../platform/net/outbound-policy.js';
import type { SafeFetcher } from '../../platform/net/safe-fetch.js';
import { failPendingDeliveries, fanOut } from './deliveries.js';
import { deliveryHeaders } from './signing.js';

export const DELIVER_QUEUE = 'webhooks.deliver';
export const PURGE_QUEUE = 'webhooks.purge';

declare module '../../platform/jobs/jobs.js' {
  interface JobPayloads {
    'webhooks.deliver': { deliveryId: string; claim: string };
    /** Daily: finished deliveries and dispatched outbox events past the retention. */
    'webhooks.purge': Record<string, never>;
  }
}

/** The receiver must answer 2xx within this time (spec A "Delivery semantics"). */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** Waits after the 1st, 2nd, ... failed attempt (spec: retries after 5 s, 30 s, 2 min, 10 min, 1 h, 6 h). */
export const RETRY_DELAYS_MS = [5_000, 30_000, 2 * 60_000, 10 * 60_000, 60 * 60_000, 6 * 60 * 60_000] as const;
/** The attempt budget of one delivery; when the last one fails the webhook is disabled (docs/decisions.md). */
export const MAX_ATTEMPTS = 6;
/** How long a claimed delivery waits for its job before another instance may claim it again (the job expires too). */
const LEASE_MS = 60_000;
/**
 * How long a delivery being sent is held: the receiver's timeout and the recording, so an attempt cut by a dead
 * instance is taken over within seconds instead of holding the webhook's deliveries for the whole claim lease.
 */
const SENDING_LEASE_MS = DELIVERY_TIMEOUT_MS + 10_000;
const EVENTS_PER_BATCH = 200;
/** How long and how many deliveries one job goes on with the same webhook (the job expires after 60 s). */
const IN_TURN_BUDGET_MS = 5_000;
const IN_TURN_MAX_DELIVERIES = 50;
const CLAIMS_PER_BATCH = 200;
/** Only the body's first bytes of a receiver's answer are read (the answer's content is not used). */
const MAX_ANSWER_BYTES = 1024 * 1024;

export interface EngineDeps {
  db: Db;
  clock: Clock;
  fetcher: SafeFetcher;
  queue: Pick<Jobs, 'send' | 'running'>;
  logger: FastifyBaseLogger;
  /** Where delivery attempts are counted (the service's registry). */
  metrics?: Metrics;
}

/**
 * The delivery engine. The outbox (domain_events) is its only input: `dispatch` fans new events out into delivery
 * rows and marks them dispatched in one transaction, so an event is delivered exactly when its change committed and
 * none is lost by a crash (undispatched rows wait for the next run, on any instance). Due deliveries are then claimed
 * (at most one attempt in flight per webhook, so a slow receiver holds one worker and never another webhook's
 * deliveries) and each attempt runs as a pg-boss job. Due times come from the injected clock.
 */
export function createDeliveryEngine(deps: EngineDeps) {
  const { db, clock, fetcher, queue, logger } = deps;
  const attempts = metricsOrPrivate(deps.metrics).counter({
    name: 'storefront_webhook_delivery_attempts_total',
    help: 'Webhook delivery attempts by outcome: delivered, failed (retried later), exhausted (the last attempt failed: the webhook was disabled)',
    labelNames: ['outcome'],
  });
  for (const outcome of ['delivered', 'failed', 'exhausted']) attempts.inc({ outcome }, 0);

  /** Outbox → delivery rows; returns how many events were handled. */
  async function dispatchEvents(): Promise<number> {
    return db.transaction(async (tx) => {
      const now = clock.now();
      const events = await claimUndispatchedEvents(tx, EVENTS_PER_BATCH, now);
      await fanOut(tx, events, now);
      return events.length;
    });
  }

  /**
   * Claims due deliveries (PENDING and due, or SENDING with a lapsed lease) of active webhooks that have no attempt in
   * flight, one per webhook, and enqueues an attempt for each. One instance claims at a time (advisory lock).
   */
  async function claimDue(): Promise<number> {
    const claimed = await db.transaction(async (tx) => {
      const lock = await tx.execute(sql`select pg_try_advisory_xact_lock(hashtext('webhooks:claim')) as locked`);
      if (!(lock as { rows: Array<{ locked: boolean }> }).rows[0]?.locked) return [];
      const now = clock.now().toISOString();
      const leaseUntil = new Date(clock.now().getTime() + LEASE_MS).toISOString();
      const result = await tx.execute(sql`
        with due as (
          select distinct on (d.webhook_id) d.id
          from webhook_deliveries d
          join webhook_endpoints w on w.id = d.webhook_id and w.status = 'ACTIVE'
          where d.status in ('PENDING', 'SENDING') and d.due_at <= ${now}::timestamptz
            and not exists (
              select 1 from webhook_deliveries busy
              where busy.webhook_id = d.webhook_id and busy.status = 'SENDING' and busy.due_at > ${now}::timestamptz)
          order by d.webhook_id, d.due_at, d.id
        )
        update webhook_deliveries d
        set status = 'SENDING', claim = gen_random_uuid()::text, due_at = ${leaseUntil}::timestamptz, updated_at = ${now}::timestamptz
        from (select id from due limit ${CLAIMS_PER_BATCH}) c
        where d.id = c.id and d.status in ('PENDING', 'SENDING') and d.due_at <= ${now}::timestamptz
        returning d.id, d.claim`);
      return (result as { rows: Array<{ id: string; claim: string }> }).rows;
    });
    for (const { id, claim } of claimed) await queue.send(DELIVER_QUEUE, { deliveryId: id, claim });
    return claimed.length;
  }

  /** One round of the engine: new events, then due attempts. */
  async function runOnce(): Promise<void> {
    while ((await dispatchEvents()) === EVENTS_PER_BATCH) {
      // a backlog: keep fanning out before claiming
    }
    await claimDue();
  }

  /**
   * One attempt of a delivery: taken by its claim (so a duplicate job does nothing), signed afresh, sent, recorded.
   * Returns the webhook and whether the receiver took it, or null when there was nothing to send.
   */
  async function attempt(deliveryId: string, claim: string): Promise<{ webhookId: string; succeeded: boolean } | null> {
    const sendingClaim = `${claim}:sending`;
    const started = clock.now();
    const [delivery] = await db
      .update(webhookDeliveries)
      .set({ claim: sendingClaim, dueAt: new Date(started.getTime() + SENDING_LEASE_MS), updatedAt: started })
      .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.status, 'SENDING'), eq(webhookDeliveries.claim, claim)))
      .returning();
    if (!delivery) return null;
    const [endpoint] = await db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, delivery.webhookId));
    if (!endpoint || endpoint.status !== 'ACTIVE') {
      await db.update(webhookDeliveries).set({ status: 'FAILED', claim: null, dueAt: null, updatedAt: clock.now() }).where(eq(webhookDeliveries.id, deliveryId));
      return null;
    }
    const number = delivery.attemptCount + 1;
    const timestamp = Math.floor(started.getTime() / 1000);
    const headers = deliveryHeaders({ secret: endpoint.secret, event: delivery.event, deliveryId: delivery.id, timestamp, body: delivery.body });
    const startedAt = performance.now();
    let statusCode: number | null;
    let error: string | null = null;
    try {
      const answer = await fetcher(endpoint.url, {
        method: 'POST',
        headers,
        body: delivery.body,
        timeoutMs: DELIVERY_TIMEOUT_MS,
        maxRedirects: 0,
        maxBytes: MAX_ANSWER_BYTES,
        throwOnHttpError: false,
      });
      statusCode = answer.status;
      if (answer.status < 200 || answer.status > 299) error = `The receiver answered ${answer.status}; only a 2xx answer counts as delivered.`;
    } catch (err) {
      if (!(err instanceof FetchError)) throw err;
      statusCode = err.status;
      error =
        err.reason === 'TOO_MANY_REDIRECTS'
          ? `The receiver answered ${err.status} (a redirect); redirects are not followed and count as a failure. Register the final URL.`
          : err.message;
    }
    await record(delivery.id, endpoint.id, sendingClaim, {
      attempt: number,
      signedAt: new Date(timestamp * 1000),
      statusCode,
      error,
      durationMs: Math.round(performance.now() - startedAt),
    });
    return { webhookId: endpoint.id, succeeded: error === null };
  }

  /**
   * Claims the next due delivery of one webhook, unless it has an attempt out or a round is claiming (then the
   * round takes it). Lets the worker that just delivered go on with the same webhook without a queue round trip.
   */
  async function claimNext(webhookId: string): Promise<{ id: string; claim: string } | null> {
    return db.transaction(async (tx) => {
      const lock = await tx.execute(sql`select pg_try_advisory_xact_lock(hashtext('webhooks:claim')) as locked`);
      if (!(lock as { rows: Array<{ locked: boolean }> }).rows[0]?.locked) return null;
      const now = clock.now().toISOString();
      const leaseUntil = new Date(clock.now().getTime() + LEASE_MS).toISOString();
      const result = await tx.execute(sql`
        update webhook_deliveries d
        set status = 'SENDING', claim = gen_random_uuid()::text, due_at = ${leaseUntil}::timestamptz, updated_at = ${now}::timestamptz
        where d.id = (
            select n.id from webhook_deliveries n
            where n.webhook_id = ${webhookId} and n.status = 'PENDING' and n.due_at <= ${now}::timestamptz
            order by n.due_at, n.id limit 1)
          and d.status = 'PENDING'
          and not exists (
            select 1 from webhook_deliveries busy
            where busy.webhook_id = ${webhookId} and busy.status = 'SENDING' and busy.due_at > ${now}::timestamptz)
          and exists (select 1 from webhook_endpoints w where w.id = ${webhookId} and w.status = 'ACTIVE')
        returning d.id, d.claim`);
      return (result as { rows: Array<{ id: string; claim: string }> }).rows[0] ?? null;
    });
  }

  /**
   * The job: an attempt, then, while the receiver keeps taking them, the webhook's next due deliveries in turn (one
   * at a time, within a budget well under the job's expiry), so a busy webhook is not paced by the queue's polling.
   */
  async function attemptInTurn(deliveryId: string, claim: string): Promise<void> {
    const started = performance.now();
    let next: { id: string; claim: string } | null = { id: deliveryId, claim };
    // The turn ends before claiming what it would not send: a claimed delivery left behind holds the webhook until
    // its lease lapses (the kill test found a busy webhook stalled a minute after every 50 deliveries).
    for (let sent = 1; next; sent++) {
      const outcome = await attempt(next.id, next.claim);
      if (!outcome?.succeeded || sent >= IN_TURN_MAX_DELIVERIES || performance.now() - started > IN_TURN_BUDGET_MS) return;
      next = await claimNext(outcome.webhookId);
    }
  }

  async function record(
    deliveryId: string,
    webhookId: string,
    sendingClaim: string,
    outcome: { attempt: number; signedAt: Date; statusCode: number | null; error: string | null; durationMs: number },
  ): Promise<void> {
    const succeeded = outcome.error === null;
    const exhausted = !succeeded && outcome.attempt >= MAX_ATTEMPTS;
    const recorded = await db.transaction(async (tx) => {
      const now = clock.now();
      const [updated] = await tx
        .update(webhookDeliveries)
        .set({
          status: succeeded ? 'SUCCEEDED' : exhausted ? 'FAILED' : 'PENDING',
          attemptCount: outcome.attempt,
          lastStatusCode: outcome.statusCode,
          claim: null,
          dueAt: succeeded || exhausted ? null : new Date(now.getTime() + RETRY_DELAYS_MS[outcome.attempt - 1]!),
          updatedAt: now,
        })
        .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.claim, sendingClaim)))
        .returning({ id: webhookDeliveries.id });
      // The lease lapsed and another attempt took the delivery over: that attempt's outcome counts, not this one.
      if (!updated) return false;
      await tx
        .insert(webhookAttempts)
        .values({ deliveryId, attempt: outcome.attempt, signedAt: outcome.signedAt, statusCode: outcome.statusCode, succeeded: succeeded ? 'SUCCEEDED' : 'FAILED', error: outcome.error, durationMs: outcome.durationMs, createdAt: now })
        .onConflictDoNothing();
      if (succeeded) {
        await tx.update(webhookEndpoints).set({ failureCount: 0 }).where(eq(webhookEndpoints.id, webhookId));
        return true;
      }
      await tx
        .update(webhookEndpoints)
        .set({
          failureCount: sql`${webhookEndpoints.failureCount} + 1`,
          ...(exhausted
            ? { status: 'DISABLED' as const, disabledAt: now, disabledReason: `Disabled after ${MAX_ATTEMPTS} failed attempts to deliver ${deliveryId}: ${outcome.error}`, updatedAt: now }
            : {}),
        })
        .where(eq(webhookEndpoints.id, webhookId));
      if (exhausted) await failPendingDeliveries(tx, webhookId, now);
      return true;
    });
    if (recorded) attempts.inc({ outcome: succeeded ? 'delivered' : exhausted ? 'exhausted' : 'failed' });
    if (!succeeded) logger.info({ deliveryId, webhookId, attempt: outcome.attempt, statusCode: outcome.statusCode, error: outcome.error }, 'webhook delivery attempt failed');
  }

  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  let again = false;

  /** Runs a round now (or right after the one in progress); rounds never overlap within an instance. */
  function kick(): void {
    if (!queue.running) return;
    if (running) {
      again = true;
      return;
    }
    running = runOnce()
      .catch((err: unknown) => logger.error({ err }, 'webhook dispatch failed'))
      .finally(() => {
        running = null;
        if (again) {
          again = false;
          kick();
        }
      });
  }

  return {
    runOnce,
    attemptInTurn,
    kick,
    /** Runs a round every `intervalMs` (the workers must run: rounds are skipped while the job runner is stopped). */
    start(intervalMs: number): void {
      if (timer) return;
      timer = setInterval(kick, intervalMs);
      timer.unref();
    },
    async stop(): Promise<void> {
      if (timer) clearInterval(timer);
      timer = null;
      await running;
    },
  };
}

export type DeliveryEngine = ReturnType<typeof createDeliveryEngine>;
