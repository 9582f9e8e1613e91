import { eq, sql } from 'drizzle-orm';
import { walletReservations, wallets } from '../../db/schema/wallet.js';
import type { Tx } from '../../platform/db/database.js';
import { AppError } from '../../platform/http/errors.js';
import { applyMovement } from './ledger.js';

/** The reasons the sweeper writes on a reservation it closed: a settlement that finds one knows its request outlived it. */
export const SWEPT_RELEASE_REASON = 'Refunded: the generation was interrupted before it reported any usage';
export const SWEPT_SETTLE_REASON = 'Settled by the sweeper on the usage reported before the lease ran out';
const LATE_CHARGE_REASON = 'Charged after the sweeper closed it: the answer had already been delivered';

export const sweptBySweeper = (reason: string | null) => reason === SWEPT_RELEASE_REASON || reason === SWEPT_SETTLE_REASON;

/** A request whose reservation the sweeper closed while it still ran: its answer is not delivered, and nothing more is charged. */
export const reservationLapsed = (requestId: string) =>
  new AppError(
    503,
    'SERVICE_UNAVAILABLE',
    'The call took longer than its reservation could be held, so its tokens were given back and its answer is withheld: nothing was charged. Retry the call.',
    { requestId, retryable: true },
    { 'retry-after': '1' },
  );

type Reservation = typeof walletReservations.$inferSelect;

/**
 * The settlement of a request whose reservation the sweeper closed first (its process stalled or lost the database
 * past the lease): the sweeper refunded it, or charged it on the progress last reported. An answer is never delivered
 * free, so the difference to `actualTokens` is charged now from the balance:
 * - `delivered` (a stream, whose text is already out): taken as far as the balance goes, the rest recorded as debt;
 * - not delivered: only when the sweeper charged (the request's Idempotency-Key is then CHARGED and keeps the answer)
 *   and the balance covers the rest; otherwise the answer is withheld (`reservationLapsed`) and nothing is written.
 * A refunded reservation of an undelivered answer always withholds it: the sweeper freed its Idempotency-Key, and a
 * retry may already be running under it.
 */
export async function chargeLate(tx: Tx, res: Reservation, actualTokens: number, delivered: boolean, now: Date) {
  const already = res.status === 'SETTLED' ? (res.chargedTokens ?? 0) : 0;
  const alreadyShort = res.status === 'SETTLED' ? res.shortfallTokens : 0;
  const due = actualTokens - already - alreadyShort;
  if (due <= 0) return { chargedTokens: already, shortfallTokens: alreadyShort, changed: false as const };
  if (!delivered && res.status === 'RELEASED') throw reservationLapsed(res.requestId);
  const [wallet] = await tx.select({ balance: wallets.balance }).from(wallets).where(eq(wallets.id, res.walletId)).for('update');
  const balance = wallet!.balance;
  if (!delivered && balance < due) throw reservationLapsed(res.requestId);
  const take = Math.min(due, balance);
  const shortfall = due - take;
  if (take > 0) {
    const note = 'Generation delivered after its reservation was closed';
    await applyMovement(tx, res.walletId, { kind: 'USAGE', amount: -take, idempotencyKey: `late:${res.requestId}`, requestId: res.requestId, note }, now);
  }
  if (shortfall > 0)
    await tx
      .update(wallets)
      .set({ debt: sql`${wallets.debt} + ${shortfall}`, updatedAt: now })
      .where(eq(wallets.id, res.walletId));
  await tx
    .update(walletReservations)
    .set({
      status: 'SETTLED',
      usedTokens: actualTokens,
      chargedTokens: already + take,
      shortfallTokens: alreadyShort + shortfall,
      reason: LATE_CHARGE_REASON,
      closedAt: now,
    })
    .where(eq(walletReservations.id, res.id));
  return { chargedTokens: already + take, shortfallTokens: alreadyShort + shortfall, changed: true as const, take };
}
