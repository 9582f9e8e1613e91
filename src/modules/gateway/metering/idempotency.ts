import { createHash } from 'node:crypto';
import { and, eq, lt, type SQLWrapper } from 'drizzle-orm';
import { newId } from '../../../platform/ids.js';
import { gatewayIdempotency } from '../../../db/schema/gateway.js';
import { HOUR_MS, MINUTE_MS, type Clock } from '../../../platform/clock/clock.js';
import type { Db, DbOrTx } from '../../../platform/db/database.js';
import { conflict } from '../../../platform/http/errors.js';

/** How long a finished answer can be replayed. */
export const IDEMPOTENCY_RETENTION_MS = 24 * HOUR_MS;
/**
 * An entry in progress whose request never reserved anything within this long was left by a crash before the
 * reservation (reserving follows the key at once); the key may be used again.
 */
const UNRESERVED_GRACE_MS = MINUTE_MS;

/**
 * One request's hold on a key. Every write after `begin` names the request, so a request that outlived its hold (its
 * reservation was swept while it still ran) cannot touch the entry of the retry that took the key after it.
 */
export interface KeyEntry {
  userId: string;
  key: string;
  requestId: string;
}

/** How the reservation of a request that will never finish its key (its process died) was closed. */
export type ReservationClosed = 'SETTLED' | 'RELEASED';

export type IdempotencyBegin = { kind: 'new'; requestId: string } | { kind: 'replay'; requestId: string; status: number; response: Record<string, unknown> };

/**
 * A request's `Idempotency-Key` as the metering sees it: its write rides with the charge (in the settling transaction
 * or statement), so a committed charge always has its key completed, or marked charged when the answer is not known
 * yet. It travels as a value: from the key's runner (`runWithIdempotencyKey` below) in the `MeteredRequest`, into the reservation
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

/** An answer, and whether it came from an earlier request with the same Idempotency-Key (nothing charged then). */
export interface Replayable<T> {
  body: T;
  replayed: boolean;
}

/** A request without an Idempotency-Key. */
export const unkeyedRequest = (): MeteredRequest => ({ requestId: newId(), key: null });

/**
 * `Idempotency-Key` on any /v1/ai/* call: runs `run` once per key, and a repeat with the same body gets the stored
 * answer, uncharged (`replayed`). Without a key `run` runs as a request of its own.
 */
export async function once<T extends Record<string, unknown>>(
  idempotency: Pick<IdempotencyStore, 'begin' | 'chargeQuery' | 'complete' | 'giveUp'>,
  principal: { userId: string },
  options: { idempotencyKey?: string },
  route: string,
  body: unknown,
  run: (request: MeteredRequest) => Promise<T>,
): Promise<Replayable<T>> {
  if (!options.idempotencyKey) return { body: await run(unkeyedRequest()), replayed: false };
  const keyed = await runWithIdempotencyKey(idempotency, { userId: principal.userId, key: options.idempotencyKey, route, body }, run, (answer: T) => answer);
  return keyed.replayed ? { body: keyed.response, replayed: true } : { body: keyed.result, replayed: false };
}

export type KeyedRun<R, T> = { replayed: true; response: T } | { replayed: false; result: R };

/**
 * Runs `run` once per Idempotency-Key (the JSON calls and the streamed text alike): a repeat with the same body gets
 * the stored answer (`replayed`), and `run` runs under the key's request id as one metered request, whose settlement
 * completes the key with the answer in its own transaction (`KeyScope`). After a failure the key follows the request's
 * reservation (`giveUp`): freed for a retry when nothing was charged, never freed once charged. `answerOf` gives the
 * answer to store from what `run` returned, or null when there is none (a stream that broke midway): the key follows
 * the reservation then too. Otherwise, once `run` succeeded, the key is never freed here: a job it queued is charged
 * later, under the key's request id.
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
  let completed = false;
  const scope: KeyScope = {
    idempotencyKey: entry.key,
    chargeQuery: (response, tx) => idempotency.chargeQuery(entry, response, tx),
    committed(response) {
      if (response) completed = true;
    },
  };
  let result: R;
  try {
    result = await run({ requestId: begun.requestId, key: scope });
  } catch (err) {
    await idempotency.giveUp(entry).catch(() => undefined);
    throw err;
  }
  const answer = answerOf(result);
  if (answer === null) await idempotency.giveUp(entry).catch(() => undefined);
  else if (!completed) await idempotency.complete(entry, 200, answer);
  return { replayed: false, result };
}

/** JSON with object keys sorted, so the same body always hashes the same whatever its key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * `Idempotency-Key` on /v1/ai/*: the first request with a key runs; a repeat with the same body gets the stored
 * answer and is not charged again; the same key with another body is refused. Only successful answers are kept:
 * after a failure (nothing was charged) the key can be retried.
 */
