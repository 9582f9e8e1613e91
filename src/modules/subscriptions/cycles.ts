import type { PlanInterval } from '../../db/schema/plans.js';
import { DAY_MS } from '../../platform/clock/clock.js';

/** A paid cycle that ends unpaid stays usable this long (status GRACE) before it expires. */
export const GRACE_MS = 3 * DAY_MS;
/** A checkout not paid within this long is abandoned (its change expires, a reserved coupon is released). */
export const CHECKOUT_TTL_MS = DAY_MS;

/**
 * The end of a cycle that starts at `start`. Months and years are calendar ones in UTC, clamped to the last day of
 * a shorter month (31 January + 1 month = 28 or 29 February). ENTERPRISE plans bill monthly when sold self-serve.
 */
export function addInterval(start: Date, interval: PlanInterval): Date {
  switch (interval) {
    case 'DAILY':
      return new Date(start.getTime() + DAY_MS);
    case 'WEEKLY':
      return new Date(start.getTime() + 7 * DAY_MS);
    case 'YEARLY':
      return addMonths(start, 12);
    case 'MONTHLY':
    case 'ENTERPRISE':
      return addMonths(start, 1);
  }
}

function addMonths(start: Date, months: number): Date {
  const target = new Date(start.getTime());
  const day = start.getUTCDate();
  target.setUTCDate(1);
  target.setUTCMonth(target.getUTCMonth() + months);
  const lastDay = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  target.setUTCDate(Math.min(day, lastDay));
  return target;
}
