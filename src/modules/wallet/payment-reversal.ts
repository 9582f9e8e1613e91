import { and, eq, gt, sql } from 'drizzle-orm';
import { walletLedger, wallets } from '../../db/schema/wallet.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { applyMovement } from './ledger.js';

/** Tokens a payment added (its positive ledger rows: plan grants, purchases, bonuses), in the caller's transaction. */
export async function tokensCreditedFor(tx: DbOrTx, paymentId: string): Promise<number> {
  const [row] = await tx
    .select({ total: sql<string>`coalesce(sum(${walletLedger.amount}), 0)` })
    .from(walletLedger)
    .where(and(eq(walletLedger.paymentId, paymentId), gt(walletLedger.amount, 0)));
  return Number(row?.total ?? 0);
}

/**
 * A refunded payment: takes back what it credited, as far as each wallet's balance allows (ADJUSTMENT rows with the
 * payment id, keyed `<key>:<walletId>`); what was already spent cannot be recovered and is reported (and noted on the row).
 * Idempotent: a second call takes nothing more and reports the first one's figures.
 */
export async function reversePaymentCredits(
  tx: DbOrTx,
  input: { paymentId: string; idempotencyKey: string; note: string },
  now: Date,
): Promise<{ takenTokens: number; unrecoveredTokens: number }> {
  const credited = await tx
    .select({ walletId: walletLedger.walletId, total: sql<string>`sum(${walletLedger.amount})` })
    .from(walletLedger)
    .where(and(eq(walletLedger.paymentId, input.paymentId), gt(walletLedger.amount, 0)))
    .groupBy(walletLedger.walletId);
  let takenTokens = 0;
  let unrecoveredTokens = 0;
  for (const { walletId, total } of credited) {
    const owed = Number(total);
    const key = `${input.idempotencyKey}:${walletId}`;
    const [locked] = await tx.select({ balance: wallets.balance }).from(wallets).where(eq(wallets.id, walletId)).for('update');
    const [existing] = await tx.select({ amount: walletLedger.amount }).from(walletLedger).where(eq(walletLedger.idempotencyKey, key));
    const take = existing ? -existing.amount : Math.min(owed, locked!.balance);
    if (!existing) {
      const note = take < owed ? `${input.note}; ${owed - take} tokens were already spent and could not be taken back` : input.note;
      await applyMovement(tx, walletId, { kind: 'ADJUSTMENT', amount: -take, idempotencyKey: key, note, paymentId: input.paymentId }, now);
    }
    takenTokens += take;
    unrecoveredTokens += owed - take;
  }
  return { takenTokens, unrecoveredTokens };
}