export interface IdempotencyDeps {
  db: Db;
  clock: Clock;
  /** The state of the request's reservation: how an entry left in progress is judged. */
  reservationStatus: (requestId: string) => Promise<'OPEN' | 'IN_FLIGHT' | 'SETTLED' | 'RELEASED' | null>;
  /**
   * Closes the request's open reservation as the sweeper would, its key following in the same transaction: when its
   * lease lapsed, or (`abandoned`) when its request failed and gives it up. Null when it stays open.
   */
  sweepReservation?: (requestId: string, options: { abandoned: boolean }) => Promise<ReservationClosed | null>;
}

const entryOf = (e: KeyEntry) => and(eq(gatewayIdempotency.userId, e.userId), eq(gatewayIdempotency.key, e.key), eq(gatewayIdempotency.requestId, e.requestId));

export function createIdempotencyStore(deps: IdempotencyDeps) {
  const { db, clock } = deps;

  /**
   * A key in progress follows its request's reservation once that is closed without it: charged (the sweeper settled
   * on the usage the request reported) the key is CHARGED and never freed; refunded, it is freed for one retry.
   * Conditional on the entry still being in progress under this request, so concurrent callers act once.
   */
  async function followReservation(handle: DbOrTx, entry: KeyEntry, closed: ReservationClosed): Promise<void> {
    const inProgress = and(entryOf(entry), eq(gatewayIdempotency.status, 'IN_PROGRESS'));
    if (closed === 'RELEASED') await handle.delete(gatewayIdempotency).where(inProgress);
    else await handle.update(gatewayIdempotency).set({ status: 'CHARGED' }).where(inProgress);
  }

  /**
   * How an entry still in progress was left, judged by its reservation when the sweeper could not (a reservation that
   * does not name its key, e.g. a job's, reserved by its runner): null while its request may still finish it. One that
   * never reserved anything within the grace was left by a crash before the reservation, and is freed like a refund.
   */
  async function closedReservation(entry: { requestId: string; createdAt: Date }, now: Date): Promise<ReservationClosed | 'SWEPT' | null> {
    const status = await deps.reservationStatus(entry.requestId);
    if (status === 'SETTLED' || status === 'RELEASED') return status;
    // Its process died or stalled past the lease: closed here rather than at the next sweep, the key following it.
    if (status !== null) return (await deps.sweepReservation?.(entry.requestId, { abandoned: false })) ? 'SWEPT' : null;
    return now.getTime() - entry.createdAt.getTime() > UNRESERVED_GRACE_MS ? 'RELEASED' : null;
  }

  async function abandon(entry: KeyEntry): Promise<void> {
    await db.delete(gatewayIdempotency).where(and(entryOf(entry), eq(gatewayIdempotency.status, 'IN_PROGRESS')));
  }

  return {
    async begin(input: { userId: string; key: string; route: string; body: unknown }): Promise<IdempotencyBegin> {
      const bodyHash = createHash('sha256')
        .update(`${input.route}\n${canonical(input.body)}`)
        .digest('hex');
      for (let attempt = 0; attempt < 3; attempt++) {
        const now = clock.now();
        const requestId = newId();
        const [created] = await db
          .insert(gatewayIdempotency)
          .values({
            userId: input.userId,
            key: input.key,
            route: input.route,
            bodyHash,
            requestId,
            createdAt: now,
            expiresAt: new Date(now.getTime() + IDEMPOTENCY_RETENTION_MS),
          })
          .onConflictDoNothing({ target: [gatewayIdempotency.userId, gatewayIdempotency.key] })
          .returning({ requestId: gatewayIdempotency.requestId });
        if (created) return { kind: 'new', requestId: created.requestId };

        const [existing] = await db
          .select()
          .from(gatewayIdempotency)
          .where(and(eq(gatewayIdempotency.userId, input.userId), eq(gatewayIdempotency.key, input.key)));
        if (!existing) continue; // released in between: try to take it again
        if (existing.expiresAt <= now) {
          await db.delete(gatewayIdempotency).where(and(eq(gatewayIdempotency.id, existing.id), eq(gatewayIdempotency.status, existing.status)));
          continue;
        }
        const closed = existing.status === 'IN_PROGRESS' ? await closedReservation(existing, now) : null;
        if (closed === 'SWEPT') continue; // the key followed the sweep: read it again
        if (closed) {
          await followReservation(db, existing, closed);
          if (closed === 'RELEASED') continue;
          existing.status = 'CHARGED';
        }
        if (existing.route !== input.route || existing.bodyHash !== bodyHash) {
          throw conflict(
            'This Idempotency-Key was already used with a different request. Send the same body to get the first answer again, or use a new key for a new request.',
            { idempotencyKey: input.key },
          );
        }
        if (existing.status === 'IN_PROGRESS') {
          throw conflict('A request with this Idempotency-Key is still running. Retry once it has finished to get its answer.', { idempotencyKey: input.key });
        }
        if (existing.status === 'CHARGED' || !existing.response) {
          throw conflict(
            'The request with this Idempotency-Key was charged, but its answer is not stored (it is being sent, or the server stopped before sending it). Its result is in GET /v1/usage; use a new key to generate again.',
            { idempotencyKey: input.key, requestId: existing.requestId },
          );
        }
        return { kind: 'replay', requestId: existing.requestId, status: existing.responseStatus ?? 200, response: existing.response ?? {} };
      }
      throw conflict('This Idempotency-Key is being used by another request right now. Retry in a moment.', { idempotencyKey: input.key });
    },

    /**
     * What the settlement of a charge writes to the key, in its transaction or combined statement: the answer when it
     * is known then (COMPLETED), else CHARGED, after which the key can never be freed.
     */
    chargeQuery(entry: KeyEntry, response: Record<string, unknown> | null, tx: DbOrTx = db) {
      return response
        ? tx.update(gatewayIdempotency).set({ status: 'COMPLETED', responseStatus: 200, response, completedAt: clock.now() }).where(entryOf(entry))
        : tx
            .update(gatewayIdempotency)
            .set({ status: 'CHARGED' })
            .where(and(entryOf(entry), eq(gatewayIdempotency.status, 'IN_PROGRESS')));
    },

    /** Stores the answer of a call whose charge did not carry it (it was only known afterwards). */
    async complete(entry: KeyEntry, status: number, response: Record<string, unknown>): Promise<void> {
      await db.update(gatewayIdempotency).set({ status: 'COMPLETED', responseStatus: status, response, completedAt: clock.now() }).where(entryOf(entry));
    },

    /**
     * Stores the answer in `tx`, the transaction that commits what it names (a queued job's handle), so a retry after a
     * crash replays it rather than queueing again. False when the key is no longer this request's in progress (a retry
     * took it over): the caller must then roll `tx` back.
     */
    async completeIn(entry: KeyEntry, response: Record<string, unknown>, tx: DbOrTx): Promise<boolean> {
      const inProgress = and(entryOf(entry), eq(gatewayIdempotency.status, 'IN_PROGRESS'));
      const set = { status: 'COMPLETED' as const, responseStatus: 200, response, completedAt: clock.now() };
      return (await tx.update(gatewayIdempotency).set(set).where(inProgress).returning({ id: gatewayIdempotency.id })).length > 0;
    },

    /** Frees the key after a failed call (nothing was charged), so the client may retry with it. */
    abandon,

    /**
     * The request failed, or its stream broke: the key follows its reservation. Freed when nothing was reserved or the
     * reservation was refunded; marked CHARGED when it was settled; when it is still open (its settlement or refund
     * could not be written, e.g. the database connection was lost) it is closed now as the sweeper would, the key
     * following in that transaction. When even that cannot be written the key stays in progress, and a retry closes
     * the reservation once its lease has lapsed (see `begin`).
     */
    async giveUp(entry: KeyEntry): Promise<void> {
      const status = await deps.reservationStatus(entry.requestId);
      if (status === null) await abandon(entry);
      else if (status === 'SETTLED' || status === 'RELEASED') await followReservation(db, entry, status);
      else await deps.sweepReservation?.(entry.requestId, { abandoned: true });
    },

    /** The sweeper closed the reservation of a request that died holding the key, in `tx`: the key follows it. */
    followReservation,

    async purgeExpired(): Promise<number> {
      const deleted = await db.delete(gatewayIdempotency).where(lt(gatewayIdempotency.expiresAt, clock.now())).returning({ id: gatewayIdempotency.id });
      return deleted.length;
    },
  };
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>;
