import type { Principal } from '../../platform/auth/plugin.js';
import type { Tx } from '../../platform/db/database.js';
import type { Access } from './access.js';
import { baseRecord } from './metering-records.js';
import type { Metered, MeteringDeps, ModelRef, ReserveCall } from './metering-types.js';

/**
 * Holds the call's tokens once its plan checks were made, with the key's budget when it has one (both in one
 * transaction) and what the sweeper needs to record the call if this process dies.
 */
export async function reserveChecked(
  deps: Pick<MeteringDeps, 'db' | 'wallet' | 'keys'>,
  caller: Pick<Principal, 'userId' | 'apiKeyId' | 'keyControls'>,
  access: Pick<Access, 'owner'> & { subscriptionId: string | null },
  call: ReserveCall,
  tx?: Tx,
): Promise<Metered> {
  const { wallet } = deps;
  const metered: Metered = {
    userId: caller.userId,
    subscriptionId: access.subscriptionId,
    apiKeyId: caller.apiKeyId,
    model: call.model,
    requestId: call.requestId,
    jobId: call.jobId ?? null,
    operation: call.operation,
    reservedTokens: call.tokens,
    started: call.started ?? performance.now(),
    walletOwner: access.owner,
    key: call.key ?? null,
  };
  // A job's caller carries only the key id: its controls are read then (a request's principal has them already).
  const controls = caller.keyControls !== undefined || !caller.apiKeyId || !deps.keys ? caller.keyControls : await deps.keys.controlsById(caller.apiKeyId);
  const budget = caller.apiKeyId && deps.keys ? (controls?.budget ?? null) : null;
  metered.keyBudget = budget !== null;
  const context = Object.assign(
    baseRecord(metered),
    { apiKeyId: metered.apiKeyId, modelSlug: call.model.slug },
    budget ? { keyBudget: true } : {},
    metered.key ? { idempotencyKey: metered.key.idempotencyKey } : {},
  );
  const reserve = (handle?: Tx) =>
    wallet.reserve(
      {
        tokens: call.tokens,
        requestId: call.requestId,
        note: `${call.operation} ${call.model.slug}`,
        context,
        leaseSeconds: call.leaseSeconds,
        ...access.owner,
      },
      handle,
    );
  if (!budget) {
    await reserve(tx);
    return metered;
  }
  // The key's budget is held in the reservation's transaction: both or neither.
  const hold = { apiKeyId: caller.apiKeyId!, requestId: call.requestId, tokens: call.tokens, budget };
  const both = async (t: Tx) => {
    await deps.keys!.holdBudget(t, hold);
    await reserve(t);
  };
  await (tx ? both(tx) : deps.db.transaction(both));
  return metered;
}

/**
 * The call moves to another model (a fallback, its provider being down): the reservation and the key's budget
 * hold are raised to `tokens` when the new model needs more (429 QUOTA_EXCEEDED / KEY_BUDGET_EXCEEDED when they
 * cannot), in one transaction; a cheaper model keeps the larger hold, and the settlement refunds what is unused.
 */
export async function switchModel(
  deps: Pick<MeteringDeps, 'db' | 'wallet' | 'keys'>,
  caller: Pick<Principal, 'keyControls'>,
  m: Metered,
  model: ModelRef,
  tokens: number,
): Promise<Metered> {
  const held = m.reservedTokens ?? 0;
  if (tokens > held) {
    const budget = caller.keyControls?.budget;
    await deps.db.transaction(async (tx) => {
      if (m.keyBudget && budget && m.apiKeyId) await deps.keys?.growBudgetHold(tx, { apiKeyId: m.apiKeyId, requestId: m.requestId, tokens, budget });
      await deps.wallet.grow({ requestId: m.requestId, tokens, note: `${m.operation} ${model.slug} (fallback)` }, tx);
    });
  }
  return Object.assign({}, m, { model, reservedTokens: Math.max(tokens, held) });
}
