import { and, eq, sql } from 'drizzle-orm';
import { walletLedger, wallets, type LedgerKind } from '../../db/schema/wallet.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import { afterCursor, newestFirstPage } from '../../platform/http/pagination.js';
import { ensureWallet, ownerKey, type LedgerRow, type WalletOwner } from './ledger.js';

// What the ledger answers to readers: the balance with its totals, the entries page, and the imbalance audit.

async function findWallet(dbOrTx: DbOrTx, owner: WalletOwner) {
  const key = ownerKey(owner);
  const [row] = await dbOrTx
    .select()
    .from(wallets)
    .where(and(eq(wallets.ownerType, key.ownerType), eq(wallets.ownerId, key.ownerId)));
  return row;
}

/** Balance with per-kind totals; a wallet is created (empty) on first look. */
export async function balanceOf(db: Db, owner: WalletOwner, now: Date, tokensPerCredit: () => Promise<number>) {
  const wallet = await ensureWallet(db, owner, now);
  const sums = await db
    .select({ kind: walletLedger.kind, total: sql<string>`coalesce(sum(${walletLedger.amount}), 0)` })
    .from(walletLedger)
    .where(eq(walletLedger.walletId, wallet.id))
    .groupBy(walletLedger.kind);
  const total = (kind: LedgerKind) => Number(sums.find((s) => s.kind === kind)?.total ?? 0);
  const tpc = await tokensPerCredit();
  return {
    walletId: wallet.id,
    tokens: wallet.balance,
    credits: Math.floor((wallet.balance * 100) / tpc) / 100,
    tokensPerCredit: tpc,
    unpaidOverrunTokens: wallet.debt,
    updatedAt: wallet.updatedAt,
    totals: {
      purchased: total('PURCHASE'),
      bonus: total('PROMO'),
      granted: total('GRANT'),
      converted: total('CONVERSION'),
      adjusted: total('ADJUSTMENT'),
      spent: 0 - (total('USAGE') + total('REFUND')),
    },
  };
}

/** Ledger entries newest first, cursor-paged. */
export async function ledgerPage(
  db: Db,
  owner: WalletOwner,
  page: { limit: number; cursor?: string },
): Promise<{ items: LedgerRow[]; nextCursor: string | null }> {
  const wallet = await findWallet(db, owner);
  if (!wallet) {
    if (page.cursor) afterCursor(walletLedger.createdAt, walletLedger.id, page.cursor); // still validates the cursor
    return { items: [], nextCursor: null };
  }
  return newestFirstPage(db, walletLedger, 'createdAt', eq(walletLedger.walletId, wallet.id), page);
}

/** Wallets whose balance differs from the sum of their ledger rows (must always be empty; an audit check). */
export async function findImbalances(db: Db): Promise<Array<{ walletId: string; balance: number; ledgerSum: number }>> {
  const rows = await db
    .select({
      walletId: wallets.id,
      balance: wallets.balance,
      ledgerSum: sql<string>`coalesce((select sum(${walletLedger.amount}) from ${walletLedger} where ${walletLedger.walletId} = ${wallets.id}), 0)`,
    })
    .from(wallets)
    .where(sql`${wallets.balance} <> coalesce((select sum(${walletLedger.amount}) from ${walletLedger} where ${walletLedger.walletId} = ${wallets.id}), 0)`);
  return rows.map((r) => ({ walletId: r.walletId, balance: r.balance, ledgerSum: Number(r.ledgerSum) }));
}
