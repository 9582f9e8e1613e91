import { and, eq, sql } from 'drizzle-orm';
import { walletLedger, wallets, type LedgerKind } from '../../db/schema/wallet.js';
import type { DbOrTx } from '../../platform/db/database.js';

export type WalletRow = typeof wallets.$inferSelect;
export type LedgerRow = typeof walletLedger.$inferSelect;

/** Whose wallet: a user's own, or a workspace's (workspace subscriptions meter there). */
export type WalletOwner = { userId: string; workspaceId?: string | null } | { workspaceId: string; userId?: undefined };

export const ownerKey = (owner: WalletOwner): { ownerType: 'USER' | 'WORKSPACE'; ownerId: string } =>
  owner.workspaceId ? { ownerType: 'WORKSPACE', ownerId: owner.workspaceId } : { ownerType: 'USER', ownerId: owner.userId! };

/** The order in which statements of a shared transaction lock wallets (pg-grouped.ts): by owner. */
export const walletOrder = (owner: { ownerType: string; ownerId: string }): string => `${owner.ownerType}:${owner.ownerId}`;

/** The owner's wallet, created on first use (safe under concurrency: the unique owner index decides). */
export async function ensureWallet(db: DbOrTx, owner: WalletOwner, now: Date): Promise<WalletRow> {
  const key = ownerKey(owner);
  const where = and(eq(wallets.ownerType, key.ownerType), eq(wallets.ownerId, key.ownerId));
  const [existing] = await db.select().from(wallets).where(where);
  if (existing) return existing;
  const [created] = await db
    .insert(wallets)
    .values({ ...key, createdAt: now, updatedAt: now })
    .onConflictDoNothing()
    .returning();
  if (created) return created;
  const [raced] = await db.select().from(wallets).where(where);
  return raced!;
}

export interface Movement {
  kind: LedgerKind;
  /** Signed token amount. */
  amount: number;
  idempotencyKey: string;
  note?: string | null;
  paymentId?: string | null;
  requestId?: string | null;
}

/**
 * Writes one ledger row and moves the balance by the same amount, in the caller's transaction.
 * Returns `applied: false` (and changes nothing) when a row with the idempotency key already exists.
 * The balance moves unconditionally: what must not overdraw guards itself (reserve with a conditional update, debit
 * under a row lock), and a settlement above the balance records the rest as debt.
 */
export async function applyMovement(tx: DbOrTx, walletId: string, movement: Movement, now: Date): Promise<{ applied: boolean; balance: number; debt: number }> {
  const [row] = await tx
    .insert(walletLedger)
    .values({
      walletId,
      kind: movement.kind,
      amount: movement.amount,
      note: movement.note ?? null,
      paymentId: movement.paymentId ?? null,
      requestId: movement.requestId ?? null,
      idempotencyKey: movement.idempotencyKey,
      createdAt: now,
    })
    .onConflictDoNothing({ target: walletLedger.idempotencyKey })
    .returning({ id: walletLedger.id });
  if (!row) {
    const [current] = await tx.select({ balance: wallets.balance, debt: wallets.debt }).from(wallets).where(eq(wallets.id, walletId));
    return { applied: false, balance: current?.balance ?? 0, debt: current?.debt ?? 0 };
  }
  const [updated] = await tx
    .update(wallets)
    .set({ balance: sql`${wallets.balance} + ${movement.amount}`, updatedAt: now })
    .where(eq(wallets.id, walletId))
    .returning({ balance: wallets.balance, debt: wallets.debt });
  return { applied: true, balance: updated!.balance, debt: updated!.debt };
}

/**
 * A positive movement, then collection of any unpaid overrun from the new balance (a USAGE row keyed
 * `debt:<key>`), so a shortfall left by an earlier generation is paid by the next tokens that arrive.
 */
export async function creditWithDebtCollection(tx: DbOrTx, walletId: string, movement: Movement, now: Date) {
  const result = await applyMovement(tx, walletId, movement, now);
  if (!result.applied || result.debt === 0 || result.balance === 0) return { ...result, collected: 0 };
  const collected = Math.min(result.debt, result.balance);
  await tx.insert(walletLedger).values({
    walletId,
    kind: 'USAGE',
    amount: -collected,
    note: 'Unpaid overrun of an earlier generation',
    idempotencyKey: `debt:${movement.idempotencyKey}`,
    createdAt: now,
  });
  const [updated] = await tx
    .update(wallets)
    .set({ balance: sql`${wallets.balance} - ${collected}`, debt: sql`${wallets.debt} - ${collected}`, updatedAt: now })
    .where(eq(wallets.id, walletId))
    .returning({ balance: wallets.balance, debt: wallets.debt });
  return { applied: true, balance: updated!.balance, debt: updated!.debt, collected };
}
