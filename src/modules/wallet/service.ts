import { eq } from 'drizzle-orm';
import { walletReservations, type LedgerKind } from '../../db/schema/wallet.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { createHook, createPort, type Connectable, type Subscribable } from '../../platform/events/hooks.js';
import { metricsOrPrivate } from '../../platform/metrics/metrics.js';
import type { AuditWriter } from '../audit/service.js';
import type { SupportGrant } from './admin-grant.js';
import { isTx, type WalletContext } from './context.js';
import { walletCounters } from './counters.js';
import { ensureWallet, ownerKey, type LedgerRow, type WalletOwner } from './ledger.js';
import { createLowBalanceWarnings } from './low-balance.js';
import { credit, debit, reversePayment, supportGrant } from './movements.js';
import { tokensCreditedFor } from './payment-reversal.js';
import type { QuickSettlement } from './quick-settle.js';
import { createReservationLeases, markInFlight } from './reservation-leases.js';
import { grow, reserve } from './reserving.js';
import type { Charge } from './reservation-close.js';
import { release, settle, settlementParts, type SettleOutcome } from './settlement.js';
import { balanceOf, findImbalances, ledgerPage } from './statement.js';
import { startSweepTimer, sweepExpired } from './sweeper.js';
import { sweepOne, type SweptOne } from './sweep-one.js';
import type { ReserveInput, SweptReservation, TopUpHints, WalletServiceDeps } from './types.js';
import { createUsageCache, type OwnerRef } from './usage-cache.js';
import { usageSince } from './usage-windows.js';

export type { WalletOwner } from './ledger.js';
export type { LowBalanceWarning, ReserveInput, SweptReservation, TopUpHints, WalletServiceDeps } from './types.js';

/**
 * The token wallet. The ledger is the truth: every balance change writes its ledger row in the same
 * transaction, and every movement carries a unique idempotency key, so retries and crash replays apply once.
 * Each job lives in its own file (reserving, settlement, reservation-close, sweeper, movements, statement); this
 * factory builds what they share (the `WalletContext`) and publishes the API.
 */
/**
 * The lease of a reservation this process holds, renewed every third of it: a dead instance's reservations lapse
 * within seconds, while a live one may miss two renewals (a database blip) without losing them.
 */
export const DEFAULT_HELD_LEASE_SECONDS = 9;

