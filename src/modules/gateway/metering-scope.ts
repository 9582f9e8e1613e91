import { AsyncLocalStorage } from 'node:async_hooks';
import type { SQLWrapper } from 'drizzle-orm';
import { newId } from '../../platform/ids.js';
import type { DbOrTx } from '../../platform/db/database.js';

/**
 * The `Idempotency-Key` of a metered request: its write rides with the charge (in the settling transaction or
 * statement), so a committed charge always has its key completed, or marked charged when the answer is not known yet.
 */
export interface MeteringScope {
  requestId: string;
  /** Named in the reservation's context, so the sweeper can close the key with a reservation whose process died. */
  idempotencyKey: string;
  chargeQuery(response: Record<string, unknown> | null, tx?: DbOrTx): SQLWrapper;
  /** The charge and the key's write committed. */
  committed(response: Record<string, unknown> | null): void;
}

const scopes = new AsyncLocalStorage<MeteringScope>();

/** Runs `fn` as one metered request (the Idempotency-Key wrapper's scope). */
export const withMeteringScope = <T>(scope: MeteringScope, fn: () => Promise<T>): Promise<T> => scopes.run(scope, fn);

/** The request id of the metered request being served (the one its Idempotency-Key recorded), or a new one. */
export const meteredRequestId = (): string => scopes.getStore()?.requestId ?? newId();

/** The scope of the request being served when it is the one with this request id, else null. */
export const scopeOfRequest = (requestId: string): MeteringScope | null => {
  const scope = scopes.getStore();
  return scope?.requestId === requestId ? scope : null;
};
