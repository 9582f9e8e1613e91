import { eq } from 'drizzle-orm';
import { walletReservations, wallets } from '../../db/schema/wallet.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { AppError, conflict } from '../../platform/http/errors.js';
import { assertTokens, type WalletContext } from './context.js';
import { ensureWallet, ownerKey } from './ledger.js';
import { growReservation, reserveTokens } from './reserve.js';
import type { ReserveInput } from './types.js';
import type { OwnerRef } from './usage-cache.js';

function quotaExceeded(
  shortfallTokens: number,
  tokensPerCredit: number | null,
  suggestedTopUp: { component: string; units: number } | null,
  details: Record<string, number>,
): AppError {
  const credits = tokensPerCredit ? Math.ceil(shortfallTokens / tokensPerCredit) : null;
  const about = credits === null ? '' : ` (about ${credits} credit${credits === 1 ? '' : 's'})`;
  const suggestion = suggestedTopUp ? `Top up (${suggestedTopUp.units.toLocaleString('en-US')} ${suggestedTopUp.component} would cover it)` : 'Top up';
  return new AppError(
    429,
    'QUOTA_EXCEEDED',
    `Your credit balance cannot cover this generation: ${shortfallTokens.toLocaleString('en-US')} tokens${about} short. ${suggestion} or choose a cheaper model.`,
    { shortfallTokens, ...details, ...(suggestedTopUp ? { suggestedTopUp } : {}) },
  );
}

/** The owner of the wallet a request's reservation is on (for writes that know only the request id). */
async function ownerOfRequest(t: DbOrTx, requestId: string): Promise<OwnerRef | null> {
  const [row] = await t
    .select({ ownerType: wallets.ownerType, ownerId: wallets.ownerId })
    .from(walletReservations)
    .innerJoin(wallets, eq(wallets.id, walletReservations.walletId))
    .where(eq(walletReservations.requestId, requestId));
  return row ?? null;
}

/** Holds `tokens` for one gateway request in one statement, or refuses with 429 QUOTA_EXCEEDED (see the service). */
export async function reserve(ctx: WalletContext, input: ReserveInput, tx?: DbOrTx): Promise<void> {
  const { db, clock } = ctx;
  assertTokens(input.tokens, 'tokens');
  const attempt = () => reserveTokens(tx ?? db, input, clock.now(), input.leaseSeconds ?? ctx.heldLeaseSeconds);
  let outcome = await attempt();
  if (outcome.kind === 'no-wallet') {
    await ensureWallet(tx ?? db, input, clock.now());
    outcome = await attempt();
  }
  if (outcome.kind === 'reserved') {
    ctx.wrote(ownerKey(input), tx);
    ctx.counters.tokenMovements.inc({ movement: 'reserved' }, input.tokens);
    if (input.leaseSeconds === undefined) ctx.leases.hold(input.requestId);
    return;
  }
  if (outcome.kind === 'exists') {
    if (outcome.walletId !== outcome.ownWalletId) throw conflict('This request id is already in use by another wallet.');
    if (outcome.status === 'SETTLED' || outcome.status === 'RELEASED') {
      throw conflict(`This request was already ${outcome.status === 'SETTLED' ? 'charged' : 'refunded'}; a new generation needs a new request.`, {
        requestId: input.requestId,
      });
    }
    return;
  }
  if (outcome.kind === 'no-wallet') throw new AppError(500, 'INTERNAL', 'The wallet could not be created.');
  // Inside a caller's transaction nothing else may touch the database (the embedded one has a single connection).
  const shortfallTokens = Math.max(1, input.tokens + outcome.debt - outcome.balance);
  const hints = ctx.topUpHints.current();
  const suggested = (await hints?.suggest(shortfallTokens, tx !== undefined).catch(() => null)) ?? null;
  throw quotaExceeded(shortfallTokens, tx ? null : await ctx.tokensPerCredit(), suggested, {
    requiredTokens: input.tokens,
    balanceTokens: outcome.balance,
    unpaidOverrunTokens: outcome.debt,
  });
}

/** Raises an open reservation to `tokens` (never lowers it), or refuses with 429 QUOTA_EXCEEDED (see the service). */
export async function grow(ctx: WalletContext, input: { requestId: string; tokens: number; note?: string }, tx?: DbOrTx): Promise<void> {
  const { db, clock } = ctx;
  assertTokens(input.tokens, 'tokens');
  if (await growReservation(tx ?? db, input, clock.now())) {
    // A dearer fallback model (rare): the write returns no owner, so it is read (not on the reserve/settle path).
    ctx.wrote(await ownerOfRequest(tx ?? db, input.requestId), tx);
    return;
  }
  const res = await (tx ?? db).select().from(walletReservations).where(eq(walletReservations.requestId, input.requestId));
  const [wallet] = res[0] ? await (tx ?? db).select().from(wallets).where(eq(wallets.id, res[0].walletId)) : [];
  if (!res[0] || !wallet) throw conflict(`The reservation of request ${input.requestId} is not open.`);
  const extra = input.tokens - res[0].tokens;
  const shortfallTokens = Math.max(1, extra + wallet.debt - wallet.balance);
  const hints = ctx.topUpHints.current();
  const suggested = (await hints?.suggest(shortfallTokens, tx !== undefined).catch(() => null)) ?? null;
  throw quotaExceeded(shortfallTokens, tx ? null : await ctx.tokensPerCredit(), suggested, {
    requiredTokens: extra,
    balanceTokens: wallet.balance,
    unpaidOverrunTokens: wallet.debt,
  });
}