export function createWalletService(deps: WalletServiceDeps) {
  const { db, clock } = deps;
  const heldLeaseSeconds = deps.heldLeaseSeconds ?? DEFAULT_HELD_LEASE_SECONDS;
  const onBackgroundError = deps.onBackgroundError ?? (() => undefined);
  const leases = createReservationLeases({ db, clock, heldLeaseSeconds, onError: onBackgroundError });
  // Inside a caller's transaction the work joins it (no savepoint: the caller's transaction is what must be atomic).
  const inTx = <T>(tx: DbOrTx | undefined, fn: (tx: Tx) => Promise<T>): Promise<T> => (tx ? (isTx(tx) ? fn(tx) : tx.transaction(fn)) : db.transaction(fn));

  // The usage windows of `/v1/users/me` and the key spend, per owner: dropped here after every write to the owner's
  // wallet (the figures of other instances' writes show within the 2 s TTL; no notification per metered call).
  const usageCache = createUsageCache({ now: () => clock.now().getTime() });
  /**
   * A write to `owner`'s wallet through `handle`: committed by now, unless `handle` is a caller's open transaction.
   * `moves`: the write can change the figures (a reservation opened, grown or closed, a USAGE or REFUND row); only
   * such a write, not committed yet, also keeps the owner out of the cache for one TTL (see `UsageCache.changing`).
   */
  function wrote(owner: OwnerRef | null | undefined, handle: DbOrTx | undefined, moves = true): void {
    if (!owner) return;
    if (moves && handle && isTx(handle)) usageCache.changing(owner);
    else usageCache.changed(owner);
  }

  const reservationSwept = createHook<[tx: Tx, swept: SweptReservation]>(
    'wallet.reservationSwept',
    "subscribe the gateway's recordSwept (the usage record of a reservation a crash left open)",
  );
  const topUpHints = createPort<TopUpHints>('wallet.topUpHints', "connect the top-up module's suggestion, threshold and warning");

  const ctx: WalletContext = {
    db,
    clock,
    reservationSwept,
    topUpHints,
    leaseSeconds: deps.reservationLeaseSeconds ?? 15 * 60,
    heldLeaseSeconds,
    tokensPerCredit: deps.tokensPerCredit ?? (async () => 10_000),
    leases,
    counters: walletCounters(metricsOrPrivate(deps.metrics)),
    lowBalance: createLowBalanceWarnings(db, topUpHints, onBackgroundError),
    inTx,
    wrote,
  };

  const sweepTimer = deps.sweepIntervalMs ? startSweepTimer(deps.sweepIntervalMs, () => service.sweepExpired(), onBackgroundError) : null;

  const service = {
    /** Raised in the sweeper's transaction for each reservation it closes; a handler that throws rolls the close back. */
    reservationSwept: reservationSwept as Subscribable<[tx: Tx, swept: SweptReservation]>,

    /** The top-up hints QUOTA_EXCEEDED and QUOTA_WARNING point at; without them nothing is suggested nor warned. */
    topUpHints: topUpHints as Connectable<TopUpHints>,

    /** The owner's wallet row, created on first use. */
    async ensure(owner: WalletOwner, tx: DbOrTx = db) {
      return ensureWallet(tx, owner, clock.now());
    },

    /**
     * Holds `tokens` for one gateway request in one statement: a conditional balance update (never read-then-write),
     * its USAGE row and the reservation. Refused with 429 QUOTA_EXCEEDED (`details.shortfallTokens`) when the balance
     * cannot cover it or an earlier overrun is still unpaid. A replay of an open reservation reserves nothing more; a
     * replay of a closed one is refused (its request id is spent). Without `leaseSeconds` the reservation is held by
     * this process, whose heartbeat renews the short lease while it lives.
     */
    reserve: (input: ReserveInput, tx?: DbOrTx): Promise<void> => reserve(ctx, input, tx),

    /**
     * Raises an open reservation to `tokens` (never lowers it), taking the difference from the balance; refused with
     * 429 QUOTA_EXCEEDED when the balance cannot cover it. Used when a call moves to a dearer model mid-way.
     */
    grow: (input: { requestId: string; tokens: number; note?: string }, tx?: DbOrTx): Promise<void> => grow(ctx, input, tx),

    /**
     * Closes a reservation on the real cost: a REFUND of the unused part, or a second USAGE row when it ran over
     * (capped at the balance; the rest is recorded as a shortfall that blocks the next reserve until paid).
     * Exactly once per requestId: a repeat returns the first outcome and moves nothing. A reservation the sweeper
     * closed while its request still ran is charged late or the answer withheld (503), never delivered free
     * (late-charge.ts); `delivered` says the answer is out already (a stream).
     */
    settle: (input: Charge & { requestId: string }, tx?: DbOrTx): Promise<SettleOutcome> => settle(ctx, input, tx),

    /**
     * The common settlement (within the reservation, no debt) as parts of the caller's combined statement, which runs
     * them with the condition `closed` and calls `settle` when it does not hold. The reservation's lease stops here.
     * `group`: the statement's place in a shared commit (`runBound`'s `group`) when the reservation's wallet is known to
     * be `owner`'s.
     */
    settlementParts: (input: {
      requestId: string;
      actualTokens: number;
      owner?: WalletOwner;
    }): QuickSettlement & {
      group: string | undefined;
      committed(row: Record<string, unknown>): void;
    } => settlementParts(ctx, input),

    /** Resolves once the background low-balance work started so far has finished (tests, shutdown). */
    backgroundIdle: (): Promise<void> => ctx.lowBalance.idle(),

    /** A failed call: full REFUND of an open reservation; a no-op when it is already closed. */
    release: (input: { requestId: string; reason?: string }, tx?: DbOrTx): Promise<void> => release(ctx, input, tx),

    /**
     * Marks a reservation as running and extends its lease (long streams and jobs call it periodically);
     * `usedTokens` records the usage so far, which the sweeper settles on if the process dies.
     * Returns false when the reservation is unknown or already closed. The usage figures do not move (an IN_FLIGHT
     * reservation counts as an OPEN one), so the cached ones stay.
     */
    markInFlight: (input: { requestId: string; usedTokens?: number; leaseSeconds?: number }): Promise<boolean> => markInFlight(ctx, input),

    /**
     * Closes reservations whose lease ran out (left open by a crash): settled on the last usage reported
     * through markInFlight, or refunded in full when none was reported.
     */
    sweepExpired: (limit?: number): Promise<{ settled: number; released: number }> => sweepExpired(ctx, limit),

    /**
     * Closes one reservation as the sweeper would, now: when its lease lapsed, or (`abandoned`) when its failed request
     * gives up its short lease; null when it stays open or was closed already (see sweep-one.ts).
     */
    sweepOne: (requestId: string, options?: { abandoned?: boolean }): Promise<SweptOne> => sweepOne(ctx, requestId, options),

    /** Stops the heartbeat and the sweep timer (the app closing); reservations still open are left to the sweeper. */
    stop(): void {
      leases.stop();
      if (sweepTimer) clearInterval(sweepTimer);
    },

    async reservation(requestId: string) {
      const [row] = await db.select().from(walletReservations).where(eq(walletReservations.requestId, requestId));
      return row;
    },

    /**
     * Adds tokens (GRANT, PURCHASE, PROMO, REFUND, CONVERSION or a positive ADJUSTMENT), idempotent by key.
     * An unpaid overrun is collected from the new tokens first.
     */
    credit: (
      input: WalletOwner & { kind: LedgerKind; amount: number; idempotencyKey: string; note?: string; paymentId?: string | null },
      tx?: DbOrTx,
    ): Promise<{ applied: boolean; balance: number }> => credit(ctx, input, tx),

    /**
     * Takes tokens back as far as the balance allows (a refunded top-up: ADJUSTMENT with its paymentId);
     * idempotent by key. Returns what was taken and what could not be recovered.
     */
    debit: (
      input: WalletOwner & { amount: number; idempotencyKey: string; note?: string; paymentId?: string | null; kind?: 'ADJUSTMENT' | 'USAGE' },
      tx?: DbOrTx,
    ): Promise<{ applied: boolean; takenTokens: number; unrecoveredTokens: number; balance: number }> => debit(ctx, input, tx),

    /** An operator's support grant (`GRANT` row with a reason), idempotent by key and audited; see admin-grant.ts. */
    supportGrant: (grant: SupportGrant, audit: AuditWriter) => supportGrant(ctx, grant, audit),

    /** Tokens a payment added to wallets (the payments module reports them as `tokensGranted`). */
    creditedForPayment: (paymentId: string, tx: DbOrTx = db) => tokensCreditedFor(tx, paymentId),

    /** A refunded payment: takes its tokens back as far as the balance allows and reports what was already spent. */
    reversePayment: (input: { paymentId: string; idempotencyKey: string; note: string }, tx: DbOrTx = db) => reversePayment(ctx, input, tx),

    /** Balance with per-kind totals; a wallet is created (empty) on first look. */
    balance: (owner: WalletOwner) => balanceOf(db, owner, clock.now(), ctx.tokensPerCredit),

    /** Ledger entries newest first, cursor-paged. */
    transactions: (owner: WalletOwner, page: { limit: number; cursor?: string }): Promise<{ items: LedgerRow[]; nextCursor: string | null }> =>
      ledgerPage(db, owner, page),

    /** Wallets whose balance differs from the sum of their ledger rows (must always be empty; an audit check). */
    findImbalances: (): Promise<Array<{ walletId: string; balance: number; ledgerSum: number }>> => findImbalances(db),

    /**
     * Tokens spent (net of refunds) and generations started since each of the given moments (see usage-windows.ts),
     * from the usage cache: fresh after this instance's writes, at most 2 s old after another instance's.
     */
    usageSince: <K extends string>(owner: WalletOwner, windows: Record<K, Date>) =>
      usageCache.get(ownerKey(owner), windows, () => usageSince(db, owner, windows)),
  };
  return service;
}

export type WalletService = ReturnType<typeof createWalletService>;
