import type { Clock } from '../../platform/clock/clock.js';
import type { Db, DbOrTx, Tx } from '../../platform/db/database.js';
import { AppError } from '../../platform/http/errors.js';
import type { Hook, Port } from '../../platform/events/hooks.js';
import type { createLeaseKeeper } from '../../platform/leases/lease-keeper.js';
import type { WalletCounters } from './counters.js';
import type { LowBalanceWarnings } from './low-balance.js';
import type { SweptReservation, TopUpHints } from './types.js';
import type { OwnerRef } from './usage-cache.js';

/** What the parts of the wallet service share; built once by `createWalletService`. */
export interface WalletContext {
  db: Db;
  clock: Clock;
  /** Raised in the sweeper's transaction for each reservation it closes (the gateway writes the usage record). */
  reservationSwept: Hook<[tx: Tx, swept: SweptReservation]>;
  /** What the wallet's answers point at in the top-up builder; read at each use. */
  topUpHints: Port<TopUpHints>;
  /** The lease of a reservation that names its own (jobs) and gives none when extended. */
  leaseSeconds: number;
  /** The lease of a reservation held by this process, renewed by its heartbeat. */
  heldLeaseSeconds: number;
  tokensPerCredit: () => Promise<number>;
  /** The heartbeat of the reservations this process holds (reservation-leases.ts). */
  leases: ReturnType<typeof createLeaseKeeper>;
  counters: WalletCounters;
  lowBalance: LowBalanceWarnings;
  /** Runs `fn` in the caller's transaction when given one (no savepoint), else in a new transaction. */
  inTx<T>(tx: DbOrTx | undefined, fn: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * A write to `owner`'s wallet through `handle`: committed by now, unless `handle` is a caller's open transaction.
   * `moves`: the write can change the usage figures (see `UsageCache.changing`); default true.
   */
  wrote(owner: OwnerRef | null | undefined, handle: DbOrTx | undefined, moves?: boolean): void;
}

/** The statuses of a reservation that still holds its tokens. */
export const OPEN = ['OPEN', 'IN_FLIGHT'] as const;

export const isTx = (handle: DbOrTx): handle is Tx => 'rollback' in handle;

export const assertTokens = (value: number, name: string) => {
  if (!Number.isSafeInteger(value) || value < 0) throw new AppError(500, 'INTERNAL', `${name} must be a non-negative integer number of tokens (got ${value}).`);
};
