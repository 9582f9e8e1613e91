import type { Clock } from '../../platform/clock/clock.js';
import type { Db, Tx } from '../../platform/db/database.js';
import type { Metrics } from '../../platform/metrics/metrics.js';
import type { ReserveRequest } from './reserve.js';

export interface WalletServiceDeps {
  db: Db;
  clock: Clock;
  /** Tokens per credit for balance display (the catalog's pricing settings); default 10,000. */
  tokensPerCredit?: () => Promise<number>;
  /** The lease of a reservation that names its own (jobs) and gives none when extended (default 15 minutes). */
  reservationLeaseSeconds?: number;
  /** The lease of a reservation held by this process, renewed by its heartbeat every third of it (default 9 s). */
  heldLeaseSeconds?: number;
  /** How often the sweeper looks for reservations whose lease ran out; 0 leaves it to the scheduled job (default 0). */
  sweepIntervalMs?: number;
  onBackgroundError?: (err: unknown) => void;
  /** Where the token movements and the sweeper's actions are counted (the service's registry). */
  metrics?: Metrics;
}

/** A wallet a charge took under the low-balance threshold (the user's own wallet). */
export interface LowBalanceWarning {
  userId: string;
  walletId: string;
  balanceTokens: number;
  thresholdTokens: number;
}

/**
 * Top-up hints from a higher module (connected to `wallet.topUpHints`), read from its cache so they cost the metered path
 * no round trip. Until they are connected a shortfall suggests nothing and no warning is sent.
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
