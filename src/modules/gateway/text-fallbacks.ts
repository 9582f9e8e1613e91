import type { Principal } from '../../platform/auth/plugin.js';
import type { GatewayModel } from '../catalog/service.js';
import { runWithFallbacks } from './fallback-loop.js';
import { fail } from './text-billing.js';
import type { Prepared, Sizing, TextCall, TextGatewayDeps } from './text-types.js';

/** Checks and sizes a call for one model (the text gateway's `size`). */
type SizeCall = (principal: Principal, call: TextCall, model: GatewayModel) => Promise<Sizing>;

/**
 * The call moved to a fallback model: checked and sized for it (the caller's plan and key must allow it), its
 * reservation raised when the fallback costs more. Null when the fallback model no longer exists.
 */
async function switchTo(deps: TextGatewayDeps, size: SizeCall, p: Prepared, fallbackId: string, error: unknown): Promise<Prepared | null> {
  const { catalog, metering } = deps;
  const entry = await catalog.getById(fallbackId);
  if (!entry) return null;
  const sized = await size(p.principal, p.call, await catalog.resolveForGateway(entry.row.slug));
  const metered = await metering.switchModel(p.principal, p.metered, sized.model, sized.reservedTokens);
  p.span.fellBack(sized.model.slug, sized.model.providerSlug);
  return Object.assign({}, p, sized, {
    reservedTokens: metered.reservedTokens ?? sized.reservedTokens,
    metered,
    fallbackFrom: p.fallbackFrom ?? { model: p.model.slug, error },
  });
}

/**
 * Runs `attempt` on the call's model; when every account of its provider fails with a retryable error, on the
 * model's fallbacks in the operator's order (those the caller's plan and key allow). Anything else, or the last
 * fallback failing, refunds the call and throws.
 */
export function withFallbacks<T>(
  deps: TextGatewayDeps,
  size: SizeCall,
  first: Prepared,
  attempt: (p: Prepared) => Promise<T>,
): Promise<{ p: Prepared; value: T }> {
  return runWithFallbacks({
    first,
    fallbackIds: async () => (deps.fallbacks ? deps.fallbacks.idsOf(first.model.id) : []),
    attempt,
    switchTo: (p, fallbackId, firstError) => switchTo(deps, size, p, fallbackId, firstError),
    fail: (p, err) => fail(deps, p, err),
    skipped: { logger: deps.logger, requestId: first.requestId, message: 'fallback model cannot take the call; trying the next' },
  });
}
