import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/database.js';
import { ownerKey, type WalletOwner } from './ledger.js';

export type UsageWindows<K extends string> = Record<K, { tokensSpent: number; requests: number }>;

/**
 * Tokens spent (net of refunds) and generations started (reservations not released) since each of the given moments,
 * in one statement whatever the number of windows (`/v1/users/me` asks for the cycle, today and this month at once).
 * The wallet service reads it through its usage cache (usage-cache.ts), which its writes drop: a write that creates
 * rows counted here (a reservation, a USAGE or REFUND movement) must drop the owner's figures.
 */
export async function usageSince<K extends string>(db: DbOrTx, owner: WalletOwner, windows: Record<K, Date>): Promise<UsageWindows<K>> {
  const keys = Object.keys(windows) as K[];
  const usage = Object.fromEntries(keys.map((k) => [k, { tokensSpent: 0, requests: 0 }])) as UsageWindows<K>;
  if (keys.length === 0) return usage;
  const { ownerType, ownerId } = ownerKey(owner);
  const earliest = new Date(Math.min(...keys.map((k) => windows[k].getTime()))).toISOString();
  const spentColumns = keys.map((k, i) => sql`coalesce(sum(l.amount) filter (where l.created_at >= ${windows[k].toISOString()}), 0) as ${sql.raw(`s${i}`)}`);
  const countColumns = keys.map((k, i) => sql`count(*) filter (where r.created_at >= ${windows[k].toISOString()}) as ${sql.raw(`c${i}`)}`);
  const result = await db.execute(sql`
    select spent.*, started.* from wallets w
    cross join lateral (
      select ${sql.join(spentColumns, sql`, `)} from wallet_ledger l
      where l.wallet_id = w.id and l.kind in ('USAGE', 'REFUND') and l.created_at >= ${earliest}
    ) spent
    cross join lateral (
      select ${sql.join(countColumns, sql`, `)} from wallet_reservations r
      where r.wallet_id = w.id and r.status <> 'RELEASED' and r.created_at >= ${earliest}
    ) started
    where w.owner_type = ${ownerType} and w.owner_id = ${ownerId}`);
  // Both drivers answer raw SQL with `{ rows }`; no row when the owner has no wallet yet.
  const row = (result as { rows: Record<string, unknown>[] }).rows[0];
  if (!row) return usage;
  keys.forEach((k, i) => {
    usage[k] = { tokensSpent: Math.max(0, -Number(row[`s${i}`] ?? 0)), requests: Number(row[`c${i}`] ?? 0) };
  });
  return usage;
}
