import { and, desc, eq, inArray, lt, sql } from 'drizzle-orm';
import { walletLedger, walletReservations, wallets, type LedgerKind } from '../../db/schema/wallet.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx, Tx } from '../../platform/db/database.js';
import { metricsOrPrivate, type Metrics } from '../../platform/metrics/metrics.js';
import { AppError, conflict, notFound } from '../../platform/http/errors.js';
import { afterCursor, toPage } from '../../platform/http/pagination.js';
import { applyMovement, creditWithDebtCollection, ensureWallet, ownerKey, walletOrder, type LedgerRow, type WalletOwner } from './ledger.js';
import { createLeaseKeeper } from '../../platform/leases/lease-keeper.js';
import { quickSettle, quickSettlement, walletAfter, type QuickSettlement, type WalletAfter } from './quick-settle.js';
import { growReservation, reserveTokens, type ReserveRequest } from './reserve.js';
import { usageSince } from './usage-windows.js';
import { createUsageCache, type OwnerRef } from './usage-cache.js';
import { reversePaymentCredits, tokensCreditedFor } from './payment-reversal.js';
import { grantBySupport, type SupportGrant } from './admin-grant.js';
import type { AuditWriter } from '../audit/service.js';

export type { WalletOwner } from './ledger.js';

export interface WalletServiceDeps {
  db: Db;
  clock: Clock;
  /** Tokens per credit for balance display (the catalog's pricing settings); default 10,000. */
  tokensPerCredit?: () => Promise<number>;
  /** The lease of a reservation that names its own (jobs) and gives none when extended (default 15 minutes). */
  reservationLeaseSeconds?: number;
  /** The lease of a reservation held by this process, renewed by its heartbeat (default 30 s). */
  heldLeaseSeconds?: number;
  /** How often the sweeper looks for reservations whose lease ran out; 0 leaves it to the scheduled job (default 0). */
  sweepIntervalMs?: number;
  /** Runs inside the sweeper's transaction for each reservation it closes (the gateway writes the usage record). */
  onSwept?: (tx: Tx, swept: SweptReservation) => Promise<void>;
  onBackgroundError?: (err: unknown) => void;
  /** Where the token movements and the sweeper's actions are counted (the service's registry). */
  metrics?: Metrics;
  /** What the wallet's answers point at in the top-up builder, wired from src/services.ts. */
  topUp?: TopUpHints;
}

/** A wallet a charge took under the low-balance threshold (the user's own wallet). */
export interface LowBalanceWarning {
  userId: string;
  walletId: string;
  balanceTokens: number;
  thresholdTokens: number;
}

/**
 * Top-up hints from a higher module, read from its cache so they cost the metered path no round trip.
 */
export interface TopUpHints {
  /** The suggested top-up for a shortfall; `cachedOnly` inside a caller's transaction (no other query may run then). */
  suggest(shortfallTokens: number, cachedOnly: boolean): Promise<{ component: string; units: number } | null>;
  /** The low-balance threshold (0: no warnings), or null while it is not known yet. */
  lowBalanceThresholdTokens(): number | null;
  /** Sends the QUOTA_WARNING in `tx` (the transaction that marked the wallet warned), respecting preferences. */
  warn(tx: Tx, warning: LowBalanceWarning): Promise<void>;
}

export type ReserveInput = ReserveRequest & { leaseSeconds?: number };

export interface SweptReservation {
  requestId: string;
  walletId: string;
  reservedTokens: number;
  chargedTokens: number;
  outcome: 'SETTLED' | 'RELEASED';
  context: Record<string, unknown> | null;
  note: string | null;
}

const OPEN = ['OPEN', 'IN_FLIGHT'] as const;
const POSITIVE_KINDS: LedgerKind[] = ['GRANT', 'PURCHASE', 'PROMO', 'REFUND', 'ADJUSTMENT', 'CONVERSION'];

const isTx = (handle: DbOrTx): handle is Tx => 'rollback' in handle;

const sweptOutcome = (usedTokens: number | null) =>
  usedTokens !== null ? { actualTokens: usedTokens } : { release: 'Refunded: the generation was interrupted before it reported any usage' };

const assertTokens = (value: number, name: string) => {
  if (!Number.isSafeInteger(value) || value < 0) throw new AppError(500, 'INTERNAL', `${name} must be a non-negative integer number of tokens (got ${value}).`);
};

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

