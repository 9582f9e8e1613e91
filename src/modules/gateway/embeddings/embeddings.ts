import type { FastifyBaseLogger } from 'fastify';
import type { ServerTiming } from '../../../platform/http/server-timing.js';
import { startCallSpan } from '../routing/call-span.js';
import type { Principal } from '../../../platform/auth/plugin.js';
import type { Db } from '../../../platform/db/database.js';
import { AppError, badRequest, forbidden } from '../../../platform/http/errors.js';
import type { CatalogService, GatewayModel } from '../../catalog/service.js';
import { checkAccess, type Access, type AccessDeps } from '../metering/access.js';
import { once, type IdempotencyStore, type MeteredRequest } from '../metering/idempotency.js';
import { checkEmbeddingsBody, countEmbeddingTokens, tooLongForModel } from './limits.js';
import { embedOn, keptVectors, recomputeVectors, type KeptEmbeddings } from './replay.js';
import { checkedVectors, encodeVector, renderVectors, type EncodingFormat } from './vectors.js';
import { upstreamToAppError } from '../routing/upstream-errors.js';
import { fallbackMetadata, runWithFallbacks, type FallbackFrom } from '../routing/fallback-loop.js';
import type { Fallbacks } from '../routing/fallback-models.js';
import type { Metering } from '../metering/metering.js';
import type { Metered } from '../metering/types.js';
import type { UpstreamPool } from '../routing/pool.js';
import type { EmbeddingResult } from '../providers/types.js';
import { priceOrReservation } from '../text/text.js';

export { MAX_EMBEDDING_INPUTS, MAX_EMBEDDING_TOTAL_TOKENS } from './limits.js';
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

export type EmbeddingsAnswer = Omit<KeptEmbeddings, 'vectors' | 'vectorsSha256'> & { embeddings: Array<number[] | string> };

/** A call's answer: what its Idempotency-Key keeps, and the vectors (base64, embeddings-vectors.ts) it answers now. */
interface Embedded {
  kept: KeptEmbeddings;
  vectors: string[];
}

export interface EmbeddingsDeps extends AccessDeps {
  db: Db;
  logger: FastifyBaseLogger;
  catalog: Pick<CatalogService, 'resolveForGateway' | 'estimateTokens' | 'priceUsage' | 'getById'>;
  metering: Metering;
  pool: UpstreamPool;
  fallbacks?: Pick<Fallbacks, 'idsOf'>;
  idempotency: IdempotencyStore;
  /** Inputs on the call's span (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`). */
  captureContent?: boolean;
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
    throw forbidden('This API key lacks the "ai:embed" scope (or "ai:text"). Create a key with one of them.', {
      requiredScope: 'ai:embed',
      acceptedScopes: [...EMBED_SCOPES],
    });
  }
}

/**
 * `POST /v1/ai/embeddings` and `POST /openai/v1/embeddings`: metered like text on the input tokens (reserved on the
 * count, charged on the provider's usage or the count), with the key's controls, the operator's fallback models and
 * Idempotency-Key. Vectors are not saved to the library.
 */
