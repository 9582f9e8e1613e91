import type { Metrics } from '../../platform/metrics/metrics.js';

/** The wallet's series: token movements of reservations, and what the sweeper closed. */
export function walletCounters(metrics: Metrics) {
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
  return { tokenMovements, sweeperActions };
}

export type WalletCounters = ReturnType<typeof walletCounters>;
