import { and, eq, inArray } from 'drizzle-orm';
import { walletReservations } from '../../db/schema/wallet.js';
import { OPEN, type WalletContext } from './context.js';
import { closeReservation } from './reservation-close.js';

/** How `sweepOne` closed a reservation (its `reservationSwept` handlers ran in the same transaction), or null when it left it. */
export type SweptOne = 'SETTLED' | 'RELEASED' | null;

/**
 * Closes one reservation the way the sweeper does (on the usage it reported, else refunded in full, with the
 * `reservationSwept` handlers in the same transaction), without waiting for the next sweep:
 * - its lease has lapsed (its process died or stalled): what a retry of its request does before answering;
 * - `abandoned`: the request that held it has failed and gives it up now (its settlement or refund could not be
 *   written). Only a reservation on the short lease of a live request is closed so; one on a job's longer lease is
 *   renewed by the job, which may still run.
 * A reservation this process still holds for a running request is never swept by a lookup (`abandoned` unset).
 */
export async function sweepOne(ctx: WalletContext, requestId: string, options: { abandoned?: boolean } = {}): Promise<SweptOne> {
  const abandoned = options.abandoned ?? false;
  if (!abandoned && ctx.leases.holds(requestId)) return null;
  const now = ctx.clock.now();
  const [row] = await ctx.db
    .select({ status: walletReservations.status, leaseUntil: walletReservations.leaseUntil })
    .from(walletReservations)
    .where(eq(walletReservations.requestId, requestId));
  if (!row || !(OPEN as readonly string[]).includes(row.status)) return null;
  const lapsed = row.leaseUntil < now;
  const shortLease = row.leaseUntil.getTime() <= now.getTime() + ctx.heldLeaseSeconds * 1000;
  if (!lapsed && !(abandoned && shortLease)) return null;

  const result = await ctx.db.transaction(async (tx) => {
    // Given up: its lease ends now, under the row lock, so the sweep below sees it lapsed (a settlement still in
    // flight on another connection holds the lock first, and the sweep then finds it closed).
    if (!lapsed) {
      await tx
        .update(walletReservations)
        .set({ leaseUntil: new Date(now.getTime() - 1) })
        .where(and(eq(walletReservations.requestId, requestId), inArray(walletReservations.status, [...OPEN])));
    }
    return closeReservation(ctx, tx, requestId, 'sweep');
  });
  ctx.wrote(result.owner, undefined);
  if (!result.changed) return null;
  if (lapsed) ctx.counters.sweeperActions.inc({ action: result.settled ? 'settled' : 'released' });
  return result.settled ? 'SETTLED' : 'RELEASED';
}
