import { bound } from '../../platform/db/bound.js';
import type { Tx } from '../../platform/db/database.js';
import { StatementConditionFailed, writeAsOneStatement, type StatementPart } from '../../platform/db/one-statement.js';
import { generationOf, usageOf } from './metering-records.js';
import type { CountCall, Metered, MeteringDeps, SettleCall, Settled } from './metering-types.js';

type SettleDeps = Pick<MeteringDeps, 'db' | 'wallet' | 'usage' | 'library' | 'keys'>;

/** The general settlement, statement by statement inside `tx`. */
export async function settleIn(deps: SettleDeps, counted: CountCall, tx: Tx, m: Metered, call: SettleCall): Promise<Settled> {
  const { lateTokens, ...settled } = await deps.wallet.settle({ requestId: m.requestId, actualTokens: call.chargeTokens, delivered: call.delivered }, tx);
  if (m.keyBudget) await deps.keys?.settleBudget(tx, m.requestId, settled.chargedTokens);
  if (lateTokens !== undefined) {
    // The sweeper closed the call's key hold and wrote its usage record; the late charge counts and records anew.
    if (m.keyBudget && m.apiKeyId) await deps.keys?.spendLate(tx, m.apiKeyId, lateTokens);
    await deps.usage.dropSwept(m.requestId, tx);
  }
  await deps.usage.record(usageOf(m, call, settled), tx);
  const generationId = call.generation ? (await deps.library.saveGeneration(generationOf(m, call.generation), tx)).id : null;
  const scope = m.key;
  if (scope) await tx.execute(scope.chargeQuery(call.response ? call.response(settled) : null, tx).getSQL());
  counted(m, call.status.toLowerCase());
  return { generationId, ...settled };
}

/**
 * Charges a delivered generation in ONE statement (the hot path): the reservation settled within its tokens, the
 * usage record, the library item with its `generation.persisted` event and the Idempotency-Key's completion commit
 * together. What that shortcut does not cover (a call that ran over its reservation, a debt to collect, a request
 * settled already) goes the general way, in one transaction. Exactly once by the request id either way.
 */
export async function settleNow(deps: SettleDeps, counted: CountCall, m: Metered, call: SettleCall): Promise<Settled> {
  const settlement = deps.wallet.settlementParts({ requestId: m.requestId, actualTokens: call.chargeTokens, owner: m.walletOwner });
  const settled = { chargedTokens: call.chargeTokens, shortfallTokens: 0 };
  const parts: StatementPart[] = [...settlement.parts, { name: 'usage_record', query: deps.usage.recordPart(usageOf(m, call, settled)) }];
  if (m.keyBudget && deps.keys) parts.push(...deps.keys.budgetSettlementParts(m.requestId, call.chargeTokens));
  let generationId: string | null = null;
  if (call.generation) {
    const item = await deps.library.saveGenerationParts(generationOf(m, call.generation));
    generationId = item.id;
    parts.push(...item.parts);
  }
  const scope = m.key;
  const response = scope && call.response ? call.response(settled) : null;
  if (scope) parts.push({ name: 'idempotency_key', query: scope.chargeQuery(response) });
  let written: Record<string, unknown>;
  try {
    written = await writeAsOneStatement(deps.db, parts, {
      condition: { holds: settlement.closed, message: settlement.message },
      select: bound(`${settlement.unused} as unused, ${settlement.after}`, []),
      // Shares a commit with concurrent settlements, unless it also closes a key's budget (a second locked row).
      group: m.keyBudget ? undefined : settlement.group,
    });
  } catch (err) {
    if (!(err instanceof StatementConditionFailed)) throw err;
    return deps.db.transaction((tx) => settleIn(deps, counted, tx, m, call));
  }
  settlement.committed(written);
  counted(m, call.status.toLowerCase());
  scope?.committed(response);
  return { generationId, ...settled };
}
