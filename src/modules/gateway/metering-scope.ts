import type { SQLWrapper } from 'drizzle-orm';
import type { DbOrTx } from '../../platform/db/database.js';
import { newId } from '../../platform/ids.js';

/**
 * A request's `Idempotency-Key` as the metering sees it: its write rides with the charge (in the settling transaction
 * or statement), so a committed charge always has its key completed, or marked charged when the answer is not known
 * yet. It travels as a value: from the key's runner (idempotent-call.ts) in the `MeteredRequest`, into the reservation
 * (`ReserveCall.key`, named in the reservation's context for the sweeper) and on the `Metered` call to its settlement.
 */
export interface KeyScope {
  idempotencyKey: string;
  chargeQuery(response: Record<string, unknown> | null, tx?: DbOrTx): SQLWrapper;
  /** The charge and the key's write committed. */
  committed(response: Record<string, unknown> | null): void;
}

/** One metered request: its id (the reservation's, the job's) and its Idempotency-Key, when it came with one. */
export interface MeteredRequest {
  requestId: string;
  key: KeyScope | null;
}

/** A request without an Idempotency-Key. */
export const unkeyedRequest = (): MeteredRequest => ({ requestId: newId(), key: null });
