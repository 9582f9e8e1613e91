import { isConnectionLost } from '../../platform/db/connection-lost.js';

/** Pauses before each new attempt of a settlement that lost its database connection: about 3 s in all. */
export const SETTLE_RETRY_DELAYS_MS = [200, 400, 800, 1600];

/**
 * Runs `settle` again when it failed on a lost database connection (a terminated backend, a reset socket): a new
 * connection usually works at once, and the call is then answered instead of failed. Only while the reservation is
 * still open: once it is closed the lost attempt committed (the charge is done, and the Idempotency-Key completed with
 * it) or the sweeper closed it, and the error is answered as it is. Any other error is thrown at once.
 */
export async function settleRetrying<T>(
  settle: () => Promise<T>,
  reservationOpen: () => Promise<boolean>,
  delaysMs: readonly number[] = SETTLE_RETRY_DELAYS_MS,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await settle();
    } catch (err) {
      if (!isConnectionLost(err) || attempt >= delaysMs.length) throw err;
      await new Promise((resolve) => setTimeout(resolve, delaysMs[attempt]));
      // Unknown while the database is still away: try again, the settlement itself finds out.
      if (!(await reservationOpen().catch(() => true))) throw err;
    }
  }
}
