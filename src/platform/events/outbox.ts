import { index, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tz } from '../../db/schema/columns.js';
import type { DbOrTx } from '../db/database.js';

/**
 * The domain-event outbox: an event is written in the same transaction as the change it announces, so it exists
 * exactly when the change committed. A dispatcher (the webhooks issue) delivers rows with `dispatchedAt` null.
 */
export const domainEvents = pgTable(
  'domain_events',
  {
    id: idColumn(),
    /** e.g. `job.succeeded`, `job.failed`, `generation.persisted`. */
    name: text('name').notNull(),
    /** The user the event concerns (whose webhooks receive it), when there is one. */
    userId: text('user_id'),
    data: jsonb('data').$type<Record<string, unknown>>().notNull(),
    createdAt: createdAt(),
    dispatchedAt: tz('dispatched_at'),
  },
  (t) => [index('domain_events_pending_idx').on(t.dispatchedAt, t.createdAt, t.id)],
);

export type DomainEvent = typeof domainEvents.$inferSelect;

/** Writes one domain event inside the caller's transaction (`userId`: whose webhooks receive it; `at`: the clock's now). */
export async function emitDomainEvent(
  tx: DbOrTx,
  name: string,
  data: Record<string, unknown>,
  options: { userId?: string | null; at?: Date } = {},
): Promise<DomainEvent> {
  const [row] = await tx
    .insert(domainEvents)
    .values({ name, userId: options.userId ?? null, data, ...(options.at ? { createdAt: options.at } : {}) })
    .returning();
  return row!;
}
