import { AsyncLocalStorage } from 'node:async_hooks';
import type { SQLWrapper } from 'drizzle-orm';
import { newId } from '../../platform/ids.js';
import type { GenerationKind } from '../../db/schema/library.js';
import type { Principal } from '../../platform/auth/plugin.js';
import { bound } from '../../platform/db/bound.js';
import type { Db, DbOrTx, Tx } from '../../platform/db/database.js';
import { StatementConditionFailed, writeAsOneStatement, type StatementPart } from '../../platform/db/one-statement.js';
import type { AppError } from '../../platform/http/errors.js';
import { metricsOrPrivate, type Metrics } from '../../platform/metrics/metrics.js';
import type { GatewayModel } from '../catalog/service.js';
import type { ApiKeysService } from '../apikeys/service.js';
import type { LibraryService } from '../library/service.js';
import type { UsageService } from '../usage/service.js';
import type { SweptReservation, WalletOwner, WalletService } from '../wallet/service.js';
import { checkAccess, type Access, type AccessDeps } from './access.js';
import type { IdempotencyStore } from './idempotency.js';

/**
 * The metering pipeline every gateway call goes through: check access → reserve → (the caller runs the upstream) →
 * settle (charge, usage record, library item and its `generation.persisted`, idempotency completion: one transaction)
 * or refund (release and a FAILED usage record: one transaction). Written once; text, media and jobs use it.
 */
export interface MeteringDeps extends AccessDeps {
  db: Db;
  wallet: Pick<WalletService, 'reserve' | 'settle' | 'settlementParts' | 'release' | 'markInFlight' | 'grow'>;
  usage: Pick<UsageService, 'record' | 'recordPart'>;
  library: Pick<LibraryService, 'saveGeneration' | 'saveGenerationParts'>;
  /** Where the gateway's calls are counted (the service's registry). */
  metrics?: Metrics;
  /** Per-key budgets: held with the reservation, closed with it. */
  keys?: Pick<ApiKeysService, 'holdBudget' | 'growBudgetHold' | 'budgetSettlementParts' | 'settleBudget' | 'controlsById'>;
  /** The Idempotency-Keys: the sweeper closing a dead request's reservation closes its key in the same transaction. */
  idempotency?: Pick<IdempotencyStore, 'followReservation'>;
}

type ModelRef = { id: string; slug: string; providerId: string | null; providerSlug?: string };

/** One metered request once its tokens are held. */
export interface Metered {
  userId: string;
  subscriptionId: string | null;
  apiKeyId: string | null;
  model: ModelRef;
  requestId: string;
  jobId: string | null;
  operation: string;
  /** null when the caller records its reservation facts itself (media calls). */
  reservedTokens: number | null;
  started: number;
  /** The call holds tokens of its key's budget (closed with the reservation). */
  keyBudget?: boolean;
  /** Whose wallet holds the tokens; unknown to media calls settled from their stored facts (not grouped then). */
  walletOwner?: WalletOwner;
}

/**
 * The `Idempotency-Key` of a metered request: its write rides with the charge (in the settling transaction or
 * statement), so a committed charge always has its key completed, or marked charged when the answer is not known yet.
 */
export interface MeteringScope {
  requestId: string;
  /** Named in the reservation's context, so the sweeper can close the key with a reservation whose process died. */
  idempotencyKey: string;
  chargeQuery(response: Record<string, unknown> | null, tx?: DbOrTx): SQLWrapper;
  /** The charge and the key's write committed. */
  committed(response: Record<string, unknown> | null): void;
}

const scopes = new AsyncLocalStorage<MeteringScope>();

/** Runs `fn` as one metered request (the Idempotency-Key wrapper's scope). */
export const withMeteringScope = <T>(scope: MeteringScope, fn: () => Promise<T>): Promise<T> => scopes.run(scope, fn);

/** The request id of the metered request being served (the one its Idempotency-Key recorded), or a new one. */
export const meteredRequestId = (): string => scopes.getStore()?.requestId ?? newId();

export interface ReserveCall {
  model: ModelRef;
  operation: string;
  tokens: number;
  requestId: string;
  jobId?: string | null;
  /** A lease of its own (jobs); without it the reservation is held by this process's heartbeat. */
  leaseSeconds?: number;
  /** When the request began (latency is measured from it); default now. */
  started?: number;
}

