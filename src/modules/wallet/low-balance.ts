import { and, eq, lt } from 'drizzle-orm';
import { wallets } from '../../db/schema/wallet.js';
import type { Tx } from '../../platform/db/database.js';
import type { WalletAfter } from './quick-settle.js';
import type { WalletServiceDeps } from './types.js';

/**
 * Low-balance warnings (QUOTA_WARNING): decided from the balance a settlement returned, sent in the background.
 * `deps.topUp` is read at each use (the hints are wired from src/services.ts).
 */
export function createLowBalanceWarnings(deps: Pick<WalletServiceDeps, 'db' | 'topUp'>, onBackgroundError: (err: unknown) => void) {
  const { db } = deps;
  const background = new Set<Promise<void>>();

  function afterSettlement(after: WalletAfter | null): void {
    const threshold = deps.topUp?.lowBalanceThresholdTokens() ?? 0;
    if (!after || threshold <= 0 || after.lowBalanceWarned || after.balance >= threshold || after.ownerType !== 'USER') return;
    const work = warnOnce(after.walletId, threshold)
      .catch(onBackgroundError)
      .finally(() => background.delete(work));
    background.add(work);
  }

  /** Once per crossing, however many charges race: only the update that flips the flag sends the warning. */
  async function warnOnce(walletId: string, threshold: number): Promise<void> {
    await db.transaction(async (t) => {
      const [flipped] = await t
        .update(wallets)
        .set({ lowBalanceWarned: true })
        .where(and(eq(wallets.id, walletId), eq(wallets.lowBalanceWarned, false), lt(wallets.balance, threshold), eq(wallets.ownerType, 'USER')))
        .returning({ ownerId: wallets.ownerId, balance: wallets.balance });
      if (flipped) await deps.topUp!.warn(t, { userId: flipped.ownerId, walletId, balanceTokens: flipped.balance, thresholdTokens: threshold });
    });
  }

  /** A credit that takes the balance back to the threshold or above re-arms the warning. */
  async function rearm(t: Tx, walletId: string, balance: number): Promise<void> {
    const threshold = deps.topUp?.lowBalanceThresholdTokens();
    if (threshold === null || threshold === undefined || balance < threshold) return;
    await t
      .update(wallets)
      .set({ lowBalanceWarned: false })
      .where(and(eq(wallets.id, walletId), eq(wallets.lowBalanceWarned, true)));
  }

  return {
    afterSettlement,
    rearm,
    /** Resolves once the background work started so far has finished. */
    async idle(): Promise<void> {
      while (background.size > 0) await Promise.allSettled([...background]);
    },
  };
}

export type LowBalanceWarnings = ReturnType<typeof createLowBalanceWarnings>;
