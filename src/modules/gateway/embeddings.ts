import type { FastifyBaseLogger } from 'fastify';
import type { Principal } from '../../platform/auth/plugin.js';
import type { Db } from '../../platform/db/database.js';
import { AppError, badRequest, forbidden } from '../../platform/http/errors.js';
import type { CatalogService, GatewayModel } from '../catalog/service.js';
import type { Access } from './access.js';
import { checkedVectors, encodeVector, renderVectors, type EncodingFormat } from './embeddings-vectors.js';
import { upstreamToAppError } from './errors.js';
import { fallbackMetadata, runWithFallbacks, type FallbackFrom } from './fallback-loop.js';
import type { Fallbacks } from './fallbacks.js';
import type { Metering } from './metering.js';
import type { Metered } from './metering-types.js';
import type { UpstreamPool } from './pool.js';
import { UpstreamError, type EmbeddingResult } from './providers/types.js';
import { priceOrReservation, refundFailed } from './text-billing.js';
import { countTextTokens } from './tokens.js';

/** OpenAI's limits, applied to every provider: inputs per call, and tokens of all inputs together. */
export const MAX_EMBEDDING_INPUTS = 2048;
export const MAX_EMBEDDING_TOTAL_TOKENS = 300_000;
/** The scopes that let an API key embed: its own, or the text scope (embeddings are metered like text). */
export const EMBED_SCOPES = ['ai:embed', 'ai:text'] as const;

const ROUTE = 'POST /v1/ai/embeddings';
const OPERATION = 'embeddings.create';

export interface EmbeddingsBody {
  model: string;
  input: string[];
  dimensions?: number;
  /** The end user behind the call, for the provider's abuse monitoring. */
  user?: string;
}

/** The answer as kept for an Idempotency-Key replay: vectors in base64 (see embeddings-vectors.ts). */
type StoredEmbeddings = {
  model: string;
  requestId: string;
  dimensions: number;
  vectors: string[];
  usage: { inputTokens: number; creditsConsumed: number };
};

export type EmbeddingsAnswer = Omit<StoredEmbeddings, 'vectors'> & { embeddings: Array<number[] | string> };

type Once = <T extends Record<string, unknown>>(
  principal: Principal,
  options: { idempotencyKey?: string },
  route: string,
  body: unknown,
  run: (requestId: string) => Promise<T>,
) => Promise<{ body: T; replayed: boolean }>;

export interface EmbeddingsDeps {
  db: Db;
  logger: FastifyBaseLogger;
  catalog: Pick<CatalogService, 'resolveForGateway' | 'estimateTokens' | 'priceUsage' | 'getById'>;
  metering: Metering;
  pool: UpstreamPool;
  fallbacks?: Pick<Fallbacks, 'idsOf'>;
  /** The gateway service's Idempotency-Key runner. */
  once: Once;
}

/** A call checked and sized on one model. */
interface Sized {
  model: GatewayModel;
  access: Access;
  reservedTokens: number;
}

/** A call sized and reserved on one model; `fallbackFrom` names the model asked for when a fallback serves it. */
interface Reserved {
  sized: Sized;
  metered: Metered;
  fallbackFrom?: FallbackFrom;
}

/** A key may embed with either of EMBED_SCOPES (access tokens carry every scope). */
export function requireEmbedScope(principal: Principal): void {
  if (principal.scopes && !EMBED_SCOPES.some((scope) => principal.scopes!.includes(scope))) {
    throw forbidden('This API key lacks the "ai:embed" scope (or "ai:text"). Create a key with one of them.', { requiredScope: 'ai:embed', acceptedScopes: [...EMBED_SCOPES] });
  }
}

/** Refusals of the body that need no model: empty inputs, too many of them, an impossible `dimensions`. */
function checkBody(body: EmbeddingsBody): void {
  if (body.input.length === 0) throw badRequest('input is empty: send a text or an array of texts to embed.', [{ field: 'input', message: 'must not be empty' }]);
  if (body.input.length > MAX_EMBEDDING_INPUTS) {
    throw badRequest(`input has ${body.input.length} texts; send at most ${MAX_EMBEDDING_INPUTS} per call.`, [{ field: 'input', message: `must have at most ${MAX_EMBEDDING_INPUTS} items` }]);
  }
  const empty = body.input.findIndex((text) => text.length === 0);
  if (empty >= 0) throw badRequest(`input[${empty}] is an empty string; every text to embed needs at least one character.`, [{ field: `input.${empty}`, message: 'must not be empty' }]);
}

