import { domainEvents } from '../../db/schema/platform.js';
import type { DbOrTx } from '../db/database.js';

export { domainEvents };

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
