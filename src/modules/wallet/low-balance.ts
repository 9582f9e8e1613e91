import { and, eq, lt } from 'drizzle-orm';
import { wallets } from '../../db/schema/wallet.js';
import type { Db, Tx } from '../../platform/db/database.js';
import type { Port } from '../../platform/events/hooks.js';
import type { WalletAfter } from './quick-settle.js';
import type { TopUpHints } from './types.js';

/**
 * Low-balance warnings (QUOTA_WARNING): decided from the balance a settlement returned, sent in the background.
 * The top-up hints are read at each use (connected by src/services.ts once the top-ups module is built).
 */
export function createLowBalanceWarnings(db: Db, topUpHints: Port<TopUpHints>, onBackgroundError: (err: unknown) => void) {
  const background = new Set<Promise<void>>();

  function afterSettlement(after: WalletAfter | null): void {
    const threshold = topUpHints.current()?.lowBalanceThresholdTokens() ?? 0;
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
      if (flipped) await topUpHints.require().warn(t, { userId: flipped.ownerId, walletId, balanceTokens: flipped.balance, thresholdTokens: threshold });
    });
  }

  /** A credit that takes the balance back to the threshold or above re-arms the warning. */
  async function rearm(t: Tx, walletId: string, balance: number): Promise<void> {
    const threshold = topUpHints.current()?.lowBalanceThresholdTokens();
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
