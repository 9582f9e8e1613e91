import type { Principal } from '../../../platform/auth/plugin.js';
import { bound } from '../../../platform/db/bound.js';
import { isConnectionLost } from '../../../platform/db/connection-lost.js';
import type { Tx } from '../../../platform/db/database.js';
import { StatementConditionFailed, writeAsOneStatement, type StatementPart } from '../../../platform/db/one-statement.js';
import { AppError } from '../../../platform/http/errors.js';
import { metricsOrPrivate } from '../../../platform/metrics/metrics.js';
import type { GatewayModel } from '../../catalog/service.js';
import { UpstreamError } from '../providers/types.js';
import { upstreamToAppError } from '../routing/upstream-errors.js';
import { checkAccess, type Access } from './access.js';
import type { Metered, MeteringDeps, ModelRef, ReserveCall, SettleCall, Settled } from './types.js';

/**
 * The metering every gateway call goes through (see `MeteringDeps`), top to bottom: reserve the call's tokens, then,
 * once the caller ran the upstream, settle (the charge, the usage record, the library item, the Idempotency-Key) or
 * refund. A reservation a dead process left is closed by the wallet's sweeper, which records it through swept.ts.
 */
export function createMetering(deps: MeteringDeps) {
  const { db, wallet, usage, library, keys } = deps;
  const calls = metricsOrPrivate(deps.metrics).counter({
    name: 'storefront_gateway_calls_total',
    help: 'Metered gateway calls by provider, model, operation and outcome (success, partial, or the error code of a refunded call)',
    labelNames: ['provider', 'model', 'operation', 'outcome'],
  });
  const counted = (m: Metered, outcome: string) =>
    calls.inc({ provider: m.model.providerSlug ?? m.model.slug.split('/')[0]!, model: m.model.slug, operation: m.operation, outcome });

  /**
   * Holds the call's tokens once its plan checks were made (a job's when it was submitted), with the key's budget when
   * it has one (both in one transaction) and what the sweeper needs to record the call if this process dies.
   */
  async function reserveChecked(
    caller: Pick<Principal, 'userId' | 'apiKeyId' | 'keyControls'>,
    access: Pick<Access, 'owner'> & { subscriptionId: string | null },
    call: ReserveCall,
    tx?: Tx,
  ): Promise<Metered> {
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
    const controls = caller.keyControls !== undefined || !caller.apiKeyId || !keys ? caller.keyControls : await keys.controlsById(caller.apiKeyId);
    const budget = caller.apiKeyId && keys ? (controls?.budget ?? null) : null;
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
      await keys!.holdBudget(t, hold);
      await reserve(t);
    };
    await (tx ? both(tx) : db.transaction(both));
    return metered;
  }

  /**
   * Charges a delivered generation in ONE statement (the hot path): the reservation settled within its tokens, the
   * usage record, the library item with its `generation.persisted` event and the Idempotency-Key's completion commit
   * together. What that shortcut does not cover (a call that ran over its reservation, a debt to collect, a request
   * settled already) goes the general way, in one transaction. Exactly once by the request id either way.
   */
  async function settleInOneStatement<A extends Record<string, unknown>>(m: Metered, call: SettleCall<A>): Promise<Settled<A>> {
    const settlement = wallet.settlementParts({ requestId: m.requestId, actualTokens: call.chargeTokens, owner: m.walletOwner });
    const settled = { chargedTokens: call.chargeTokens, shortfallTokens: 0 };
    const parts: StatementPart[] = [...settlement.parts, { name: 'usage_record', query: usage.recordPart(usageOf(m, call, settled)) }];
    if (m.keyBudget && keys) parts.push(...keys.budgetSettlementParts(m.requestId, call.chargeTokens));
    let generationId: string | null = null;
    if (call.generation) {
      const item = await library.saveGenerationParts(generationOf(m, call.generation));
      generationId = item.id;
      parts.push(...item.parts);
    }
    const answer = call.answer ? call.answer(settled) : null;
    if (m.key) parts.push({ name: 'idempotency_key', query: m.key.chargeQuery(answer) });
    let written: Record<string, unknown>;
    try {
      written = await writeAsOneStatement(db, parts, {
        condition: { holds: settlement.closed, message: settlement.message },
        select: bound(`${settlement.unused} as unused, ${settlement.after}`, []),
        // Shares a commit with concurrent settlements, unless it also closes a key's budget (a second locked row).
        group: m.keyBudget ? undefined : settlement.group,
      });
    } catch (err) {
      if (!(err instanceof StatementConditionFailed)) throw err;
      return db.transaction((tx) => settleIn(tx, m, call));
    }
    settlement.committed(written);
    counted(m, call.status.toLowerCase());
    m.key?.committed(answer);
    return { generationId, chargedTokens: settled.chargedTokens, shortfallTokens: 0, answer };
  }

  /** The general settlement, statement by statement inside `tx` (a job ends with it); exactly once by the request id. */
  async function settleIn<A extends Record<string, unknown>>(tx: Tx, m: Metered, call: SettleCall<A>): Promise<Settled<A>> {
    const { lateTokens, ...settled } = await wallet.settle({ requestId: m.requestId, actualTokens: call.chargeTokens, delivered: call.delivered }, tx);
    if (m.keyBudget) await keys?.settleBudget(tx, m.requestId, settled.chargedTokens);
    if (lateTokens !== undefined) {
      // The sweeper closed the call's key hold and wrote its usage record; the late charge counts and records anew.
      if (m.keyBudget && m.apiKeyId) await keys?.spendLate(tx, m.apiKeyId, lateTokens);
      await usage.dropSwept(m.requestId, tx);
    }
    await usage.record(usageOf(m, call, settled), tx);
    const generationId = call.generation ? (await library.saveGeneration(generationOf(m, call.generation), tx)).id : null;
    // Built on what was charged, which may be less than asked (an overrun capped at the balance).
    const answer = call.answer ? call.answer(settled) : null;
    if (m.key) await tx.execute(m.key.chargeQuery(answer, tx).getSQL());
    counted(m, call.status.toLowerCase());
    return { generationId, chargedTokens: settled.chargedTokens, shortfallTokens: settled.shortfallTokens, answer };
  }

  /** A call that delivered nothing: full refund and a FAILED (or TIMEOUT) usage record, inside `tx`. */
  async function refund(tx: Tx, m: Metered, error: AppError, metadata: Record<string, unknown> = {}): Promise<void> {
    await wallet.release({ requestId: m.requestId, reason: `Refunded: ${error.code}` }, tx);
    counted(m, error.code.toLowerCase());
    if (m.keyBudget) await keys?.settleBudget(tx, m.requestId, 0);
    await usage.record(
      Object.assign(baseRecord(m), {
        status: isTimeout(error) ? ('TIMEOUT' as const) : ('FAILED' as const),
        tokensConsumed: 0,
        latencyMs: latency(m),
        metadata: Object.assign(commonMetadata(m), { error: { code: error.code, message: error.message, details: error.details } }, metadata),
      }),
      tx,
    );
  }

  return {
    /**
     * Holds the call's tokens (429 QUOTA_EXCEEDED when the wallet is short), after the plan checks unless the caller
     * made them already (`access`), with what the sweeper needs to record the call if this process dies.
     */
    async reserve(principal: Principal, call: ReserveCall & { model: GatewayModel }, options: { access?: Access; tx?: Tx } = {}): Promise<Metered> {
      const access = options.access ?? (await checkAccess(deps, principal, call.model));
      return reserveChecked(principal, access, call, options.tx);
    },

    reserveChecked,

    /**
     * The call moves to another model (a fallback, its provider being down): the reservation and the key's budget
     * hold are raised to `tokens` when the new model needs more (429 QUOTA_EXCEEDED / KEY_BUDGET_EXCEEDED when they
     * cannot), in one transaction; a cheaper model keeps the larger hold, and the settlement refunds what is unused.
     */
    async switchModel(caller: Pick<Principal, 'keyControls'>, m: Metered, model: ModelRef, tokens: number): Promise<Metered> {
      const held = m.reservedTokens ?? 0;
      if (tokens > held) {
        const budget = caller.keyControls?.budget;
        await db.transaction(async (tx) => {
          if (m.keyBudget && budget && m.apiKeyId) await keys?.growBudgetHold(tx, { apiKeyId: m.apiKeyId, requestId: m.requestId, tokens, budget });
          await wallet.grow({ requestId: m.requestId, tokens, note: `${m.operation} ${model.slug} (fallback)` }, tx);
        });
      }
      return Object.assign({}, m, { model, reservedTokens: Math.max(tokens, held) });
    },

    /**
     * The upstream answered: what it costs is recorded on the reservation first, so a crash before the settlement
     * commits is settled on it by the sweeper instead of refunded.
     */
    async answered(m: Metered, chargeTokens: number): Promise<void> {
      await wallet.markInFlight({ requestId: m.requestId, usedTokens: chargeTokens });
    },

    /**
     * Charges a delivered generation, in one statement when it can (`settleInOneStatement`). Sent again for a few seconds
     * when it lost its database connection and the reservation is still open.
     */
    settleNow: <A extends Record<string, unknown>>(m: Metered, call: SettleCall<A>): Promise<Settled<A>> =>
      settleRetrying(
        () => settleInOneStatement(m, call),
        async () => ['OPEN', 'IN_FLIGHT'].includes((await wallet.reservation(m.requestId))?.status ?? ''),
      ),

    settle: settleIn,

    refund,

    /**
     * Refunds a call that failed (in its own transaction) and answers the error to throw: an upstream outcome as the
     * spec's answer; anything else as it is, recorded as a 500 with `internalMessage`.
     */
    async refundFailed(
      call: { metered: Metered; modelSlug: string; metadata: Record<string, unknown>; internalMessage: string },
      err: unknown,
    ): Promise<unknown> {
      // Upstream outcomes become the spec's answers; anything else is our own failure (500, details logged only).
      const known = err instanceof UpstreamError || err instanceof AppError;
      const appError = known ? upstreamToAppError(err, call.modelSlug) : new AppError(500, 'INTERNAL', call.internalMessage);
      try {
        await db.transaction((tx) => refund(tx, call.metered, appError, call.metadata));
      } catch (releaseError) {
        // The sweeper refunds an open reservation later; the caller still gets the real error.
        deps.logger.error({ err: releaseError, requestId: call.metered.requestId }, 'releasing a failed reservation failed');
      }
      return known ? appError : err;
    },
  };
}

