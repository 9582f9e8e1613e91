import type { FastifyBaseLogger } from 'fastify';
import type { GenerationKind } from '../../../db/schema/library.js';
import type { Db } from '../../../platform/db/database.js';
import type { Metrics } from '../../../platform/metrics/metrics.js';
import type { ApiKeysService } from '../../apikeys/service.js';
import type { LibraryService } from '../../library/service.js';
import type { UsageService } from '../../usage/service.js';
import type { WalletOwner, WalletService } from '../../wallet/service.js';
import type { AccessDeps } from './access.js';
import type { IdempotencyStore, KeyScope } from './idempotency.js';

/**
 * The metering pipeline every gateway call goes through: check access → reserve → (the caller runs the upstream) →
 * settle (charge, usage record, library item and its `generation.persisted`, idempotency completion: one transaction)
 * or refund (release and a FAILED usage record: one transaction). Written once; text, media and jobs use it.
 */
export interface MeteringDeps extends AccessDeps {
  db: Db;
  logger: FastifyBaseLogger;
  wallet: Pick<WalletService, 'reserve' | 'settle' | 'settlementParts' | 'release' | 'markInFlight' | 'grow' | 'reservation'>;
  usage: Pick<UsageService, 'record' | 'recordPart' | 'dropSwept'>;
  library: Pick<LibraryService, 'saveGeneration' | 'saveGenerationParts'>;
  /** Where the gateway's calls are counted (the service's registry). */
  metrics?: Metrics;
  /** Per-key budgets: held with the reservation, closed with it. */
  keys?: Pick<ApiKeysService, 'holdBudget' | 'growBudgetHold' | 'budgetSettlementParts' | 'settleBudget' | 'spendLate' | 'controlsById'>;
  /** The Idempotency-Keys: the sweeper closing a dead request's reservation closes its key in the same transaction. */
  idempotency?: Pick<IdempotencyStore, 'followReservation'>;
}

export type ModelRef = { id: string; slug: string; providerId: string | null; providerSlug?: string };

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
  /** The request's Idempotency-Key, completed with the charge; null or absent without one (and for jobs). */
  key?: KeyScope | null;
}

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
  /** The request's Idempotency-Key (see `MeteredRequest`). */
  key?: KeyScope | null;
}

export interface SettleCall<A extends Record<string, unknown> = Record<string, unknown>> {
  status: 'SUCCESS' | 'PARTIAL';
  chargeTokens: number;
  providerCostCents: number;
  inputUnits: number;
  outputUnits: number;
  accountId: string | null;
  metadata: Record<string, unknown>;
  generation: { kind: GenerationKind; prompt: string; output: Record<string, unknown>; thumbnailUrl?: string | null; tags?: string[] } | null;
  /**
   * The answer already reached the caller (a stream): if the sweeper closed the reservation meanwhile, the charge is
   * taken even into debt; otherwise such an answer is withheld (503) when it cannot be paid for.
   */
  delivered?: boolean;
  /**
   * The call's answer from what it was charged, which only the settlement knows (the general way may charge less than
   * asked: an overrun capped at the balance). The settlement builds it once, completes the Idempotency-Key with it in
   * the same transaction, and hands it back in `Settled.answer`.
   */
  answer?: (charged: { chargedTokens: number }) => A;
}

export interface Settled<A extends Record<string, unknown> = Record<string, unknown>> {
  chargedTokens: number;
  shortfallTokens: number;
  generationId: string | null;
  /** What `SettleCall.answer` built; null without one. */
  answer: A | null;
}
