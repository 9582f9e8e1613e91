import { and, inArray, lt } from 'drizzle-orm';
import { webhookDeliveries } from '../../db/schema/webhooks.js';
import type { Db } from '../../platform/db/database.js';
import { purgeDispatchedEvents } from '../../platform/events/outbox.js';

/** How long finished deliveries (with their attempts) and dispatched outbox events are kept. */
export const RETENTION_DAYS = 30;
const BATCH = 5_000;

/**
 * Deletes finished deliveries (SUCCEEDED or FAILED; their attempts go with them) and dispatched outbox events older
 * than the retention, in batches so no statement holds many locks. Waiting deliveries are never deleted.
 */
export async function purgeOldDeliveries(db: Db, now: Date): Promise<{ deliveries: number; events: number }> {
  const before = new Date(now.getTime() - RETENTION_DAYS * 24 * 60 * 60 * 1000);
  let deliveries = 0;
  let events = 0;
  for (;;) {
    const old = db
      .select({ id: webhookDeliveries.id })
      .from(webhookDeliveries)
      .where(and(inArray(webhookDeliveries.status, ['SUCCEEDED', 'FAILED']), lt(webhookDeliveries.updatedAt, before)))
      .limit(BATCH);
    const deleted = await db.delete(webhookDeliveries).where(inArray(webhookDeliveries.id, old)).returning({ id: webhookDeliveries.id });
    deliveries += deleted.length;
    if (deleted.length < BATCH) break;
  }
  for (;;) {
    const count = await purgeDispatchedEvents(db, before, BATCH);
    events += count;
    if (count < BATCH) break;
  }
  return { deliveries, events };
}
