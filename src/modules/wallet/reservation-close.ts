import { eq, sql } from 'drizzle-orm';
import { walletReservations, wallets } from '../../db/schema/wallet.js';
import type { Tx } from '../../platform/db/database.js';
import { notFound } from '../../platform/http/errors.js';
import { OPEN, type WalletContext } from './context.js';
import { chargeLate, SWEPT_RELEASE_REASON, SWEPT_SETTLE_REASON, sweptBySweeper } from './late-charge.js';
import { applyMovement, creditWithDebtCollection } from './ledger.js';
import type { OwnerRef } from './usage-cache.js';

const sweptOutcome = (usedTokens: number | null) => (usedTokens !== null ? { actualTokens: usedTokens } : { release: SWEPT_RELEASE_REASON });

/** A settlement's wish: the real cost, and whether the answer already reached the caller (a stream). */
export interface Charge {
  actualTokens: number;
  delivered?: boolean;
}

/**
 * Settles or releases one reservation inside `tx`; the row is locked so it closes exactly once. `owner` is the
 * wallet's owner when something changed (read with the locked row: its usage figures are dropped after the commit).
 * `'sweep'`: the sweeper closes a reservation whose lease ran out, on the usage it reported (else released in full).
 * A charge that finds the sweeper was there first charges what it did not (late-charge.ts); `lateAfterSweep` then says
 * the sweeper's usage record is to be replaced (`lateTokens`: what was charged now).
 */
export async function closeReservation(ctx: WalletContext, tx: Tx, requestId: string, wanted: Charge | { release: string } | 'sweep') {
  const { tokenMovements } = ctx.counters;
  const sweeping = wanted === 'sweep';
  ctx.leases.letGo(requestId);
  const now = ctx.clock.now();
  const [locked] = await tx
    .select({ res: walletReservations, ownerType: wallets.ownerType, ownerId: wallets.ownerId })
    .from(walletReservations)
    .innerJoin(wallets, eq(wallets.id, walletReservations.walletId))
    .where(eq(walletReservations.requestId, requestId))
    .for('update', { of: walletReservations });
  if (!locked) throw notFound(`No reservation exists for request ${requestId}.`);
  const { res } = locked;
  const owner: OwnerRef = { ownerType: locked.ownerType, ownerId: locked.ownerId };
  if (typeof wanted === 'object' && 'actualTokens' in wanted && !(OPEN as readonly string[]).includes(res.status) && sweptBySweeper(res.reason)) {
    const late = await chargeLate(tx, res, wanted.actualTokens, wanted.delivered ?? false, now);
    if (!late.changed) return { chargedTokens: late.chargedTokens, shortfallTokens: late.shortfallTokens, changed: false, walletId: null, owner: null };
    tokenMovements.inc({ movement: 'charged' }, late.take);
    return {
      chargedTokens: late.chargedTokens,
      shortfallTokens: late.shortfallTokens,
      changed: true,
      settled: true,
      walletId: res.walletId,
      owner,
      lateTokens: late.take,
    };
  }
  if (res.status === 'SETTLED')
    return { chargedTokens: res.chargedTokens ?? 0, shortfallTokens: res.shortfallTokens, changed: false, walletId: null, owner: null };
  if (res.status === 'RELEASED') return { chargedTokens: 0, shortfallTokens: 0, changed: false, walletId: null, owner: null };
  // The sweeper picked it without a lock: a heartbeat may have renewed the lease since, or progress been recorded.
  if (sweeping && res.leaseUntil >= now) return { chargedTokens: 0, shortfallTokens: 0, changed: false, walletId: null, owner: null };
  const outcome = sweeping ? sweptOutcome(res.usedTokens) : wanted;
  const swept = async (chargedTokens: number) =>
    sweeping &&
    ctx.reservationSwept.emit(tx, {
      requestId,
      walletId: res.walletId,
      reservedTokens: res.tokens,
      chargedTokens,
      outcome: 'release' in outcome ? 'RELEASED' : 'SETTLED',
      context: res.context ?? null,
      note: res.note,
    });

  if ('release' in outcome) {
    if (res.tokens > 0) {
      await creditWithDebtCollection(
        tx,
        res.walletId,
        { kind: 'REFUND', amount: res.tokens, idempotencyKey: `release:${requestId}`, requestId, note: outcome.release },
        now,
      );
    }
    await tx
      .update(walletReservations)
      .set({ status: 'RELEASED', chargedTokens: 0, reason: outcome.release, closedAt: now })
      .where(eq(walletReservations.id, res.id));
    await swept(0);
    tokenMovements.inc({ movement: 'refunded' }, res.tokens);
    return { chargedTokens: 0, shortfallTokens: 0, changed: true, settled: false, walletId: null, owner };
  }

  const actual = outcome.actualTokens;
  let charged = actual;
  let shortfall = 0;
  if (actual < res.tokens) {
    await creditWithDebtCollection(
      tx,
      res.walletId,
      { kind: 'REFUND', amount: res.tokens - actual, idempotencyKey: `settle:${requestId}`, requestId, note: 'Unused part of the reservation' },
      now,
    );
  } else if (actual > res.tokens) {
    const extra = actual - res.tokens;
    const [wallet] = await tx.select({ balance: wallets.balance }).from(wallets).where(eq(wallets.id, res.walletId)).for('update');
    const take = Math.min(extra, wallet!.balance);
    shortfall = extra - take;
    charged = res.tokens + take;
    if (take > 0) {
      await applyMovement(
        tx,
        res.walletId,
        { kind: 'USAGE', amount: -take, idempotencyKey: `settle:${requestId}`, requestId, note: 'Generation ran over its reservation' },
        now,
      );
    }
    if (shortfall > 0) {
      await tx
        .update(wallets)
        .set({ debt: sql`${wallets.debt} + ${shortfall}`, updatedAt: now })
        .where(eq(wallets.id, res.walletId));
    }
  }
  await tx
    .update(walletReservations)
    .set({
      status: 'SETTLED',
      usedTokens: actual,
      chargedTokens: charged,
      shortfallTokens: shortfall,
      closedAt: now,
      ...(sweeping ? { reason: SWEPT_SETTLE_REASON } : {}),
    })
    .where(eq(walletReservations.id, res.id));
  await swept(charged);
  tokenMovements.inc({ movement: 'charged' }, charged);
  tokenMovements.inc({ movement: 'refunded' }, Math.max(0, res.tokens - actual));
  return { chargedTokens: charged, shortfallTokens: shortfall, changed: true, settled: true, walletId: res.walletId, owner };
}
