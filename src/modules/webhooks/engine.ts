import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db } from '../../platform/db/database.js';
import { claimUndispatchedEvents } from '../../platform/events/outbox.js';
import type { Jobs } from '../../platform/jobs/jobs.js';
import type { Metrics } from '../../platform/metrics/metrics.js';
import type { SafeFetcher } from '../../platform/net/safe-fetch.js';
import { fanOut } from './deliveries.js';
import { createDeliveryAttempts } from './delivery-attempt.js';
import { claimDueDeliveries, claimNextDelivery, workWaiting } from './delivery-claims.js';

export const DELIVER_QUEUE = 'webhooks.deliver';
export const PURGE_QUEUE = 'webhooks.purge';

declare module '../../platform/jobs/jobs.js' {
  interface JobPayloads {
    'webhooks.deliver': { deliveryId: string; claim: string };
    /** Daily: finished deliveries and dispatched outbox events past the retention. */
    'webhooks.purge': Record<string, never>;
  }
}

const EVENTS_PER_BATCH = 200;
/** How long and how many deliveries one job goes on with the same webhook (the job expires after 60 s). */
const IN_TURN_BUDGET_MS = 5_000;
const IN_TURN_MAX_DELIVERIES = 50;

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
  const { db, clock, queue, logger } = deps;
  const { attempt } = createDeliveryAttempts(deps);

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
    const claimed = await claimDueDeliveries({ db, clock });
    for (const { id, claim } of claimed) await queue.send(DELIVER_QUEUE, { deliveryId: id, claim });
    return claimed.length;
  }

  /**
   * One round of the engine: new events, then due attempts. One read first says whether there is either: an idle
   * instance runs that statement alone twice a second instead of two transactions (on the embedded database their
   * garbage alone kept V8 from shrinking its young generation).
   */
  async function runOnce(): Promise<void> {
    const waiting = await workWaiting({ db, clock });
    if (waiting.events) {
      while ((await dispatchEvents()) === EVENTS_PER_BATCH) {
        // a backlog: keep fanning out before claiming
      }
    }
    if (waiting.events || waiting.due) await claimDue();
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
      next = await claimNextDelivery({ db, clock }, outcome.webhookId);
    }
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