/**
 * `POST /v1/ai/embeddings` and `POST /openai/v1/embeddings`: metered like text on the input tokens (reserved on the
 * count, charged on the provider's usage or the count), with the key's controls, the operator's fallback models and
 * Idempotency-Key. Vectors are not saved to the library.
 */
export function createEmbeddingsGateway(deps: EmbeddingsDeps) {
  const { catalog, metering, pool, logger } = deps;

  async function size(principal: Principal, model: GatewayModel, tokens: number[]): Promise<Sized> {
    if (model.type !== 'EMBEDDING') {
      throw badRequest(`The model "${model.slug}" is a ${model.type} model; embeddings need an EMBEDDING model. Pick one from GET /v1/models?type=EMBEDDING.`, { model: model.slug, type: model.type });
    }
    const access = await metering.access(principal, model);
    if (!pool.adapterOf(model.providerSlug)?.embed) {
      throw new AppError(503, 'MODEL_UNAVAILABLE', `The model "${model.slug}" cannot be used right now: its provider has no embeddings adapter. Choose a different model from GET /v1/models?type=EMBEDDING.`, { model: model.slug });
    }
    const limit = model.maxContextTokens;
    const tooLong = limit ? tokens.findIndex((count) => count > limit) : -1;
    if (tooLong >= 0) {
      throw badRequest(`input[${tooLong}] is about ${tokens[tooLong]} tokens; the model "${model.slug}" reads at most ${limit} per text. Split it.`, [{ field: `input.${tooLong}`, message: 'is too long for this model' }]);
    }
    const inputTokens = tokens.reduce((sum, count) => sum + count, 0);
    const reservedTokens = await catalog.estimateTokens(model, { kind: 'text', inputTokens, maxOutputTokens: 0 });
    return { model, access, reservedTokens };
  }

  const upstream = (model: GatewayModel, body: EmbeddingsBody) =>
    pool.run(model.providerSlug, (adapter, credential) => {
      if (!adapter.embed) throw new UpstreamError('model_not_found', `The provider "${model.providerSlug}" serves no embeddings.`);
      return adapter.embed(credential, { model: model.upstreamModel, input: body.input, dimensions: body.dimensions, user: body.user });
    });

  /** The call moved to a fallback model (checked for this caller, its reservation raised if it costs more), or null when it is gone. */
  async function switchTo(principal: Principal, tokens: number[], call: Reserved, fallbackId: string, error: unknown): Promise<Reserved | null> {
    const entry = await catalog.getById(fallbackId);
    if (!entry) return null;
    const sized = await size(principal, await catalog.resolveForGateway(entry.row.slug), tokens);
    const metered = await metering.switchModel(principal, call.metered, sized.model, sized.reservedTokens);
    return { sized, metered, fallbackFrom: call.fallbackFrom ?? { model: call.sized.model.slug, error } };
  }

  /** A call that delivered nothing: refunded in full, answering the error to throw. */
  const refund = (body: EmbeddingsBody, call: Reserved, err: unknown) =>
    refundFailed(deps, { metered: call.metered, modelSlug: call.sized.model.slug, metadata: { inputs: body.input.length, ...(call.fallbackFrom ? { fallbackFrom: call.fallbackFrom.model } : {}) }, internalMessage: 'The embeddings call failed on our side.' }, err);

  async function run(principal: Principal, body: EmbeddingsBody, requestId: string): Promise<StoredEmbeddings> {
    const started = performance.now();
    const model = await catalog.resolveForGateway(body.model);
    const tokens = body.input.map(countTextTokens);
    const inputTokens = tokens.reduce((sum, count) => sum + count, 0);
    if (inputTokens > MAX_EMBEDDING_TOTAL_TOKENS) {
      throw badRequest(`The input is about ${inputTokens} tokens in all; send at most ${MAX_EMBEDDING_TOTAL_TOKENS} per call.`, [{ field: 'input', message: 'is too long in all' }]);
    }
    const sized = await size(principal, model, tokens);
    const metered = await metering.reserve(principal, { model, operation: OPERATION, tokens: sized.reservedTokens, requestId, started }, { access: sized.access });
    const first: Reserved = { sized, metered };
    const { p: served, value: outcome } = await runWithFallbacks({
      first,
      fallbackIds: async () => (deps.fallbacks ? deps.fallbacks.idsOf(model.id) : []),
      attempt: (call) => upstream(call.sized.model, body),
      switchTo: (call, fallbackId, firstError) => switchTo(principal, tokens, call, fallbackId, firstError),
      fail: (call, err) => refund(body, call, err),
      skipped: { logger, requestId, message: 'fallback model cannot take the embeddings call; trying the next' },
    });
    const result: EmbeddingResult = outcome.value;
    let vectors: string[];
    try {
      vectors = checkedVectors(result.vectors, body.input.length, body.dimensions).map(encodeVector);
    } catch (err) {
      // A malformed answer delivered nothing usable: refunded like a failed call.
      await deps.db.transaction((tx) => metering.refund(tx, served.metered, upstreamToAppError(err, served.sized.model.slug)));
      throw upstreamToAppError(err, served.sized.model.slug);
    }
    return settle(served, { vectors, usage: result.usage, counted: inputTokens, accountId: outcome.accountId, inputs: body.input.length });
  }

  async function settle(call: Reserved, outcome: { vectors: string[]; usage: EmbeddingResult['usage']; counted: number; accountId: string; inputs: number }): Promise<StoredEmbeddings> {
    const { sized, metered } = call;
    const { model } = sized;
    const inputTokens = outcome.usage?.inputTokens ?? outcome.counted;
    const price = await priceOrReservation(deps, model, { inputTokens, outputTokens: 0 }, { reservedTokens: sized.reservedTokens, requestId: metered.requestId }, 'embeddings');
    const dimensions = outcome.vectors.length > 0 ? Buffer.byteLength(outcome.vectors[0]!, 'base64') / 4 : 0;
    const stored = (creditsConsumed: number): StoredEmbeddings => ({ model: model.slug, requestId: metered.requestId, dimensions, vectors: outcome.vectors, usage: { inputTokens, creditsConsumed } });
    const { chargedTokens } = await metering.settleNow(metered, {
      status: 'SUCCESS',
      chargeTokens: price.tokens,
      providerCostCents: price.providerCostCents,
      inputUnits: inputTokens,
      outputUnits: 0,
      accountId: outcome.accountId,
      metadata: {
        inputs: outcome.inputs,
        dimensions,
        usageSource: outcome.usage ? 'provider' : 'counted',
        tokens: { input: inputTokens, cachedInput: 0, cacheWrite: 0, output: 0, reasoning: 0 },
        providerCostMicros: price.providerCostMicros,
        currency: price.currency,
        ...fallbackMetadata(call.fallbackFrom),
      },
      generation: null,
      response: (settled) => stored(settled.chargedTokens),
    });
    pool.recordSpend(outcome.accountId, price.providerCostMicros);
    return stored(chargedTokens);
  }

  return {
    /** Refuses an API key with neither embedding scope (routes call it before reading the body). */
    requireScope: requireEmbedScope,

    /** Embeds `body.input` in order; `encodingFormat` shapes the vectors of the answer (a replay may ask either). */
    async create(principal: Principal, body: EmbeddingsBody, options: { idempotencyKey?: string; encodingFormat?: EncodingFormat } = {}): Promise<{ body: EmbeddingsAnswer; replayed: boolean }> {
      checkBody(body);
      const request: EmbeddingsBody = { model: body.model, input: body.input, ...(body.dimensions === undefined ? {} : { dimensions: body.dimensions }), ...(body.user === undefined ? {} : { user: body.user }) };
      const { body: stored, replayed } = await deps.once(principal, options, ROUTE, request, (requestId) => run(principal, request, requestId));
      const { vectors, ...rest } = stored;
      return { body: { ...rest, embeddings: renderVectors(vectors, options.encodingFormat ?? 'float') }, replayed };
    },
  };
}

export type EmbeddingsGateway = ReturnType<typeof createEmbeddingsGateway>;
