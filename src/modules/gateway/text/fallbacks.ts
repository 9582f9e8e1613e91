import { fallBack as fallBackFrom } from '../routing/fallback-loop.js';
import { size, usageMetadata } from './prepare.js';
import type { Prepared, TextGatewayDeps } from './types.js';

/**
 * The call failed on its model with `firstError`. When every account of its provider failed with a retryable error,
 * it runs on the model's fallbacks in the operator's order (those the caller's plan and key allow); anything else, or
 * the last fallback failing, refunds the call and throws.
 */
export function fallBack<T>(
  deps: TextGatewayDeps,
  first: Prepared,
  firstError: unknown,
  attempt: (p: Prepared) => Promise<T>,
): Promise<{ p: Prepared; value: T }> {
  return fallBackFrom(
    {
      first,
      fallbackIds: async () => (deps.fallbacks ? deps.fallbacks.idsOf(first.model.id) : []),
      attempt,
      switchTo: (p, fallbackId, error) => switchTo(deps, p, fallbackId, error),
      fail: (p, err) => fail(deps, p, err),
      skipped: { logger: deps.logger, requestId: first.requestId, message: 'fallback model cannot take the call; trying the next' },
    },
    firstError,
  );
}

/**
 * The call moved to a fallback model: checked and sized for it (the caller's plan and key must allow it), its
 * reservation raised when the fallback costs more. Null when the fallback model no longer exists.
 */
async function switchTo(deps: TextGatewayDeps, p: Prepared, fallbackId: string, error: unknown): Promise<Prepared | null> {
  const { catalog, metering } = deps;
  const entry = await catalog.getById(fallbackId);
  if (!entry) return null;
  const sized = await size(deps, p.principal, p.call, await catalog.resolveForGateway(entry.row.slug));
  const metered = await metering.switchModel(p.principal, p.metered, sized.model, sized.reservedTokens);
  p.span.fellBack(sized.model.slug, sized.model.providerSlug);
  return Object.assign({}, p, sized, {
    reservedTokens: metered.reservedTokens ?? sized.reservedTokens,
    metered,
    fallbackFrom: p.fallbackFrom ?? { model: p.model.slug, error },
  });
}

/** A call that produced nothing billable: full refund and a FAILED (or TIMEOUT) usage record; answers the error to throw. */
export function fail(deps: TextGatewayDeps, p: Prepared, err: unknown): Promise<unknown> {
  p.span.failed(err);
  return deps.metering.refundFailed(
    { metered: p.metered, modelSlug: p.model.slug, metadata: usageMetadata(p, {}), internalMessage: 'The generation failed on our side.' },
    err,
  );
}