export function createEmbeddingsGateway(deps: EmbeddingsDeps) {
  const { catalog, metering, pool, logger } = deps;

  /** The checks of the caller and the model, before any text is tokenized: the model's type, plan and key access, an adapter. */
  async function admit(principal: Principal, model: GatewayModel): Promise<Access> {
    if (model.type !== 'EMBEDDING') {
      throw badRequest(`The model "${model.slug}" is a ${model.type} model; embeddings need an EMBEDDING model. Pick one from GET /v1/models?type=EMBEDDING.`, {
        model: model.slug,
        type: model.type,
      });
    }
    const access = await checkAccess(deps, principal, model);
    if (!pool.adapterOf(model.providerSlug)?.embed) {
      throw new AppError(
        503,
        'MODEL_UNAVAILABLE',
        `The model "${model.slug}" cannot be used right now: its provider has no embeddings adapter. Choose a different model from GET /v1/models?type=EMBEDDING.`,
        { model: model.slug },
      );
    }
    return access;
  }

  /** The reservation of counted texts on one model, each within its context. */
  async function fit(model: GatewayModel, access: Access, tokens: number[]): Promise<Sized> {
    const limit = model.maxContextTokens;
    const tooLong = limit ? tokens.findIndex((count) => count > limit) : -1;
    if (tooLong >= 0) throw tooLongForModel(tooLong, `about ${tokens[tooLong]}`, model, limit!);
    const inputTokens = tokens.reduce((sum, count) => sum + count, 0);
    const reservedTokens = await catalog.estimateTokens(model, { kind: 'text', inputTokens, maxOutputTokens: 0 });
    return { model, access, reservedTokens };
  }

  /** The call moved to a fallback model (checked for this caller, its reservation raised if it costs more), or null when it is gone. */
  async function switchTo(principal: Principal, tokens: number[], call: Reserved, fallbackId: string, error: unknown): Promise<Reserved | null> {
    const entry = await catalog.getById(fallbackId);
    if (!entry) return null;
    const model = await catalog.resolveForGateway(entry.row.slug);
    const sized = await fit(model, await admit(principal, model), tokens);
    const metered = await metering.switchModel(principal, call.metered, sized.model, sized.reservedTokens);
    return { sized, metered, fallbackFrom: call.fallbackFrom ?? { model: call.sized.model.slug, error } };
  }

  /** A call that delivered nothing: refunded in full, answering the error to throw. */
  const refund = (body: EmbeddingsBody, call: Reserved, err: unknown) =>
    metering.refundFailed(
      {
        metered: call.metered,
        modelSlug: call.sized.model.slug,
        metadata: { inputs: body.input.length, ...(call.fallbackFrom ? { fallbackFrom: call.fallbackFrom.model } : {}) },
        internalMessage: 'The embeddings call failed on our side.',
      },
      err,
    );

  async function run(
    principal: Principal,
    body: EmbeddingsBody,
    atLeast: number[],
    request: MeteredRequest,
    timing: ServerTiming | undefined,
  ): Promise<Embedded> {
    const { requestId } = request;
    const started = performance.now();
    const model = await catalog.resolveForGateway(body.model);
    const access = await admit(principal, model);
    const tokens = countEmbeddingTokens(body.input, atLeast, model);
    const sized = await fit(model, access, tokens);
    const reserving = performance.now();
    timing?.add('route', reserving - started);
    const span = startCallSpan({
      operation: 'embeddings',
      providerSlug: model.providerSlug,
      model: model.slug,
      requestId,
      input: body.input,
      captureContent: deps.captureContent,
    });
    const metered = await metering
      .reserve(principal, { model, operation: OPERATION, tokens: sized.reservedTokens, requestId, started, key: request.key }, { access })
      .catch((err: unknown) => {
        span.failed(err);
        throw err;
      });
    timing?.add('reserve', performance.now() - reserving);
    const first: Reserved = { sized, metered };
    const { p: served, value: outcome } = await runWithFallbacks({
      first,
      fallbackIds: async () => (deps.fallbacks ? deps.fallbacks.idsOf(model.id) : []),
      attempt: (call) =>
        span.run(() => (timing ? timing.measure('upstream', () => embedOn(pool, call.sized.model, body)) : embedOn(pool, call.sized.model, body))),
      switchTo: async (call, fallbackId, firstError) => {
        const switched = await switchTo(principal, tokens, call, fallbackId, firstError);
        if (switched) span.fellBack(switched.sized.model.slug, switched.sized.model.providerSlug);
        return switched;
      },
      fail: (call, err) => {
        span.failed(err);
        return refund(body, call, err);
      },
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
    const counted = tokens.reduce((sum, count) => sum + count, 0);
    const settling = performance.now();
    const embedded = await settle(served, { vectors, usage: result.usage, counted, accountId: outcome.accountId, inputs: body.input.length });
    timing?.add('settle', performance.now() - settling);
    span.answered({
      responseModel: served.sized.model.upstreamModel,
      usage: { inputTokens: embedded.kept.usage.inputTokens, outputTokens: 0 },
      chargedTokens: embedded.kept.usage.creditsConsumed,
    });
    return embedded;
  }

  async function settle(
    call: Reserved,
    outcome: { vectors: string[]; usage: EmbeddingResult['usage']; counted: number; accountId: string; inputs: number },
  ): Promise<Embedded> {
    const { sized, metered } = call;
    const { model } = sized;
    const inputTokens = outcome.usage?.inputTokens ?? outcome.counted;
    const price = await priceOrReservation(
      deps,
      model,
      { inputTokens, outputTokens: 0 },
      { reservedTokens: sized.reservedTokens, requestId: metered.requestId },
      'embeddings',
    );
    const dimensions = outcome.vectors.length > 0 ? Buffer.byteLength(outcome.vectors[0]!, 'base64') / 4 : 0;
    const vectors = keptVectors(outcome.vectors);
    const kept = (creditsConsumed: number): KeptEmbeddings => ({
      model: model.slug,
      requestId: metered.requestId,
      dimensions,
      usage: { inputTokens, creditsConsumed },
      ...vectors,
    });
    const { answer } = await metering.settleNow(metered, {
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
      answer: (settled) => kept(settled.chargedTokens),
    });
    pool.recordSpend(outcome.accountId, price.providerCostMicros);
    return { kept: answer!, vectors: outcome.vectors };
  }

  return {
    /** Refuses an API key with neither embedding scope (routes call it before reading the body). */
    requireScope: requireEmbedScope,

    /**
     * Embeds `body.input` in order; `encodingFormat` shapes the vectors of the answer (a replay may ask either). A
     * replay whose answer kept no vectors (replay.ts) embeds again, uncharged: `recomputed`.
     */
    async create(
      principal: Principal,
      body: EmbeddingsBody,
      options: { idempotencyKey?: string; encodingFormat?: EncodingFormat; timing?: ServerTiming } = {},
    ): Promise<{ body: EmbeddingsAnswer; replayed: boolean; recomputed: boolean }> {
      const atLeast = checkEmbeddingsBody(body.input);
      const request: EmbeddingsBody = {
        model: body.model,
        input: body.input,
        ...(body.dimensions === undefined ? {} : { dimensions: body.dimensions }),
        ...(body.user === undefined ? {} : { user: body.user }),
      };
      let fresh: string[] | undefined;
      const { body: kept, replayed } = await once(deps.idempotency, principal, options, ROUTE, request, async (metered) => {
        const embedded = await run(principal, request, atLeast, metered, options.timing);
        fresh = embedded.vectors;
        return embedded.kept;
      });
      const recomputed = !fresh && !kept.vectors;
      const vectors = fresh ?? kept.vectors ?? (await recomputeVectors(deps, kept, request, options.idempotencyKey));
      const { model, requestId, dimensions, usage } = kept;
      return { body: { model, requestId, dimensions, usage, embeddings: renderVectors(vectors, options.encodingFormat ?? 'float') }, replayed, recomputed };
    },
  };
}

export type EmbeddingsGateway = ReturnType<typeof createEmbeddingsGateway>;
