import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../db/database.js';

/**
 * Publishes on an EventBus channel from inside a transaction: Postgres delivers a NOTIFY only when its transaction
 * commits (and drops it on rollback), so listeners (e.g. caches on every instance) never see a change that did not
 * happen, nor reload before it is visible.
 */
export async function notifyInTransaction(tx: DbOrTx, channel: string, payload: unknown): Promise<void> {
  await tx.execute(sql`select pg_notify(${channel}, ${JSON.stringify(payload)})`);
}
