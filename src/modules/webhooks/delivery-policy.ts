/** The receiver must answer 2xx within this time (spec A "Delivery semantics"). */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** Waits after the 1st, 2nd, ... failed attempt (spec: retries after 5 s, 30 s, 2 min, 10 min, 1 h, 6 h). */
export const RETRY_DELAYS_MS = [5_000, 30_000, 2 * 60_000, 10 * 60_000, 60 * 60_000, 6 * 60 * 60_000] as const;
/** The attempt budget of one delivery; when the last one fails the webhook is disabled (docs/decisions.md). */
export const MAX_ATTEMPTS = 6;
