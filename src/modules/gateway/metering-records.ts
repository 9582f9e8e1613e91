import type { AppError } from '../../platform/http/errors.js';
import type { Metered, SettleCall } from './metering-types.js';

// The rows a metered call writes beside its charge: the usage record and the library item.

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

export const latency = (m: Metered) => Math.round(performance.now() - m.started);

export const commonMetadata = (m: Metered) => ({
  modelSlug: m.model.slug,
  ...(m.reservedTokens !== null ? { reservedTokens: m.reservedTokens } : {}),
  ...(m.apiKeyId ? { apiKeyId: m.apiKeyId } : {}),
});

export const usageOf = (m: Metered, call: SettleCall, settled: { chargedTokens: number; shortfallTokens: number }) =>
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

export const generationOf = (m: Metered, generation: NonNullable<SettleCall['generation']>) => ({
  userId: m.userId,
  modelId: m.model.id,
  requestId: m.requestId,
  jobId: m.jobId,
  ...generation,
});

export const isTimeout = (error: AppError) =>
  error.code === 'TIMEOUT' || (error.details as { upstream?: { code?: string } } | null)?.upstream?.code === 'timeout';
