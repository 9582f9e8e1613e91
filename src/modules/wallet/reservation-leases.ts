import { and, eq, inArray } from 'drizzle-orm';
import { walletReservations } from '../../db/schema/wallet.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db } from '../../platform/db/database.js';
import { createLeaseKeeper } from '../../platform/leases/lease-keeper.js';
import { assertTokens, OPEN, type WalletContext } from './context.js';

/** The heartbeat that renews the short lease of every reservation this process holds. */
export function createReservationLeases(deps: { db: Db; clock: Clock; heldLeaseSeconds: number; onError: (err: unknown) => void }) {
  const { db, clock, heldLeaseSeconds } = deps;
  return createLeaseKeeper({
    intervalMs: (heldLeaseSeconds * 1000) / 3,
    onError: deps.onError,
    renew: async (requestIds) => {
      await db
        .update(walletReservations)
        .set({ leaseUntil: new Date(clock.now().getTime() + heldLeaseSeconds * 1000) })
        .where(and(inArray(walletReservations.requestId, requestIds), inArray(walletReservations.status, [...OPEN])));
    },
  });
}

/**
 * Marks a reservation as running and extends its lease; `usedTokens` records the usage so far, which the sweeper
 * settles on if the process dies. False when the reservation is unknown or already closed.
 */
export async function markInFlight(ctx: WalletContext, input: { requestId: string; usedTokens?: number; leaseSeconds?: number }): Promise<boolean> {
  const { db, clock, leases } = ctx;
  if (input.usedTokens !== undefined) assertTokens(input.usedTokens, 'usedTokens');
  const now = clock.now();
  const rows = await db
    .update(walletReservations)
    .set({
      status: 'IN_FLIGHT',
      leaseUntil: new Date(now.getTime() + (input.leaseSeconds ?? (leases.holds(input.requestId) ? ctx.heldLeaseSeconds : ctx.leaseSeconds)) * 1000),
      ...(input.usedTokens !== undefined ? { usedTokens: input.usedTokens } : {}),
    })
    .where(and(eq(walletReservations.requestId, input.requestId), inArray(walletReservations.status, [...OPEN])))
    .returning({ id: walletReservations.id });
  return rows.length > 0;
}
