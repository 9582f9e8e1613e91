import type { FastifyBaseLogger } from 'fastify';
import { AppError } from '../../../platform/http/errors.js';
import { upstreamToAppError } from './upstream-errors.js';

/** Every account of the provider failed with a retryable error: the one outcome a fallback model may answer. */
const providerDown = (err: unknown): boolean => err instanceof AppError && err.code === 'PROVIDER_UNAVAILABLE';

/** The model the caller asked for, when a fallback serves the call instead, and the error that moved it. */
export interface FallbackFrom {
  model: string;
  error: unknown;
}

/** What the usage record of a call says when a fallback served it. */
export const fallbackMetadata = (from: FallbackFrom | undefined) =>
  from ? { fallbackFrom: from.model, fallbackReason: upstreamToAppError(from.error, from.model).message } : {};

/** One metered call and the operator's fallback models for it; `P` is the call as prepared for one model. */
export interface FallbackLoop<P, T> {
  /** The call checked and reserved on the model the caller asked for. */
  first: P;
  /** The fallback models of that model, in the operator's order (none when fallbacks are not configured). */
  fallbackIds: () => Promise<readonly string[]>;
  /** The upstream call on `p`'s model. */
  attempt: (p: P) => Promise<T>;
  /**
   * The call moved from `p` to a fallback model: checked for the caller and its reservation raised. Null when the
   * model is gone; an AppError when this fallback cannot take the call. Either way it is skipped.
   */
  switchTo: (p: P, fallbackId: string, firstError: unknown) => Promise<P | null>;
  /** Refunds the call that failed on `p`; answers the error to throw. */
  fail: (p: P, err: unknown) => Promise<unknown>;
  /** Where a fallback that cannot take the call is noted (at info), and in which words. */
  skipped: { logger: Pick<FastifyBaseLogger, 'info'>; requestId: string; message: string };
}

/**
 * Runs the call on its model; when every account of its provider fails with a retryable error, on its fallback
 * models in order. Any other error, or the last fallback failing, fails the call (on the model it last ran on) and
 * throws. An error that is not an AppError while switching is a fault of ours: it propagates as it is.
 */
export async function runWithFallbacks<P, T>(loop: FallbackLoop<P, T>): Promise<{ p: P; value: T }> {
  try {
    return { p: loop.first, value: await loop.attempt(loop.first) };
  } catch (err) {
    return fallBack(loop, err);
  }
}

/** The call failed on its first model with `firstError`: the rest of `runWithFallbacks`, for a caller that made the first attempt itself. */
export async function fallBack<P, T>(loop: FallbackLoop<P, T>, firstError: unknown): Promise<{ p: P; value: T }> {
  let p = loop.first;
  let lastError = firstError;
  if (providerDown(firstError)) {
    for (const fallbackId of await loop.fallbackIds()) {
      const next = await switchOrSkip(loop, p, fallbackId, firstError);
      if (!next) continue;
      p = next;
      try {
        return { p, value: await loop.attempt(p) };
      } catch (err) {
        lastError = err;
        if (!providerDown(err)) break;
      }
    }
  }
  throw await loop.fail(p, lastError);
}

async function switchOrSkip<P, T>(loop: FallbackLoop<P, T>, p: P, fallbackId: string, firstError: unknown): Promise<P | null> {
  try {
    return await loop.switchTo(p, fallbackId, firstError);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    const { logger, requestId, message } = loop.skipped;
    logger.info({ requestId, fallback: fallbackId, code: err.code }, message);
    return null;
  }
}
