import { eq } from 'drizzle-orm';
import { walletReservations, wallets } from '../../db/schema/wallet.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { assertTokens, type WalletContext } from './context.js';
import { ownerKey, walletOrder, type WalletOwner } from './ledger.js';
import { quickSettle, quickSettlement, walletAfter, type QuickSettlement, type WalletAfter } from './quick-settle.js';
import { closeReservation, type Charge } from './reservation-close.js';

/**
 * What a settlement charged. `lateTokens`: the sweeper had closed the reservation (its usage record is stale), and this
 * many tokens were charged now on top of what it charged.
 */
export interface SettleOutcome {
  chargedTokens: number;
  shortfallTokens: number;
  lateTokens?: number;
}

async function walletAfterOf(t: Tx, walletId: string): Promise<WalletAfter | null> {
  const [w] = await t
    .select({
      walletId: wallets.id,
      ownerType: wallets.ownerType,
      ownerId: wallets.ownerId,
      balance: wallets.balance,
      lowBalanceWarned: wallets.lowBalanceWarned,
    })
    .from(wallets)
    .where(eq(wallets.id, walletId));
  return w ?? null;
}

/** A settlement the one-statement shortcut made (here, or in the caller's combined statement once it committed). */
function settledQuickly(ctx: WalletContext, quick: { charged: number; unused: number; after: WalletAfter | null }): void {
  ctx.counters.tokenMovements.inc({ movement: 'charged' }, quick.charged);
  ctx.counters.tokenMovements.inc({ movement: 'refunded' }, quick.unused);
  ctx.lowBalance.afterSettlement(quick.after);
}

/** Closes a reservation on the real cost: the one-statement shortcut when it applies, else step by step (see the service). */
export async function settle(ctx: WalletContext, input: Charge & { requestId: string }, tx?: DbOrTx): Promise<SettleOutcome> {
  assertTokens(input.actualTokens, 'actualTokens');
  ctx.leases.letGo(input.requestId);
  const quick = await quickSettle(tx ?? ctx.db, input, ctx.clock.now());
  if (quick !== null) {
    ctx.wrote(quick.after, tx);
    settledQuickly(ctx, quick);
    return { chargedTokens: quick.charged, shortfallTokens: 0 };
  }
  const { chargedTokens, shortfallTokens, after, owner, lateTokens } = await ctx.inTx(tx, async (t) => {
    const closed = await closeReservation(ctx, t, input.requestId, { actualTokens: input.actualTokens, delivered: input.delivered });
    return Object.assign({ lateTokens: undefined }, closed, { after: closed.walletId ? await walletAfterOf(t, closed.walletId) : null });
  });
  ctx.wrote(owner, tx);
  ctx.lowBalance.afterSettlement(after);
  return lateTokens === undefined ? { chargedTokens, shortfallTokens } : { chargedTokens, shortfallTokens, lateTokens };
}

/** The common settlement as parts of the caller's combined statement (see the service's `settlementParts`). */
export function settlementParts(
  ctx: WalletContext,
  input: { requestId: string; actualTokens: number; owner?: WalletOwner },
): QuickSettlement & { group: string | undefined; committed(row: Record<string, unknown>): void } {
  assertTokens(input.actualTokens, 'actualTokens');
  ctx.leases.letGo(input.requestId);
  return Object.assign(quickSettlement(input, ctx.clock.now()), {
    group: input.owner ? walletOrder(ownerKey(input.owner)) : undefined,
    // The combined statement committed; `row` selected `unused as unused` and the `after` columns. The low-balance
    // check costs nothing while the balance stays at or above the threshold or a warning is already out.
    committed: (row: Record<string, unknown>) => {
      const after = walletAfter(row);
      ctx.wrote(after, undefined);
      settledQuickly(ctx, { charged: input.actualTokens, unused: Number(row.unused), after });
    },
  });
}

/** A failed call: full REFUND of an open reservation; a no-op when it is already closed. */
export async function release(ctx: WalletContext, input: { requestId: string; reason?: string }, tx?: DbOrTx): Promise<void> {
  const owner = await ctx.inTx(tx, async (t) => {
    const [res] = await t.select({ id: walletReservations.id }).from(walletReservations).where(eq(walletReservations.requestId, input.requestId));
    if (!res) return null;
    return (await closeReservation(ctx, t, input.requestId, { release: input.reason ?? 'Generation failed' })).owner;
  });
  ctx.wrote(owner, tx);
}
