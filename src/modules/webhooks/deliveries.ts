import { and, desc, eq, inArray, sql } from 'drizzle-orm';
import { webhookAttempts, webhookDeliveries, webhookEndpoints } from '../../db/schema/webhooks.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { eventPayloads, type DomainEvent, type EventHeader } from '../../platform/events/outbox.js';
import { badRequest, notFound } from '../../platform/http/errors.js';
import { subscribesTo } from './events.js';

export type DeliveryRow = typeof webhookDeliveries.$inferSelect;
export type AttemptRow = typeof webhookAttempts.$inferSelect;

/** The request body of an event: `{ event, createdAt, data }`, serialised once and sent byte for byte on every attempt. */
export const deliveryBody = (event: Pick<DomainEvent, 'name' | 'createdAt' | 'data'>): string =>
  JSON.stringify({ event: event.name, createdAt: event.createdAt.toISOString(), data: event.data });

/**
 * Fans events out to the active webhooks of their users that subscribed to them: one PENDING delivery, due now, per
 * (webhook, event). The unique (webhook, event) index makes a second fan-out of the same event a no-op.
 */
export async function fanOut(tx: DbOrTx, events: EventHeader[], now: Date): Promise<number> {
  const userIds = [...new Set(events.map((event) => event.userId).filter((id): id is string => id !== null))];
  if (userIds.length === 0) return 0;
  const endpoints = await tx
    .select({ id: webhookEndpoints.id, userId: webhookEndpoints.userId, events: webhookEndpoints.events })
    .from(webhookEndpoints)
    .where(and(inArray(webhookEndpoints.userId, userIds), eq(webhookEndpoints.status, 'ACTIVE')));
  const matches = events.flatMap((event) =>
    endpoints.filter((endpoint) => endpoint.userId === event.userId && subscribesTo(endpoint.events, event.name)).map((endpoint) => ({ endpoint, event })),
  );
  if (matches.length === 0) return 0;
  // Only the events someone receives are read in full.
  const payloads = await eventPayloads(tx, [...new Set(matches.map(({ event }) => event.id))]);
  const rows = matches.map(({ endpoint, event }) => ({
    webhookId: endpoint.id,
    eventId: event.id,
    event: event.name,
    body: deliveryBody({ name: event.name, createdAt: event.createdAt, data: payloads.get(event.id) ?? {} }),
    status: 'PENDING' as const,
    dueAt: now,
    createdAt: now,
    updatedAt: now,
  }));
  const inserted = await tx.insert(webhookDeliveries).values(rows).onConflictDoNothing().returning({ id: webhookDeliveries.id });
  return inserted.length;
}

/** Deliveries of a webhook that is being disabled stop waiting: they fail, and their owner can resend them later. */
export async function failPendingDeliveries(tx: DbOrTx, webhookId: string, now: Date): Promise<void> {
  await tx
    .update(webhookDeliveries)
    .set({ status: 'FAILED', dueAt: null, claim: null, updatedAt: now })
    .where(and(eq(webhookDeliveries.webhookId, webhookId), eq(webhookDeliveries.status, 'PENDING')));
}

/** A delivery with its attempts, as `GET /v1/webhooks/:id/deliveries` shows it. */
export function toDeliveryView(delivery: DeliveryRow, attempts: AttemptRow[]) {
  return {
    id: delivery.id,
    event: delivery.event,
    status: delivery.status,
    resendOf: delivery.resendOf,
    attemptCount: delivery.attemptCount,
    lastStatusCode: delivery.lastStatusCode,
    nextAttemptAt: delivery.status === 'PENDING' ? (delivery.dueAt?.toISOString() ?? null) : null,
    createdAt: delivery.createdAt.toISOString(),
    attempts: attempts.map((a) => ({
      attempt: a.attempt,
      statusCode: a.statusCode,
      succeeded: a.succeeded === 'SUCCEEDED',
      error: a.error,
      durationMs: a.durationMs,
      signedAt: a.signedAt.toISOString(),
    })),
  };
}

/** The newest deliveries of a webhook (keyset on created_at, id) with their attempts. */
export async function recentDeliveries(tx: DbOrTx, webhookId: string, page: { limit: number; before?: { createdAt: Date; id: string } }) {
  const conditions = [eq(webhookDeliveries.webhookId, webhookId)];
  if (page.before)
    conditions.push(sql`(${webhookDeliveries.createdAt}, ${webhookDeliveries.id}) < (${page.before.createdAt.toISOString()}::timestamptz, ${page.before.id})`);
  const deliveries = await tx
    .select()
    .from(webhookDeliveries)
    .where(and(...conditions))
    .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
    .limit(page.limit + 1);
  const shown = deliveries.slice(0, page.limit);
  const attempts = shown.length
    ? await tx
        .select()
        .from(webhookAttempts)
        .where(
          inArray(
            webhookAttempts.deliveryId,
            shown.map((d) => d.id),
          ),
        )
        .orderBy(webhookAttempts.attempt)
    : [];
  return {
    items: shown.map((d) =>
      toDeliveryView(
        d,
        attempts.filter((a) => a.deliveryId === d.id),
      ),
    ),
    last: deliveries.length > page.limit ? shown[shown.length - 1]! : null,
  };
}

/** Queues the original body of a delivery again, as a new delivery (its own id and attempt budget) due now. */
export async function resendDelivery(tx: DbOrTx, webhook: { id: string; status: string }, deliveryId: string, now: Date) {
  const [original] = await tx
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.webhookId, webhook.id)));
  if (!original) throw notFound('No delivery with this id exists for this webhook.');
  if (webhook.status !== 'ACTIVE') {
    throw badRequest('This webhook is disabled, so nothing can be delivered to it. Re-enable it with PATCH /v1/webhooks/:id and status ACTIVE, then resend.');
  }
  const [copy] = await tx
    .insert(webhookDeliveries)
    .values({
      webhookId: webhook.id,
      eventId: original.eventId,
      event: original.event,
      body: original.body,
      resendOf: original.id,
      status: 'PENDING',
      dueAt: now,
      createdAt: now,
      updatedAt: now,
    })
    .returning();
  return toDeliveryView(copy!, []);
}
