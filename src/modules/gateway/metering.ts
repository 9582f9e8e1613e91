import type { Principal } from '../../platform/auth/plugin.js';
import type { Tx } from '../../platform/db/database.js';
import type { AppError } from '../../platform/http/errors.js';
import { metricsOrPrivate } from '../../platform/metrics/metrics.js';
import type { GatewayModel } from '../catalog/service.js';
import type { SweptReservation } from '../wallet/service.js';
import { checkAccess, type Access } from './access.js';
import { baseRecord, commonMetadata, isTimeout, latency } from './metering-records.js';
import { reserveChecked, switchModel } from './metering-reserve.js';
import { settleIn, settleNow } from './metering-settle.js';
import { recordSwept } from './metering-swept.js';
import { settleRetrying } from './settle-retry.js';
import type { Metered, MeteringDeps, ModelRef, ReserveCall, SettleCall, Settled } from './metering-types.js';

/**
 * The metering pipeline every gateway call goes through (see `MeteringDeps`): the API of the parts in
 * metering-reserve.ts, metering-settle.ts and metering-swept.ts, with the calls counter they share.
 */
export function createMetering(deps: MeteringDeps) {
  const { wallet, usage } = deps;
  const stillOpen = async (requestId: string) => ['OPEN', 'IN_FLIGHT'].includes((await wallet.reservation(requestId))?.status ?? '');
  const calls = metricsOrPrivate(deps.metrics).counter({
    name: 'storefront_gateway_calls_total',
    help: 'Metered gateway calls by provider, model, operation and outcome (success, partial, or the error code of a refunded call)',
    labelNames: ['provider', 'model', 'operation', 'outcome'],
  });
  const counted = (m: Metered, outcome: string) =>
    calls.inc({ provider: m.model.providerSlug ?? m.model.slug.split('/')[0]!, model: m.model.slug, operation: m.operation, outcome });

  return {
    /** The plan checks in the spec's order: an active plan, API access for keys, the model in the plan. */
    access: (principal: Principal, model: GatewayModel) => checkAccess(deps, principal, model),

    /**
     * Holds the call's tokens (429 QUOTA_EXCEEDED when the wallet is short), after the plan checks unless the caller
     * made them already (`access`), with what the sweeper needs to record the call if this process dies.
     */
    async reserve(principal: Principal, call: ReserveCall & { model: GatewayModel }, options: { access?: Access; tx?: Tx } = {}): Promise<Metered> {
      const access = options.access ?? (await checkAccess(deps, principal, call.model));
      return reserveChecked(deps, principal, access, call, options.tx);
    },

    /** Holds the tokens of a call whose plan checks were made before (a job, checked when it was submitted). */
    reserveChecked: (
      caller: Pick<Principal, 'userId' | 'apiKeyId' | 'keyControls'>,
      access: Pick<Access, 'owner'> & { subscriptionId: string | null },
      call: ReserveCall,
      tx?: Tx,
    ): Promise<Metered> => reserveChecked(deps, caller, access, call, tx),

    /**
     * The call moves to another model (a fallback, its provider being down): the reservation and the key's budget
     * hold are raised to `tokens` when the new model needs more, in one transaction (see metering-reserve.ts).
     */
    switchModel: (caller: Pick<Principal, 'keyControls'>, m: Metered, model: ModelRef, tokens: number): Promise<Metered> =>
      switchModel(deps, caller, m, model, tokens),

    /**
     * The upstream answered: what it costs is recorded on the reservation first, so a crash before the settlement
     * commits is settled on it by the sweeper instead of refunded.
     */
    async answered(m: Metered, chargeTokens: number): Promise<void> {
      await wallet.markInFlight({ requestId: m.requestId, usedTokens: chargeTokens });
    },

    /**
     * Charges a delivered generation in ONE statement (the hot path), or the general way in one transaction when the
     * shortcut does not cover it; exactly once by the request id either way (see metering-settle.ts). Sent again for
     * a few seconds when it lost its database connection and the reservation is still open (settle-retry.ts).
     */
    settleNow: (m: Metered, call: SettleCall): Promise<Settled> =>
      settleRetrying(
        () => settleNow(deps, counted, m, call),
        () => stillOpen(m.requestId),
      ),

    /** Charges a delivered generation inside `tx` (a job ends with it), exactly once by its request id. */
    settle: (tx: Tx, m: Metered, call: SettleCall): Promise<Settled> => settleIn(deps, counted, tx, m, call),

    /** A call that delivered nothing: full refund and a FAILED (or TIMEOUT) usage record, inside `tx`. */
    async refund(tx: Tx, m: Metered, error: AppError, metadata: Record<string, unknown> = {}): Promise<void> {
      await wallet.release({ requestId: m.requestId, reason: `Refunded: ${error.code}` }, tx);
      counted(m, error.code.toLowerCase());
      if (m.keyBudget) await deps.keys?.settleBudget(tx, m.requestId, 0);
      await usage.record(
        Object.assign(baseRecord(m), {
          status: isTimeout(error) ? ('TIMEOUT' as const) : ('FAILED' as const),
          tokensConsumed: 0,
          latencyMs: latency(m),
          metadata: Object.assign(commonMetadata(m), { error: { code: error.code, message: error.message, details: error.details } }, metadata),
        }),
        tx,
      );
    },

    /**
     * The sweeper closed a reservation a dead process left open: its usage record, and the request's Idempotency-Key
     * follows the reservation (see metering-swept.ts).
     */
    recordSwept: (tx: Tx, swept: SweptReservation): Promise<void> => recordSwept(deps, tx, swept),
  };
}

export type Metering = ReturnType<typeof createMetering>;
