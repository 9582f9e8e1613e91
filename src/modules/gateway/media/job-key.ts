import type { Db, Tx } from '../../../platform/db/database.js';
import { conflict } from '../../../platform/http/errors.js';
import type { IdempotencyStore } from '../metering/idempotency.js';
import type { ServerTiming } from '../../../platform/http/server-timing.js';
import type { MeteredRequest } from '../metering/idempotency.js';

/**
 * Commits a queued job and its Idempotency-Key's answer (the job's handle) in one transaction. A request that dies
 * after the commit leaves a key that replays the handle, so a retry finds the job instead of queueing (and charging) a
 * second one; one that dies before leaves only the key in progress, which reserved nothing and is soon freed. The key
 * answers "still running" only while the submit itself runs. Without a key this is just the transaction.
 */
export async function commitJobWithKey<H extends Record<string, unknown>>(
  deps: { db: Db; idempotency: Pick<IdempotencyStore, 'completeIn'> },
  userId: string,
  request: MeteredRequest,
  handle: H,
  timing: ServerTiming | undefined,
  queue: (tx: Tx) => Promise<void>,
): Promise<H> {
  const started = performance.now();
  // A keyed request's job id is the key's request id.
  const scope = request.key;
  await deps.db.transaction(async (tx) => {
    await queue(tx);
    if (!scope) return;
    const entry = { userId, key: scope.idempotencyKey, requestId: request.requestId };
    if (!(await deps.idempotency.completeIn(entry, handle, tx))) {
      throw conflict(
        'This Idempotency-Key was taken over by a retry while this request was being prepared: the retry is the one that runs. Nothing was queued or charged here.',
        {
          idempotencyKey: scope.idempotencyKey,
        },
      );
    }
  });
  scope?.committed(handle);
  // Server-Timing `queue`: the job stored and queued (with a video's reservation) in one commit.
  timing?.add('queue', performance.now() - started);
  return handle;
}