export type Metering = ReturnType<typeof createMetering>;

/** Pauses before each new attempt of a settlement that lost its database connection: about 3 s in all. */
const SETTLE_RETRY_DELAYS_MS = [200, 400, 800, 1600];

/**
 * Runs `settle` again when it failed on a lost database connection (a terminated backend, a reset socket): a new
 * connection usually works at once, and the call is then answered instead of failed. Only while the reservation is
 * still open: once it is closed the lost attempt committed (the charge is done, and the Idempotency-Key completed with
 * it) or the sweeper closed it, and the error is answered as it is. Any other error is thrown at once.
 */
async function settleRetrying<T>(settle: () => Promise<T>, reservationOpen: () => Promise<boolean>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await settle();
    } catch (err) {
      if (!isConnectionLost(err) || attempt >= SETTLE_RETRY_DELAYS_MS.length) throw err;
      await new Promise((resolve) => setTimeout(resolve, SETTLE_RETRY_DELAYS_MS[attempt]));
      // Unknown while the database is still away: try again, the settlement itself finds out.
      if (!(await reservationOpen().catch(() => true))) throw err;
    }
  }
}

/** The facts every usage record of the call carries (also stored in the reservation's context for the sweeper). */
export const baseRecord = (m: Metered) => ({
  userId: m.userId,
  subscriptionId: m.subscriptionId,
  modelId: m.model.id,
  providerId: m.model.providerId,
  jobId: m.jobId,
  requestId: m.requestId,
  operation: m.operation,
  apiKeyId: m.apiKeyId,
});

