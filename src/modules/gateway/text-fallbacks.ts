import type { Principal } from '../../platform/auth/plugin.js';
import { AppError } from '../../platform/http/errors.js';
import type { GatewayModel } from '../catalog/service.js';
import { fail } from './text-billing.js';
import type { Prepared, Sizing, TextCall, TextGatewayDeps } from './text-types.js';

/** Checks and sizes a call for one model (the text gateway's `size`). */
type SizeCall = (principal: Principal, call: TextCall, model: GatewayModel) => Promise<Sizing>;

/** Every account of the provider failed with a retryable error: the one outcome a fallback model may answer. */
const providerDown = (err: unknown) => err instanceof AppError && err.code === 'PROVIDER_UNAVAILABLE';

/**
 * The call moved to a fallback model: checked and sized for it (the caller's plan and key must allow it), its
 * reservation raised when the fallback costs more. Null when this fallback cannot take the call (skip it).
 */
async function switchTo(deps: TextGatewayDeps, size: SizeCall, p: Prepared, fallbackId: string, error: unknown): Promise<Prepared | null> {
  const { catalog, metering, logger } = deps;
  try {
    const entry = await catalog.getById(fallbackId);
    if (!entry) return null;
    const sized = await size(p.principal, p.call, await catalog.resolveForGateway(entry.row.slug));
    const metered = await metering.switchModel(p.principal, p.metered, sized.model, sized.reservedTokens);
    return Object.assign({}, p, sized, { reservedTokens: metered.reservedTokens ?? sized.reservedTokens, metered, fallbackFrom: p.fallbackFrom ?? { model: p.model.slug, error } });
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    logger.info({ requestId: p.requestId, fallback: fallbackId, code: err.code }, 'fallback model cannot take the call; trying the next');
    return null;
  }
}

/**
 * Runs `attempt` on the call's model; when every account of its provider fails with a retryable error, on the
 * model's fallbacks in the operator's order (those the caller's plan and key allow). Anything else, or the last
 * fallback failing, refunds the call and throws.
 */
export async function withFallbacks<T>(deps: TextGatewayDeps, size: SizeCall, first: Prepared, attempt: (p: Prepared) => Promise<T>): Promise<{ p: Prepared; value: T }> {
  let p = first;
  try {
    return { p, value: await attempt(p) };
  } catch (err) {
    if (!providerDown(err) || !deps.fallbacks) throw await fail(deps, p, err);
    let lastError: unknown = err;
    for (const fallbackId of await deps.fallbacks.idsOf(first.model.id)) {
      const next = await switchTo(deps, size, p, fallbackId, err);
      if (!next) continue;
      p = next;
      try {
        return { p, value: await attempt(p) };
      } catch (fallbackError) {
        lastError = fallbackError;
        if (!providerDown(fallbackError)) break;
      }
    }
    throw await fail(deps, p, lastError);
  }
}
