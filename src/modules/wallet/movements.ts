import { eq } from 'drizzle-orm';
import { walletLedger, wallets, type LedgerKind } from '../../db/schema/wallet.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { AppError } from '../../platform/http/errors.js';
import type { AuditWriter } from '../audit/service.js';
import { grantBySupport, type SupportGrant } from './admin-grant.js';
import { assertTokens, type WalletContext } from './context.js';
import { applyMovement, creditWithDebtCollection, ensureWallet, ownerKey, type WalletOwner } from './ledger.js';
import { reversePaymentCredits } from './payment-reversal.js';

const POSITIVE_KINDS: LedgerKind[] = ['GRANT', 'PURCHASE', 'PROMO', 'REFUND', 'ADJUSTMENT', 'CONVERSION'];

/** Adds tokens, idempotent by key; an unpaid overrun is collected from the new tokens first (see the service). */
export async function credit(
  ctx: WalletContext,
  input: WalletOwner & { kind: LedgerKind; amount: number; idempotencyKey: string; note?: string; paymentId?: string | null },
  tx?: DbOrTx,
): Promise<{ applied: boolean; balance: number }> {
  if (!POSITIVE_KINDS.includes(input.kind)) throw new AppError(500, 'INTERNAL', `A ${input.kind} movement cannot add tokens.`);
  assertTokens(input.amount, 'amount');
  const now = ctx.clock.now();
  const credited = await ctx.inTx(tx, async (t) => {
    const wallet = await ensureWallet(t, input, now);
    const result = await creditWithDebtCollection(t, wallet.id, input, now);
    if (result.applied) await ctx.lowBalance.rearm(t, wallet.id, result.balance);
    return { applied: result.applied, balance: result.balance, collected: result.collected };
  });
  // A plan's grant moves no usage figure, unless it pays an overrun (a USAGE row) or is a REFUND.
  if (credited.applied) ctx.wrote(ownerKey(input), tx, input.kind === 'REFUND' || credited.collected > 0);
  return { applied: credited.applied, balance: credited.balance };
}

/** Takes tokens back as far as the balance allows, idempotent by key (see the service). */
export async function debit(
  ctx: WalletContext,
  input: WalletOwner & { amount: number; idempotencyKey: string; note?: string; paymentId?: string | null; kind?: 'ADJUSTMENT' | 'USAGE' },
  tx?: DbOrTx,
): Promise<{ applied: boolean; takenTokens: number; unrecoveredTokens: number; balance: number }> {
  assertTokens(input.amount, 'amount');
  const now = ctx.clock.now();
  const debited = await ctx.inTx(tx, async (t) => {
    const wallet = await ensureWallet(t, input, now);
    const [locked] = await t.select({ balance: wallets.balance }).from(wallets).where(eq(wallets.id, wallet.id)).for('update');
    const take = Math.min(input.amount, locked!.balance);
    const [existing] = await t.select({ amount: walletLedger.amount }).from(walletLedger).where(eq(walletLedger.idempotencyKey, input.idempotencyKey));
    if (existing) return { applied: false, takenTokens: -existing.amount, unrecoveredTokens: input.amount + existing.amount, balance: locked!.balance };
    const result = await applyMovement(
      t,
      wallet.id,
      { kind: input.kind ?? 'ADJUSTMENT', amount: -take, idempotencyKey: input.idempotencyKey, note: input.note ?? null, paymentId: input.paymentId ?? null },
      now,
    );
    return { applied: result.applied, takenTokens: take, unrecoveredTokens: input.amount - take, balance: result.balance };
  });
  if (debited.applied) ctx.wrote(ownerKey(input), tx, input.kind === 'USAGE');
  return debited;
}

/** An operator's support grant (`GRANT` row with a reason), idempotent by key and audited; see admin-grant.ts. */
export async function supportGrant(ctx: WalletContext, grant: SupportGrant, audit: AuditWriter) {
  assertTokens(grant.tokens, 'tokens');
  const granted = await grantBySupport(ctx.db, grant, ctx.clock.now(), audit);
  if (granted.applied) ctx.wrote(ownerKey({ userId: grant.userId }), undefined);
  return granted;
}

/** A refunded payment: takes its tokens back as far as the balance allows and reports what was already spent. */
export async function reversePayment(ctx: WalletContext, input: { paymentId: string; idempotencyKey: string; note: string }, tx: DbOrTx) {
  const { reversed, owners } = await ctx.inTx(tx, async (t) => {
    const reversed = await reversePaymentCredits(t, input, ctx.clock.now());
    // A refunded payment (rare): the wallets it touched are read back for their owners.
    const owners = await t
      .selectDistinct({ ownerType: wallets.ownerType, ownerId: wallets.ownerId })
      .from(walletLedger)
      .innerJoin(wallets, eq(wallets.id, walletLedger.walletId))
      .where(eq(walletLedger.paymentId, input.paymentId));
    return { reversed, owners };
  });
  for (const owner of owners) ctx.wrote(owner, tx, false); // ADJUSTMENT rows: no usage figure moves
  return reversed;
}
