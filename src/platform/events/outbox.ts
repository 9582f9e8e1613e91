import { domainEvents } from '../../db/schema/platform.js';
import type { DbOrTx } from '../db/database.js';

export { domainEvents };

export type DomainEvent = typeof domainEvents.$inferSelect;

type EventOptions = { userId?: string | null; at?: Date };

/** The insert of one domain event, for a caller's combined statement (see emitDomainEvent). */
export function domainEventInsert(tx: DbOrTx, name: string, data: Record<string, unknown>, options: EventOptions = {}) {
  return tx.insert(domainEvents).values({ name, userId: options.userId ?? null, data, ...(options.at ? { createdAt: options.at } : {}) });
}

/** Writes one domain event inside the caller's transaction (`userId`: whose webhooks receive it; `at`: the clock's now). */
export async function emitDomainEvent(tx: DbOrTx, name: string, data: Record<string, unknown>, options: EventOptions = {}): Promise<DomainEvent> {
  const [row] = await domainEventInsert(tx, name, data, options).returning();
  return row!;
}
