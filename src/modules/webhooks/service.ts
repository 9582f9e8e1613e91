import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import { badRequest } from '../../platform/http/errors.js';
import { decodeCursor, encodeCursor } from '../../platform/http/pagination.js';
import { defineJob, type AnyJobDefinition, type Jobs } from '../../platform/jobs/jobs.js';
import type { SafeFetcher } from '../../platform/net/safe-fetch.js';
import { recentDeliveries, resendDelivery } from './deliveries.js';
import type { ResolveHost } from './destination.js';
import { createDeliveryEngine, DELIVER_QUEUE, PURGE_QUEUE } from './engine.js';
import { purgeOldDeliveries } from './retention.js';
import { WEBHOOK_EVENTS } from './events.js';
import { createRegistrations, ownWebhook, type NewWebhook, type WebhookChanges } from './registrations.js';
import type { Metrics } from '../../platform/metrics/metrics.js';

export { WEBHOOK_EVENTS, WEBHOOK_EVENT_CHOICES } from './events.js';
export { MAX_ATTEMPTS, RETRY_DELAYS_MS, DELIVERY_TIMEOUT_MS } from './delivery-policy.js';
export type { NewWebhook, WebhookChanges } from './registrations.js';

export interface WebhooksServiceDeps {
  db: Db;
  clock: Clock;
  /** The SSRF-safe fetcher: every delivery goes through it and is checked at delivery time. */
  fetcher: SafeFetcher;
  queue: Pick<Jobs, 'send' | 'running'>;
  logger: FastifyBaseLogger;
  /** ALLOW_PRIVATE_NETWORK: private and loopback addresses are accepted at registration, over http too (the fetcher agrees). */
  allowPrivateNetwork: boolean;
  /** How often the engine looks for new outbox events and due retries (default 500 ms). */
  pollIntervalMs?: number;
  resolveHost?: ResolveHost;
  /** Where delivery attempts are counted (the service's registry). */
  metrics?: Metrics;
}

/** Outgoing webhooks (spec A "Outgoing webhooks"): registrations, the delivery log and the delivery engine. */
export function createWebhooksService(deps: WebhooksServiceDeps) {
  const { db, clock } = deps;
  const registrations = createRegistrations(deps);
  const engine = createDeliveryEngine(deps);

  return {
    events: () => ({ items: [...WEBHOOK_EVENTS] }),
    create: (userId: string, input: NewWebhook) => registrations.create(userId, input),
    list: (userId: string) => registrations.list(userId),
    update: (userId: string, id: string, changes: WebhookChanges) => registrations.update(userId, id, changes),
    rotateSecret: (userId: string, id: string) => registrations.rotateSecret(userId, id),
    disableAllForUser: (userId: string, tx?: DbOrTx) => registrations.disableAllForUser(userId, tx),

    /** The webhook's newest deliveries with their attempts and response codes. */
    async deliveries(userId: string, webhookId: string, page: { limit: number; cursor?: string }) {
      await ownWebhook(db, userId, webhookId);
      const position = page.cursor ? decodeCursor(page.cursor) : null;
      const before = position ? { createdAt: new Date(String(position.sort)), id: position.id } : undefined;
      if (before && Number.isNaN(before.createdAt.getTime()))
        throw badRequest('The cursor is not valid. Use the nextCursor value from the previous page, or omit it to start over.');
      const result = await recentDeliveries(db, webhookId, { limit: page.limit, before });
      return { items: result.items, nextCursor: result.last ? encodeCursor({ sort: result.last.createdAt.toISOString(), id: result.last.id }) : null };
    },

    /** Sends a delivery's original body again as a new delivery; the engine picks it up at once. */
    async resend(userId: string, webhookId: string, deliveryId: string) {
      const delivery = await db.transaction(async (tx) => resendDelivery(tx, await ownWebhook(tx, userId, webhookId), deliveryId, clock.now()));
      engine.kick();
      return delivery;
    },

    /** Deletes finished deliveries and dispatched outbox events older than the retention (30 days). */
    purgeOld: () => purgeOldDeliveries(db, clock.now()),

    /** One round of the engine by hand (operators, tests): fan out new outbox events, enqueue due attempts. */
    runOnce: () => engine.runOnce(),

    jobs(): AnyJobDefinition[] {
      return [
        defineJob({
          name: DELIVER_QUEUE,
          // Attempts are recorded by the engine itself; pg-boss retries only a crash of the handler (the lease covers it too).
          options: { retryLimit: 2, retryDelaySeconds: 5, concurrency: 4, expireInSeconds: 60 },
          handler: async ({ deliveryId, claim }) => {
            await engine.attemptInTurn(deliveryId, claim);
            engine.kick();
          },
        }),
        defineJob({
          name: PURGE_QUEUE,
          options: { cron: '17 3 * * *', retryLimit: 1, expireInSeconds: 15 * 60 },
          handler: async () => {
            const purged = await purgeOldDeliveries(db, clock.now());
            deps.logger.info(purged, 'old webhook deliveries and dispatched events purged');
          },
        }),
      ];
    },

    /** Starts the engine's rounds (they run only while the job workers run). */
    start(): void {
      engine.start(deps.pollIntervalMs ?? 500);
    },
    stop: () => engine.stop(),
  };
}

export type WebhooksService = ReturnType<typeof createWebhooksService>;
