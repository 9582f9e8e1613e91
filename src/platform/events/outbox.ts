import { inArray, lt } from 'drizzle-orm';
import { domainEvents } from '../../db/schema/platform.js';
import { newId } from '../ids.js';
import { bound, runBound, type BoundSql } from '../db/bound.js';
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

/** An outbox event without its payload (`eventPayloads` reads that for the few events a caller needs it of). */
export type EventHeader = Pick<DomainEvent, 'id' | 'name' | 'userId' | 'createdAt'>;

/** A boolean SQL expression, true while some event waits to be dispatched (the pending index answers it). */
export const UNDISPATCHED_EVENTS_EXIST = 'exists (select 1 from domain_events where dispatched_at is null)';

// The leading (null) dispatched_at lets the pending index serve the order.
const CLAIM_EVENTS = `
  with batch as (
    select id from domain_events where dispatched_at is null
    order by dispatched_at, created_at, id
    limit $1
    for update skip locked
  )
  update domain_events e set dispatched_at = $2::timestamptz
  from batch where e.id = batch.id
  returning e.id, e.name, e.user_id, e.created_at`;

/**
 * Takes up to `limit` events not yet dispatched, oldest first, skipping rows another instance holds, and marks them
 * dispatched at `at`: one statement, inside the transaction that records what the events caused, so they count as
 * dispatched exactly when that commits. Returns their headers, oldest first.
 */
export async function claimUndispatchedEvents(tx: DbOrTx, limit: number, at: Date): Promise<EventHeader[]> {
  const { rows } = await runBound<{ id: string; name: string; user_id: string | null; created_at: Date | string }>(
    tx,
    bound(CLAIM_EVENTS, [limit, at.toISOString()]),
  );
  return rows
    .map((row) => ({ id: row.id, name: row.name, userId: row.user_id, createdAt: new Date(row.created_at) }))
    .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** The payloads of events, by id. */
export async function eventPayloads(tx: DbOrTx, ids: string[]): Promise<Map<string, Record<string, unknown>>> {
  if (ids.length === 0) return new Map();
  const rows = await tx.select({ id: domainEvents.id, data: domainEvents.data }).from(domainEvents).where(inArray(domainEvents.id, ids));
  return new Map(rows.map((row) => [row.id, row.data]));
}

/** Deletes up to `limit` events dispatched before `before` (the outbox keeps what is still to be dispatched). */
export async function purgeDispatchedEvents(tx: DbOrTx, before: Date, limit: number): Promise<number> {
  const old = tx.select({ id: domainEvents.id }).from(domainEvents).where(lt(domainEvents.dispatchedAt, before)).limit(limit);
  const deleted = await tx.delete(domainEvents).where(inArray(domainEvents.id, old)).returning({ id: domainEvents.id });
  return deleted.length;
}
