import type { Tx } from '../../../platform/db/database.js';
import type { SweptReservation } from '../../wallet/service.js';
import type { baseRecord } from './metering.js';
import type { MeteringDeps } from './types.js';

/** What a reservation's context holds (written by `reserveChecked`); older reservations have none. */
type ReservationContext = ReturnType<typeof baseRecord> & { apiKeyId?: string | null; modelSlug?: string; keyBudget?: boolean; idempotencyKey?: string };

/**
 * The sweeper closed a reservation a dead process left open: the usage record it would have written, so usage
 * always agrees with the ledger, and the request's Idempotency-Key follows the reservation (charged, or freed for a
 * retry). Reservations made before contexts existed have none and get no record.
 */
export async function recordSwept(deps: Pick<MeteringDeps, 'usage' | 'keys' | 'idempotency'>, tx: Tx, swept: SweptReservation): Promise<void> {
  const c = swept.context as ReservationContext | null;
  if (c?.keyBudget) await deps.keys?.settleBudget(tx, swept.requestId, swept.chargedTokens);
  if (c?.userId && c.idempotencyKey)
    await deps.idempotency?.followReservation(tx, { userId: c.userId, key: c.idempotencyKey, requestId: swept.requestId }, swept.outcome);
  if (!c?.userId || !c.operation) return;
  const settled = swept.outcome === 'SETTLED';
  await deps.usage.record(
    {
      userId: c.userId,
      subscriptionId: c.subscriptionId ?? null,
      modelId: c.modelId ?? null,
      providerId: c.providerId ?? null,
      jobId: c.jobId ?? null,
      apiKeyId: c.apiKeyId ?? null,
      requestId: swept.requestId,
      operation: c.operation,
      status: settled ? 'PARTIAL' : 'FAILED',
      tokensConsumed: swept.chargedTokens,
      metadata: {
        modelSlug: c.modelSlug ?? null,
        reservedTokens: swept.reservedTokens,
        ...(c.apiKeyId ? { apiKeyId: c.apiKeyId } : {}),
        settledBy: 'sweeper',
        ...(settled ? {} : { error: { code: 'INTERRUPTED', message: 'The generation was interrupted before it reported any usage; nothing was charged.' } }),
      },
    },
    tx,
  );
}
