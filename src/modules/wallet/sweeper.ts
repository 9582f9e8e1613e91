import { and, inArray, lt } from 'drizzle-orm';
import { walletReservations } from '../../db/schema/wallet.js';
import { OPEN, type WalletContext } from './context.js';
import { closeReservation } from './reservation-close.js';

/**
 * Closes reservations whose lease ran out (left open by a crash): settled on the last usage reported
 * through markInFlight, or refunded in full when none was reported.
 */
export async function sweepExpired(ctx: WalletContext, limit = 200): Promise<{ settled: number; released: number }> {
  const { db } = ctx;
  const now = ctx.clock.now();
  const expired = await db
    .select({ requestId: walletReservations.requestId })
    .from(walletReservations)
    .where(and(inArray(walletReservations.status, [...OPEN]), lt(walletReservations.leaseUntil, now)))
    .orderBy(walletReservations.leaseUntil)
    .limit(limit);
  let settled = 0;
  let released = 0;
  for (const res of expired) {
    const result = await db.transaction((t) => closeReservation(ctx, t, res.requestId, 'sweep'));
    ctx.wrote(result.owner, undefined);
    if (!result.changed) continue;
    if (result.settled) settled++;
    else released++;
    ctx.counters.sweeperActions.inc({ action: result.settled ? 'settled' : 'released' });
  }
  return { settled, released };
}

/** Runs `sweep` every `intervalMs`, never two at once; returns the timer to clear at stop. */
export function startSweepTimer(intervalMs: number, sweep: () => Promise<unknown>, onError: (err: unknown) => void): NodeJS.Timeout {
  let sweepRunning = false;
  const sweepTimer = setInterval(() => {
    if (sweepRunning) return;
    sweepRunning = true;
    sweep()
      .catch(onError)
      .finally(() => (sweepRunning = false));
  }, intervalMs);
  sweepTimer.unref();
  return sweepTimer;
}