const latency = (m: Metered) => Math.round(performance.now() - m.started);

const commonMetadata = (m: Metered) => ({
  modelSlug: m.model.slug,
  ...(m.reservedTokens !== null ? { reservedTokens: m.reservedTokens } : {}),
  ...(m.apiKeyId ? { apiKeyId: m.apiKeyId } : {}),
});

const usageOf = (m: Metered, call: SettleCall, settled: { chargedTokens: number; shortfallTokens: number }) =>
  Object.assign(baseRecord(m), {
    providerAccountId: call.accountId,
    status: call.status,
    inputUnits: call.inputUnits,
    outputUnits: call.outputUnits,
    tokensConsumed: settled.chargedTokens,
    providerCostCents: call.providerCostCents,
    latencyMs: latency(m),
    metadata: Object.assign(commonMetadata(m), call.metadata, settled.shortfallTokens > 0 ? { shortfallTokens: settled.shortfallTokens } : {}),
  });

const generationOf = (m: Metered, generation: NonNullable<SettleCall['generation']>) => ({
  userId: m.userId,
  modelId: m.model.id,
  requestId: m.requestId,
  jobId: m.jobId,
  ...generation,
});

const isTimeout = (error: AppError) => error.code === 'TIMEOUT' || (error.details as { upstream?: { code?: string } } | null)?.upstream?.code === 'timeout';