export interface SettleCall {
  status: 'SUCCESS' | 'PARTIAL';
  chargeTokens: number;
  providerCostCents: number;
  inputUnits: number;
  outputUnits: number;
  accountId: string | null;
  metadata: Record<string, unknown>;
  generation: { kind: GenerationKind; prompt: string; output: Record<string, unknown>; thumbnailUrl?: string | null; tags?: string[] } | null;
  /** The answer, when it is known before the charge; completes the Idempotency-Key in the same transaction. */
  response?: (charged: { chargedTokens: number }) => Record<string, unknown>;
}

export interface Settled {
  chargedTokens: number;
  shortfallTokens: number;
  generationId: string | null;
}

const isTimeout = (error: AppError) => error.code === 'TIMEOUT' || (error.details as { upstream?: { code?: string } } | null)?.upstream?.code === 'timeout';

export function createMetering(deps: MeteringDeps) {
  const { wallet, usage, library } = deps;
  const calls = metricsOrPrivate(deps.metrics).counter({
    name: 'storefront_gateway_calls_total',
    help: 'Metered gateway calls by provider, model, operation and outcome (success, partial, or the error code of a refunded call)',
    labelNames: ['provider', 'model', 'operation', 'outcome'],
  });
  const counted = (m: Metered, outcome: string) =>
    calls.inc({ provider: m.model.providerSlug ?? m.model.slug.split('/')[0]!, model: m.model.slug, operation: m.operation, outcome });

  const base = (m: Metered) => ({
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
    Object.assign(base(m), {
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
  const scopeOf = (m: Metered) => {
    const scope = scopes.getStore();
    return scope?.requestId === m.requestId ? scope : null;
  };

  /** The general settlement, statement by statement inside `tx`. */
  async function settleIn(tx: Tx, m: Metered, call: SettleCall): Promise<Settled> {
    const settled = await wallet.settle({ requestId: m.requestId, actualTokens: call.chargeTokens }, tx);
    if (m.keyBudget) await deps.keys?.settleBudget(tx, m.requestId, settled.chargedTokens);
    await usage.record(usageOf(m, call, settled), tx);
    const generationId = call.generation ? (await library.saveGeneration(generationOf(m, call.generation), tx)).id : null;
    const scope = scopeOf(m);
    if (scope) await tx.execute(scope.chargeQuery(call.response ? call.response(settled) : null, tx).getSQL());
    counted(m, call.status.toLowerCase());
    return { generationId, ...settled };
  }

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
    };
    // A job's caller carries only the key id: its controls are read then (a request's principal has them already).
    const controls = caller.keyControls !== undefined || !caller.apiKeyId || !deps.keys ? caller.keyControls : await deps.keys.controlsById(caller.apiKeyId);
    const budget = caller.apiKeyId && deps.keys ? (controls?.budget ?? null) : null;
    metered.keyBudget = budget !== null;
    const scope = scopeOf(metered);
    const context = Object.assign(
      base(metered),
      { apiKeyId: metered.apiKeyId, modelSlug: call.model.slug },
      budget ? { keyBudget: true } : {},
      scope ? { idempotencyKey: scope.idempotencyKey } : {},
    );
    const reserve = (handle?: Tx) =>
      wallet.reserve({ tokens: call.tokens, requestId: call.requestId, note: `${call.operation} ${call.model.slug}`, context, leaseSeconds: call.leaseSeconds, ...access.owner }, handle);
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

  return {
    /** The plan checks in the spec's order: an active plan, API access for keys, the model in the plan. */
    access: (principal: Principal, model: GatewayModel) => checkAccess(deps, principal, model),

    /**
     * Holds the call's tokens (429 QUOTA_EXCEEDED when the wallet is short), after the plan checks unless the caller
     * made them already (`access`), with what the sweeper needs to record the call if this process dies.
     */
    async reserve(principal: Principal, call: ReserveCall & { model: GatewayModel }, options: { access?: Access; tx?: Tx } = {}): Promise<Metered> {
      const access = options.access ?? (await checkAccess(deps, principal, call.model));
      return reserveChecked(principal, access, call, options.tx);
    },

    /** Holds the tokens of a call whose plan checks were made before (a job, checked when it was submitted). */
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
        await deps.db.transaction(async (tx) => {
          if (m.keyBudget && budget && m.apiKeyId) await deps.keys?.growBudgetHold(tx, { apiKeyId: m.apiKeyId, requestId: m.requestId, tokens, budget });
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
     * Charges a delivered generation in ONE statement (the hot path): the reservation settled within its tokens, the
     * usage record, the library item with its `generation.persisted` event and the Idempotency-Key's completion commit
     * together. What that shortcut does not cover (a call that ran over its reservation, a debt to collect, a request
     * settled already) goes the general way, in one transaction. Exactly once by the request id either way.
     */
    async settleNow(m: Metered, call: SettleCall): Promise<Settled> {
      const settlement = wallet.settlementParts({ requestId: m.requestId, actualTokens: call.chargeTokens, owner: m.walletOwner });
      const settled = { chargedTokens: call.chargeTokens, shortfallTokens: 0 };
      const parts: StatementPart[] = [...settlement.parts, { name: 'usage_record', query: usage.recordPart(usageOf(m, call, settled)) }];
      if (m.keyBudget && deps.keys) parts.push(...deps.keys.budgetSettlementParts(m.requestId, call.chargeTokens));
      let generationId: string | null = null;
      if (call.generation) {
        const item = await library.saveGenerationParts(generationOf(m, call.generation));
        generationId = item.id;
        parts.push(...item.parts);
      }
      const scope = scopeOf(m);
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
        return deps.db.transaction((tx) => settleIn(tx, m, call));
      }
      settlement.committed(written);
      counted(m, call.status.toLowerCase());
      scope?.committed(response);
      return { generationId, ...settled };
    },

    /** Charges a delivered generation inside `tx` (a job ends with it), exactly once by its request id. */
    settle: (tx: Tx, m: Metered, call: SettleCall): Promise<Settled> => settleIn(tx, m, call),

    /** A call that delivered nothing: full refund and a FAILED (or TIMEOUT) usage record, inside `tx`. */
    async refund(tx: Tx, m: Metered, error: AppError, metadata: Record<string, unknown> = {}): Promise<void> {
      await wallet.release({ requestId: m.requestId, reason: `Refunded: ${error.code}` }, tx);
      counted(m, error.code.toLowerCase());
      if (m.keyBudget) await deps.keys?.settleBudget(tx, m.requestId, 0);
      await usage.record(
        Object.assign(base(m), {
          status: isTimeout(error) ? ('TIMEOUT' as const) : ('FAILED' as const),
          tokensConsumed: 0,
          latencyMs: latency(m),
          metadata: Object.assign(commonMetadata(m), { error: { code: error.code, message: error.message, details: error.details } }, metadata),
        }),
        tx,
      );
    },

    /**
     * The sweeper closed a reservation a dead process left open: the usage record it would have written, so usage
     * always agrees with the ledger, and the request's Idempotency-Key follows the reservation (charged, or freed for a
     * retry). Reservations made before contexts existed have none and get no record.
     */
    async recordSwept(tx: Tx, swept: SweptReservation): Promise<void> {
      const c = swept.context as (ReturnType<typeof base> & { apiKeyId?: string | null; modelSlug?: string; keyBudget?: boolean; idempotencyKey?: string }) | null;
      if (c?.keyBudget) await deps.keys?.settleBudget(tx, swept.requestId, swept.chargedTokens);
      if (c?.userId && c.idempotencyKey) await deps.idempotency?.followReservation(tx, { userId: c.userId, key: c.idempotencyKey, requestId: swept.requestId }, swept.outcome);
      if (!c?.userId || !c.operation) return;
      const settled = swept.outcome === 'SETTLED';
      await usage.record(
        {
          userId: c.userId,
          subscriptionId: c.subscriptionId ?? null,
          modelId: c.modelId ?? null,
          providerId: c.providerId ?? null,
          jobId: c.jobId ?? null,
          apiKeyId: c.apiKeyId ?? null,
          requestId: swept.requestId,
          operation: c.operation,
          status: settled ? 'PARTIAL' : 'FAILED',
          tokensConsumed: swept.chargedTokens,
          metadata: {
            modelSlug: c.modelSlug ?? null,
            reservedTokens: swept.reservedTokens,
            ...(c.apiKeyId ? { apiKeyId: c.apiKeyId } : {}),
            settledBy: 'sweeper',
            ...(settled ? {} : { error: { code: 'INTERRUPTED', message: 'The generation was interrupted before it reported any usage; nothing was charged.' } }),
          },
        },
        tx,
      );
    },
  };
}

export type Metering = ReturnType<typeof createMetering>;
