import { createHash } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { AppError } from '../../../platform/http/errors.js';
import type { CatalogService, GatewayModel } from '../../catalog/service.js';
import { checkedVectors, encodeVector } from './vectors.js';
import type { UpstreamPool } from '../routing/pool.js';
import { UpstreamError } from '../providers/types.js';

/**
 * What an embeddings call keeps for its Idempotency-Key (24 hours). Its vectors only while they are small: 2,048
 * texts at 3,072 dimensions are 33 MB, kept for a replay that rarely comes. Larger answers keep their metadata and a
 * digest; a replay embeds the same texts on the same model again, uncharged. Embeddings of a model are a function of
 * its input (exactly so for `local/embed`; hosted models may differ in the last digits, which the digest reveals).
 */
export const KEPT_VECTORS_MAX_BYTES = 64 * 1024;

/** A type, not an interface: the Idempotency-Key runner takes JSON records. */
export type KeptEmbeddings = {
  /** The model that served the call (a fallback's when one did): a replay recomputes on it. */
  model: string;
  requestId: string;
  dimensions: number;
  usage: { inputTokens: number; creditsConsumed: number };
  /** The vectors in base64 (vectors.ts) when their total is at most KEPT_VECTORS_MAX_BYTES. */
  vectors?: string[];
  /** SHA-256 (hex) of the vectors, in order: kept when they are not, to tell whether a recomputation matched. */
  vectorsSha256?: string;
};

const digestOf = (vectors: readonly string[]) => {
  const hash = createHash('sha256');
  for (const vector of vectors) hash.update(vector).update('\n');
  return hash.digest('hex');
};

/** What a replay keeps of the vectors: themselves when they are small, else their digest. */
export function keptVectors(vectors: string[]): Pick<KeptEmbeddings, 'vectors' | 'vectorsSha256'> {
  const bytes = vectors.reduce((sum, vector) => sum + vector.length, 0);
  return bytes <= KEPT_VECTORS_MAX_BYTES ? { vectors } : { vectorsSha256: digestOf(vectors) };
}

export interface RecomputeDeps {
  logger: FastifyBaseLogger;
  catalog: Pick<CatalogService, 'resolveForGateway' | 'priceUsage'>;
  pool: UpstreamPool;
}

/** One embeddings call on a model's provider, failing over between its accounts (routing/pool.ts). */
export const embedOn = (pool: Pick<UpstreamPool, 'run'>, model: GatewayModel, request: { input: string[]; dimensions?: number; user?: string }) =>
  pool.run(model.providerSlug, (adapter, credential) => {
    if (!adapter.embed) throw new UpstreamError('model_not_found', `The provider "${model.providerSlug}" serves no embeddings.`);
    return adapter.embed(credential, { model: model.upstreamModel, input: request.input, dimensions: request.dimensions, user: request.user });
  });

/** A replay that could not recompute its vectors: nothing is charged, and the same request may be sent again. */
const recomputeFailed = (kept: KeptEmbeddings, idempotencyKey: string | undefined, err: unknown) =>
  new AppError(
    503,
    'REPLAY_UNAVAILABLE',
    `This Idempotency-Key's answer (request ${kept.requestId}, charged once) keeps no vectors: they were too large to store, so a replay embeds the texts again on "${kept.model}", and that failed just now (${
      err instanceof Error ? err.message : String(err)
    }). Send the same request again in a moment; a replay is never charged.`,
    { idempotencyKey: idempotencyKey ?? null, requestId: kept.requestId, model: kept.model, retryable: true },
    { 'retry-after': '5' },
  );

/**
 * The vectors of a replay whose answer kept none: the texts embedded again on the model that served the first call,
 * with the same `dimensions`. Not metered (the call was charged once); the provider's cost counts in the upstream
 * account's spend, as every call's does.
 */
export async function recomputeVectors(
  deps: RecomputeDeps,
  kept: KeptEmbeddings,
  request: { input: string[]; dimensions?: number; user?: string },
  idempotencyKey?: string,
): Promise<string[]> {
  let vectors: string[];
  try {
    const model = await deps.catalog.resolveForGateway(kept.model);
    const outcome = await embedOn(deps.pool, model, request);
    vectors = checkedVectors(outcome.value.vectors, request.input.length, request.dimensions).map(encodeVector);
    const price = await deps.catalog
      .priceUsage(model, { inputTokens: outcome.value.usage?.inputTokens ?? kept.usage.inputTokens, outputTokens: 0 })
      .catch(() => null);
    if (price) deps.pool.recordSpend(outcome.accountId, price.providerCostMicros);
  } catch (err) {
    deps.logger.warn({ err, requestId: kept.requestId, model: kept.model }, 'recomputing the vectors of an embeddings replay failed');
    throw recomputeFailed(kept, idempotencyKey, err);
  }
  if (kept.vectorsSha256 && digestOf(vectors) !== kept.vectorsSha256) {
    deps.logger.warn({ requestId: kept.requestId, model: kept.model }, 'an embeddings replay recomputed vectors that differ from the first answer');
  }
  return vectors;
}
