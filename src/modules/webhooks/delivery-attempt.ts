import { and, eq, sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import { webhookAttempts, webhookDeliveries, webhookEndpoints } from '../../db/schema/webhooks.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db } from '../../platform/db/database.js';
import { metricsOrPrivate, type Metrics } from '../../platform/metrics/metrics.js';
import { FetchError } from '../../platform/net/outbound-policy.js';
import type { SafeFetcher } from '../../platform/net/safe-fetch.js';
import { failPendingDeliveries } from './deliveries.js';
import { DELIVERY_TIMEOUT_MS, MAX_ATTEMPTS, RETRY_DELAYS_MS } from './delivery-policy.js';
import { deliveryHeaders } from './signing.js';

/**
 * How long a delivery being sent is held: the receiver's timeout and the recording, so an attempt cut by a dead
 * instance is taken over within seconds instead of holding the webhook's deliveries for the whole claim lease.
 */
const SENDING_LEASE_MS = DELIVERY_TIMEOUT_MS + 10_000;
/** Only the body's first bytes of a receiver's answer are read (the answer's content is not used). */
const MAX_ANSWER_BYTES = 1024 * 1024;

export interface AttemptDeps {
  db: Db;
  clock: Clock;
  fetcher: SafeFetcher;
  logger: FastifyBaseLogger;
  /** Where delivery attempts are counted (the service's registry). */
  metrics?: Metrics;
}

/** One attempt of a delivery: sent to the receiver, then its outcome recorded (retry, success, or the webhook disabled). */
export function createDeliveryAttempts(deps: AttemptDeps) {
  const { db, clock, fetcher, logger } = deps;
  const attempts = metricsOrPrivate(deps.metrics).counter({
    name: 'storefront_webhook_delivery_attempts_total',
    help: 'Webhook delivery attempts by outcome: delivered, failed (retried later), exhausted (the last attempt failed: the webhook was disabled)',
    labelNames: ['outcome'],
  });
  for (const outcome of ['delivered', 'failed', 'exhausted']) attempts.inc({ outcome }, 0);

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
      await db
        .update(webhookDeliveries)
        .set({ status: 'FAILED', claim: null, dueAt: null, updatedAt: clock.now() })
        .where(eq(webhookDeliveries.id, deliveryId));
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
        .values({
          deliveryId,
          attempt: outcome.attempt,
          signedAt: outcome.signedAt,
          statusCode: outcome.statusCode,
          succeeded: succeeded ? 'SUCCEEDED' : 'FAILED',
          error: outcome.error,
          durationMs: outcome.durationMs,
          createdAt: now,
        })
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
            ? {
                status: 'DISABLED' as const,
                disabledAt: now,
                disabledReason: `Disabled after ${MAX_ATTEMPTS} failed attempts to deliver ${deliveryId}: ${outcome.error}`,
                updatedAt: now,
              }
            : {}),
        })
        .where(eq(webhookEndpoints.id, webhookId));
      if (exhausted) await failPendingDeliveries(tx, webhookId, now);
      return true;
    });
    if (recorded) attempts.inc({ outcome: succeeded ? 'delivered' : exhausted ? 'exhausted' : 'failed' });
    if (!succeeded)
      logger.info({ deliveryId, webhookId, attempt: outcome.attempt, statusCode: outcome.statusCode, error: outcome.error }, 'webhook delivery attempt failed');
  }

  return { attempt };
}