/**
 * The token wallet. The ledger is the truth: every balance change writes its ledger row in the same
 * transaction, and every movement carries a unique idempotency key, so retries and crash replays apply once.
 */
export function createWalletService(deps: WalletServiceDeps) {
  const { db, clock } = deps;
  const leaseSeconds = deps.reservationLeaseSeconds ?? 15 * 60;
  const heldLeaseSeconds = deps.heldLeaseSeconds ?? 30;
  const onBackgroundError = deps.onBackgroundError ?? (() => undefined);
  const leases = createLeaseKeeper({
    intervalMs: (heldLeaseSeconds * 1000) / 3,
    onError: onBackgroundError,
    renew: async (requestIds) => {
      await db
        .update(walletReservations)
        .set({ leaseUntil: new Date(clock.now().getTime() + heldLeaseSeconds * 1000) })
        .where(and(inArray(walletReservations.requestId, requestIds), inArray(walletReservations.status, [...OPEN])));
    },
  });
  const tokensPerCredit = deps.tokensPerCredit ?? (async () => 10_000);
  const metrics = metricsOrPrivate(deps.metrics);
  // Counted when the statement that moved them ran; inside a caller's transaction that later rolls back (rare: the
  // caller failed after the wallet's work) a movement is counted that did not happen.
  const tokenMovements = metrics.counter({
    name: 'storefront_wallet_reservation_tokens_total',
    help: 'Wallet tokens reserved for generations, charged when they settled, and refunded (unused parts and failed calls)',
    labelNames: ['movement'],
  });
  const sweeperActions = metrics.counter({
    name: 'storefront_wallet_sweeper_reservations_total',
    help: 'Reservations left open by a dead process that the sweeper closed: settled on the usage they reported, or released in full',
    labelNames: ['action'],
  });
  for (const movement of ['reserved', 'charged', 'refunded']) tokenMovements.inc({ movement }, 0);
  for (const action of ['settled', 'released']) sweeperActions.inc({ action }, 0);
  // Inside a caller's transaction the work joins it (no savepoint: the caller's transaction is what must be atomic).
  const inTx = <T>(tx: DbOrTx | undefined, fn: (tx: Tx) => Promise<T>): Promise<T> => (tx ? (isTx(tx) ? fn(tx) : tx.transaction(fn)) : db.transaction(fn));

  async function findWallet(dbOrTx: DbOrTx, owner: WalletOwner) {
    const key = ownerKey(owner);
    const [row] = await dbOrTx.select().from(wallets).where(and(eq(wallets.ownerType, key.ownerType), eq(wallets.ownerId, key.ownerId)));
    return row;
  }

  /**
   * Settles or releases one reservation inside `tx`; the row is locked so it closes exactly once. `owner` is the
   * wallet's owner when something changed (read with the locked row: its usage figures are dropped after the commit).
   */
  async function close(tx: Tx, requestId: string, wanted: { actualTokens: number } | { release: string } | 'sweep') {
    const sweeping = wanted === 'sweep';
    leases.letGo(requestId);
    const now = clock.now();
    const [locked] = await tx
      .select({ res: walletReservations, ownerType: wallets.ownerType, ownerId: wallets.ownerId })
      .from(walletReservations)
      .innerJoin(wallets, eq(wallets.id, walletReservations.walletId))
      .where(eq(walletReservations.requestId, requestId))
      .for('update', { of: walletReservations });
    if (!locked) throw notFound(`No reservation exists for request ${requestId}.`);
    const { res } = locked;
    const owner: OwnerRef = { ownerType: locked.ownerType, ownerId: locked.ownerId };
    if (res.status === 'SETTLED') return { chargedTokens: res.chargedTokens ?? 0, shortfallTokens: res.shortfallTokens, changed: false, walletId: null, owner: null };
    if (res.status === 'RELEASED') return { chargedTokens: 0, shortfallTokens: 0, changed: false, walletId: null, owner: null };
    // The sweeper picked it without a lock: a heartbeat may have renewed the lease since, or progress been recorded.
    if (sweeping && res.leaseUntil >= now) return { chargedTokens: 0, shortfallTokens: 0, changed: false, walletId: null, owner: null };
    const outcome = sweeping ? sweptOutcome(res.usedTokens) : wanted;
    const swept = async (chargedTokens: number) =>
      sweeping &&
      deps.onSwept?.(tx, {
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
        await creditWithDebtCollection(tx, res.walletId, { kind: 'REFUND', amount: res.tokens, idempotencyKey: `release:${requestId}`, requestId, note: outcome.release }, now);
      }
      await tx.update(walletReservations).set({ status: 'RELEASED', chargedTokens: 0, reason: outcome.release, closedAt: now }).where(eq(walletReservations.id, res.id));
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
        await applyMovement(tx, res.walletId, { kind: 'USAGE', amount: -take, idempotencyKey: `settle:${requestId}`, requestId, note: 'Generation ran over its reservation' }, now);
      }
      if (shortfall > 0) {
        await tx.update(wallets).set({ debt: sql`${wallets.debt} + ${shortfall}`, updatedAt: now }).where(eq(wallets.id, res.walletId));
      }
    }
    await tx
      .update(walletReservations)
      .set({ status: 'SETTLED', usedTokens: actual, chargedTokens: charged, shortfallTokens: shortfall, closedAt: now })
      .where(eq(walletReservations.id, res.id));
    await swept(charged);
    tokenMovements.inc({ movement: 'charged' }, charged);
    tokenMovements.inc({ movement: 'refunded' }, Math.max(0, res.tokens - actual));
    return { chargedTokens: charged, shortfallTokens: shortfall, changed: true, settled: true, walletId: res.walletId, owner };
  }

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

  /** The owner of the wallet a request's reservation is on (for writes that know only the request id). */
  async function ownerOfRequest(t: DbOrTx, requestId: string): Promise<OwnerRef | null> {
    const [row] = await t
      .select({ ownerType: wallets.ownerType, ownerId: wallets.ownerId })
      .from(walletReservations)
      .innerJoin(wallets, eq(wallets.id, walletReservations.walletId))
      .where(eq(walletReservations.requestId, requestId));
    return row ?? null;
  }

  async function walletAfterOf(t: Tx, walletId: string): Promise<WalletAfter | null> {
    const [w] = await t
      .select({ walletId: wallets.id, ownerType: wallets.ownerType, ownerId: wallets.ownerId, balance: wallets.balance, lowBalanceWarned: wallets.lowBalanceWarned })
      .from(wallets)
      .where(eq(wallets.id, walletId));
    return w ?? null;
  }

  // Low-balance warnings (QUOTA_WARNING): decided from the balance a settlement returned, sent in the background.
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
    await t.update(wallets).set({ lowBalanceWarned: false }).where(and(eq(wallets.id, walletId), eq(wallets.lowBalanceWarned, true)));
  }

  /** A settlement the one-statement shortcut made (here, or in the caller's combined statement once it committed). */
  function settledQuickly(quick: { charged: number; unused: number; after: WalletAfter | null }): void {
    tokenMovements.inc({ movement: 'charged' }, quick.charged);
    tokenMovements.inc({ movement: 'refunded' }, quick.unused);
    afterSettlement(quick.after);
  }

  let sweepTimer: NodeJS.Timeout | null = null;
  let sweepRunning = false;
  if (deps.sweepIntervalMs) {
    sweepTimer = setInterval(() => {
      if (sweepRunning) return;
      sweepRunning = true;
      service
        .sweepExpired()
        .catch(onBackgroundError)
        .finally(() => (sweepRunning = false));
    }, deps.sweepIntervalMs);
    sweepTimer.unref();
  }

  const service = {
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
    async reserve(input: ReserveInput, tx?: DbOrTx): Promise<void> {
      assertTokens(input.tokens, 'tokens');
      const attempt = () => reserveTokens(tx ?? db, input, clock.now(), input.leaseSeconds ?? heldLeaseSeconds);
      let outcome = await attempt();
      if (outcome.kind === 'no-wallet') {
        await ensureWallet(tx ?? db, input, clock.now());
        outcome = await attempt();
      }
      if (outcome.kind === 'reserved') {
        wrote(ownerKey(input), tx);
        tokenMovements.inc({ movement: 'reserved' }, input.tokens);
        if (input.leaseSeconds === undefined) leases.hold(input.requestId);
        return;
      }
      if (outcome.kind === 'exists') {
        if (outcome.walletId !== outcome.ownWalletId) throw conflict('This request id is already in use by another wallet.');
        if (outcome.status === 'SETTLED' || outcome.status === 'RELEASED') {
          throw conflict(`This request was already ${outcome.status === 'SETTLED' ? 'charged' : 'refunded'}; a new generation needs a new request.`, { requestId: input.requestId });
        }
        return;
      }
      if (outcome.kind === 'no-wallet') throw new AppError(500, 'INTERNAL', 'The wallet could not be created.');
      // Inside a caller's transaction nothing else may touch the database (the embedded one has a single connection).
      const shortfallTokens = Math.max(1, input.tokens + outcome.debt - outcome.balance);
      const suggested = (await deps.topUp?.suggest(shortfallTokens, tx !== undefined).catch(() => null)) ?? null;
      throw quotaExceeded(shortfallTokens, tx ? null : await tokensPerCredit(), suggested, {
        requiredTokens: input.tokens,
        balanceTokens: outcome.balance,
        unpaidOverrunTokens: outcome.debt,
      });
    },

    /**
     * Raises an open reservation to `tokens` (never lowers it), taking the difference from the balance; refused with
     * 429 QUOTA_EXCEEDED when the balance cannot cover it. Used when a call moves to a dearer model mid-way.
     */
    async grow(input: { requestId: string; tokens: number; note?: string }, tx?: DbOrTx): Promise<void> {
      assertTokens(input.tokens, 'tokens');
      if (await growReservation(tx ?? db, input, clock.now())) {
        // A dearer fallback model (rare): the write returns no owner, so it is read (not on the reserve/settle path).
        wrote(await ownerOfRequest(tx ?? db, input.requestId), tx);
        return;
      }
      const res = await (tx ?? db).select().from(walletReservations).where(eq(walletReservations.requestId, input.requestId));
      const [wallet] = res[0] ? await (tx ?? db).select().from(wallets).where(eq(wallets.id, res[0].walletId)) : [];
      if (!res[0] || !wallet) throw conflict(`The reservation of request ${input.requestId} is not open.`);
      const extra = input.tokens - res[0].tokens;
      const shortfallTokens = Math.max(1, extra + wallet.debt - wallet.balance);
      const suggested = (await deps.topUp?.suggest(shortfallTokens, tx !== undefined).catch(() => null)) ?? null;
      throw quotaExceeded(shortfallTokens, tx ? null : await tokensPerCredit(), suggested, {
        requiredTokens: extra,
        balanceTokens: wallet.balance,
        unpaidOverrunTokens: wallet.debt,
      });
    },

    /**
     * Closes a reservation on the real cost: a REFUND of the unused part, or a second USAGE row when it ran over
     * (capped at the balance; the rest is recorded as a shortfall that blocks the next reserve until paid).
     * Exactly once per requestId: a repeat returns the first outcome and moves nothing.
     */
    async settle(input: { requestId: string; actualTokens: number }, tx?: DbOrTx): Promise<{ chargedTokens: number; shortfallTokens: number }> {
      assertTokens(input.actualTokens, 'actualTokens');
      leases.letGo(input.requestId);
      const quick = await quickSettle(tx ?? db, input, clock.now());
      if (quick !== null) {
        wrote(quick.after, tx);
        settledQuickly(quick);
        return { chargedTokens: quick.charged, shortfallTokens: 0 };
      }
      const { chargedTokens, shortfallTokens, after, owner } = await inTx(tx, async (t) => {
        const closed = await close(t, input.requestId, { actualTokens: input.actualTokens });
        return Object.assign({}, closed, { after: closed.walletId ? await walletAfterOf(t, closed.walletId) : null });
      });
      wrote(owner, tx);
      afterSettlement(after);
      return { chargedTokens, shortfallTokens };
    },

    /**
     * The common settlement (within the reservation, no debt) as parts of the caller's combined statement, which runs
     * them with the condition `closed` and calls `settle` when it does not hold. The reservation's lease stops here.
     * `group`: the statement's place in a shared commit (`runBound`'s `group`) when the reservation's wallet is known to
     * be `owner`'s.
     */
    settlementParts(input: { requestId: string; actualTokens: number; owner?: WalletOwner }): QuickSettlement & {
      group: string | undefined;
      committed(row: Record<string, unknown>): void;
    } {
      assertTokens(input.actualTokens, 'actualTokens');
      leases.letGo(input.requestId);
      return Object.assign(quickSettlement(input, clock.now()), {
        group: input.owner ? walletOrder(ownerKey(input.owner)) : undefined,
        // The combined statement committed; `row` selected `unused as unused` and the `after` columns. The low-balance
        // check costs nothing while the balance stays at or above the threshold or a warning is already out.
        committed: (row: Record<string, unknown>) => {
          const after = walletAfter(row);
          wrote(after, undefined);
          settledQuickly({ charged: input.actualTokens, unused: Number(row.unused), after });
        },
      });
    },

    /** Resolves once the background low-balance work started so far has finished (tests, shutdown). */
    async backgroundIdle(): Promise<void> {
      while (background.size > 0) await Promise.allSettled([...background]);
    },

    /** A failed call: full REFUND of an open reservation; a no-op when it is already closed. */
    async release(input: { requestId: string; reason?: string }, tx?: DbOrTx): Promise<void> {
      const owner = await inTx(tx, async (t) => {
        const [res] = await t.select({ id: walletReservations.id }).from(walletReservations).where(eq(walletReservations.requestId, input.requestId));
        if (!res) return null;
        return (await close(t, input.requestId, { release: input.reason ?? 'Generation failed' })).owner;
      });
      wrote(owner, tx);
    },

    /**
     * Marks a reservation as running and extends its lease (long streams and jobs call it periodically);
     * `usedTokens` records the usage so far, which the sweeper settles on if the process dies.
     * Returns false when the reservation is unknown or already closed. The usage figures do not move (an IN_FLIGHT
     * reservation counts as an OPEN one), so the cached ones stay.
     */
    async markInFlight(input: { requestId: string; usedTokens?: number; leaseSeconds?: number }): Promise<boolean> {
      if (input.usedTokens !== undefined) assertTokens(input.usedTokens, 'usedTokens');
      const now = clock.now();
      const rows = await db
        .update(walletReservations)
        .set({
          status: 'IN_FLIGHT',
          leaseUntil: new Date(now.getTime() + (input.leaseSeconds ?? (leases.holds(input.requestId) ? heldLeaseSeconds : leaseSeconds)) * 1000),
          ...(input.usedTokens !== undefined ? { usedTokens: input.usedTokens } : {}),
        })
        .where(and(eq(walletReservations.requestId, input.requestId), inArray(walletReservations.status, [...OPEN])))
        .returning({ id: walletReservations.id });
      return rows.length > 0;
    },

    /**
     * Closes reservations whose lease ran out (left open by a crash): settled on the last usage reported
     * through markInFlight, or refunded in full when none was reported.
     */
    async sweepExpired(limit = 200): Promise<{ settled: number; released: number }> {
      const now = clock.now();
      const expired = await db
        .select({ requestId: walletReservations.requestId })
        .from(walletReservations)
        .where(and(inArray(walletReservations.status, [...OPEN]), lt(walletReservations.leaseUntil, now)))
        .orderBy(walletReservations.leaseUntil)
        .limit(limit);
      let settled = 0;
      let released = 0;
      for (const res of expired) {
        const result = await db.transaction((t) => close(t, res.requestId, 'sweep'));
        wrote(result.owner, undefined);
        if (!result.changed) continue;
        if (result.settled) settled++;
        else released++;
        sweeperActions.inc({ action: result.settled ? 'settled' : 'released' });
      }
      return { settled, released };
    },

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
    async credit(
      input: WalletOwner & { kind: LedgerKind; amount: number; idempotencyKey: string; note?: string; paymentId?: string | null },
      tx?: DbOrTx,
    ): Promise<{ applied: boolean; balance: number }> {
      if (!POSITIVE_KINDS.includes(input.kind)) throw new AppError(500, 'INTERNAL', `A ${input.kind} movement cannot add tokens.`);
      assertTokens(input.amount, 'amount');
      const now = clock.now();
      const credited = await inTx(tx, async (t) => {
        const wallet = await ensureWallet(t, input, now);
        const result = await creditWithDebtCollection(t, wallet.id, input, now);
        if (result.applied) await rearm(t, wallet.id, result.balance);
        return { applied: result.applied, balance: result.balance, collected: result.collected };
      });
      // A plan's grant moves no usage figure, unless it pays an overrun (a USAGE row) or is a REFUND.
      if (credited.applied) wrote(ownerKey(input), tx, input.kind === 'REFUND' || credited.collected > 0);
      return { applied: credited.applied, balance: credited.balance };
    },

    /**
     * Takes tokens back as far as the balance allows (a refunded top-up: ADJUSTMENT with its paymentId);
     * idempotent by key. Returns what was taken and what could not be recovered.
     */
    async debit(
      input: WalletOwner & { amount: number; idempotencyKey: string; note?: string; paymentId?: string | null; kind?: 'ADJUSTMENT' | 'USAGE' },
      tx?: DbOrTx,
    ): Promise<{ applied: boolean; takenTokens: number; unrecoveredTokens: number; balance: number }> {
      assertTokens(input.amount, 'amount');
      const now = clock.now();
      const debited = await inTx(tx, async (t) => {
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
      if (debited.applied) wrote(ownerKey(input), tx, input.kind === 'USAGE');
      return debited;
    },

    /** An operator's support grant (`GRANT` row with a reason), idempotent by key and audited; see admin-grant.ts. */
    async supportGrant(grant: SupportGrant, audit: AuditWriter) {
      assertTokens(grant.tokens, 'tokens');
      const granted = await grantBySupport(db, grant, clock.now(), audit);
      if (granted.applied) wrote(ownerKey({ userId: grant.userId }), undefined);
      return granted;
    },

    /** Tokens a payment added to wallets (the payments module reports them as `tokensGranted`). */
    creditedForPayment: (paymentId: string, tx: DbOrTx = db) => tokensCreditedFor(tx, paymentId),

    /** A refunded payment: takes its tokens back as far as the balance allows and reports what was already spent. */
    async reversePayment(input: { paymentId: string; idempotencyKey: string; note: string }, tx: DbOrTx = db) {
      const { reversed, owners } = await inTx(tx, async (t) => {
        const reversed = await reversePaymentCredits(t, input, clock.now());
        // A refunded payment (rare): the wallets it touched are read back for their owners.
        const owners = await t
          .selectDistinct({ ownerType: wallets.ownerType, ownerId: wallets.ownerId })
          .from(walletLedger)
          .innerJoin(wallets, eq(wallets.id, walletLedger.walletId))
          .where(eq(walletLedger.paymentId, input.paymentId));
        return { reversed, owners };
      });
      for (const owner of owners) wrote(owner, tx, false); // ADJUSTMENT rows: no usage figure moves
      return reversed;
    },

    /** Balance with per-kind totals; a wallet is created (empty) on first look. */
    async balance(owner: WalletOwner) {
      const wallet = await ensureWallet(db, owner, clock.now());
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
    },

    /** Ledger entries newest first, cursor-paged. */
    async transactions(owner: WalletOwner, page: { limit: number; cursor?: string }): Promise<{ items: LedgerRow[]; nextCursor: string | null }> {
      const wallet = await findWallet(db, owner);
      if (!wallet) {
        if (page.cursor) afterCursor(walletLedger.createdAt, walletLedger.id, page.cursor); // still validates the cursor
        return { items: [], nextCursor: null };
      }
      const rows = await db
        .select()
        .from(walletLedger)
        .where(afterCursor(walletLedger.createdAt, walletLedger.id, page.cursor, eq(walletLedger.walletId, wallet.id)))
        .orderBy(desc(walletLedger.createdAt), desc(walletLedger.id))
        .limit(page.limit + 1);
      return toPage(rows, page.limit, (r) => ({ sort: r.createdAt.toISOString(), id: r.id }));
    },

    /** Wallets whose balance differs from the sum of their ledger rows (must always be empty; an audit check). */
    async findImbalances(): Promise<Array<{ walletId: string; balance: number; ledgerSum: number }>> {
      const rows = await db
        .select({
          walletId: wallets.id,
          balance: wallets.balance,
          ledgerSum: sql<string>`coalesce((select sum(${walletLedger.amount}) from ${walletLedger} where ${walletLedger.walletId} = ${wallets.id}), 0)`,
        })
        .from(wallets)
        .where(sql`${wallets.balance} <> coalesce((select sum(${walletLedger.amount}) from ${walletLedger} where ${walletLedger.walletId} = ${wallets.id}), 0)`);
      return rows.map((r) => ({ walletId: r.walletId, balance: r.balance, ledgerSum: Number(r.ledgerSum) }));
    },

    /**
     * Tokens spent (net of refunds) and generations started since each of the given moments (see usage-windows.ts),
     * from the usage cache: fresh after this instance's writes, at most 2 s old after another instance's.
     */
    usageSince: <K extends string>(owner: WalletOwner, windows: Record<K, Date>) => usageCache.get(ownerKey(owner), windows, () => usageSince(db, owner, windows)),
  };
  return service;
}

export type WalletService = ReturnType<typeof createWalletService>;
