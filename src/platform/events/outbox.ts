import { asc, inArray, isNull, lt } from 'drizzle-orm';
import { domainEvents } from '../../db/schema/platform.js';
import { newId } from '../ids.js';
import { bound, type BoundSql } from '../db/bound.js';
import type { DbOrTx } from '../db/database.js';

export { domainEvents };

export type DomainEvent = typeof domainEvents.$inferSelect;

type EventOptions = { userId?: string | null; at?: Date };

/** The insert of one domain event, for a caller's combined statement (see emitDomainEvent). */
export function domainEventInsert(tx: DbOrTx, name: string, data: Record<string, unknown>, options: EventOptions = {}) {
  return tx.insert(domainEvents).values({ name, userId: options.userId ?? null, data, ...(options.at ? { createdAt: options.at } : {}) });
}

const INSERT_EVENT = `insert into domain_events (id, name, user_id, data, created_at) values ($1::uuid, $2, $3, $4::text::jsonb, $5::timestamptz)`;

/** The insert of one domain event as bound SQL, for a combined statement on the hot path (nothing built per call). */
export const domainEventPart = (name: string, data: Record<string, unknown>, options: { userId?: string | null; at: Date }): BoundSql =>
  bound(INSERT_EVENT, [newId(), name, options.userId ?? null, JSON.stringify(data), options.at.toISOString()]);

/** Writes one domain event inside the caller's transaction (`userId`: whose webhooks receive it; `at`: the clock's now). */
export async function emitDomainEvent(tx: DbOrTx, name: string, data: Record<string, unknown>, options: EventOptions = {}): Promise<DomainEvent> {
  const [row] = await domainEventInsert(tx, name, data, options).returning();
  return row!;
}

/**
 * Locks up to `limit` events not yet dispatched, oldest first, skipping rows another instance holds (call inside the
 * transaction that records what the events caused and then marks them dispatched).
 */
export async function lockUndispatchedEvents(tx: DbOrTx, limit: number): Promise<DomainEvent[]> {
  return tx
    .select()
    .from(domainEvents)
    .where(isNull(domainEvents.dispatchedAt))
    // the leading (null) dispatched_at lets the pending index serve the order
    .orderBy(asc(domainEvents.dispatchedAt), asc(domainEvents.createdAt), asc(domainEvents.id))
    .limit(limit)
    .for('update', { skipLocked: true });
}

/** Marks events dispatched, in the transaction that locked them. */
export async function markEventsDispatched(tx: DbOrTx, ids: string[], at: Date): Promise<void> {
  if (ids.length > 0) await tx.update(domainEvents).set({ dispatchedAt: at }).where(inArray(domainEvents.id, ids));
}

/** Deletes up to `limit` events dispatched before `before` (the outbox keeps what is still to be dispatched). */
export async function purgeDispatchedEvents(tx: DbOrTx, before: Date, limit: number): Promise<number> {
  const old = tx.select({ id: domainEvents.id }).from(domainEvents).where(lt(domainEvents.dispatchedAt, before)).limit(limit);
  const deleted = await tx.delete(domainEvents).where(inArray(domainEvents.id, old)).returning({ id: domainEvents.id });
  return deleted.length;
}
