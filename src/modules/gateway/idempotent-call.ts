import type { IdempotencyStore, KeyEntry } from './idempotency.js';
import type { KeyScope, MeteredRequest } from './metering-scope.js';

export type KeyedRun<R, T> = { replayed: true; response: T } | { replayed: false; result: R };

/** The key's record follows the charge: completed (or marked charged) in the settling transaction. */
function keyScope(idempotency: Pick<IdempotencyStore, 'chargeQuery'>, entry: KeyEntry) {
  let completed = false;
  const scope: KeyScope = {
    idempotencyKey: entry.key,
    chargeQuery: (response, tx) => idempotency.chargeQuery(entry, response, tx),
    committed(response) {
      if (response) completed = true;
    },
  };
  return { scope, completed: () => completed };
}

/**
 * Runs `run` once per Idempotency-Key (the JSON calls and the streamed text alike): a repeat with the same body gets
 * the stored answer (`replayed`), and `run` runs under the key's request id as one metered request. After a failure
 * the key follows the request's reservation (`giveUp`): freed for a retry when nothing was charged, never freed once
 * charged. `answerOf` gives the answer to store from what `run` returned, or null when there is none (a stream that
 * broke midway): the key follows the reservation then too. Otherwise, once `run` succeeded, the key is never freed
 * here: a job it queued is charged later, under the key's request id.
 */
export async function runWithIdempotencyKey<R, T extends Record<string, unknown>>(
  idempotency: Pick<IdempotencyStore, 'begin' | 'chargeQuery' | 'complete' | 'giveUp'>,
  request: { userId: string; key: string; route: string; body: unknown },
  run: (request: MeteredRequest) => Promise<R>,
  answerOf: (result: R) => T | null,
): Promise<KeyedRun<R, T>> {
  const begun = await idempotency.begin(request);
  if (begun.kind === 'replay') return { replayed: true, response: begun.response as T };
  const entry = { userId: request.userId, key: request.key, requestId: begun.requestId };
  const { scope, completed } = keyScope(idempotency, entry);
  let result: R;
  try {
    result = await run({ requestId: begun.requestId, key: scope });
  } catch (err) {
    await idempotency.giveUp(entry).catch(() => undefined);
    throw err;
  }
  const answer = answerOf(result);
  if (answer === null) await idempotency.giveUp(entry).catch(() => undefined);
  else if (!completed()) await idempotency.complete(entry, 200, answer);
  return { replayed: false, result };
}
