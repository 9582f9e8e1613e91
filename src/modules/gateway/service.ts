import type { FastifyBaseLogger } from 'fastify';
import { unkeyedRequest, type MeteredRequest } from './metering-scope.js';
import type { ServerTiming } from '../../platform/http/server-timing.js';
import type { ProviderSettings } from '../../config.js';
import type { Principal } from '../../platform/auth/plugin.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db, Tx } from '../../platform/db/database.js';
import { defineJob, type JobDefinition } from '../../platform/jobs/jobs.js';
import type { SseStream } from '../../platform/http/sse.js';
import type { CatalogService, GatewayModel } from '../catalog/service.js';
import type { LibraryService } from '../library/service.js';
import type { PlansService } from '../plans/service.js';
import type { SubscriptionsService } from '../subscriptions/service.js';
import type { UsageService } from '../usage/service.js';
import type { SweptReservation, WalletService } from '../wallet/service.js';
import { createIdempotencyStore } from './idempotency.js';
import { runWithIdempotencyKey } from './idempotent-call.js';
import { cleanEnhanced, enhanceInstruction, normaliseTarget, type EnhanceTarget } from './instructions.js';
import { createUpstreamPool } from './pool.js';
import { createUpstreamAccounts } from './accounts.js';
import type { SecretBox } from '../../platform/crypto/sealed.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import type { OutboundPolicy } from '../../platform/net/outbound-policy.js';
import type { ChatMessage } from './providers/types.js';
import { buildProviderRegistry, upstreamHttpFor } from './registry.js';
import { buildMediaProviders } from './media-adapters.js';
import type { LocalMediaOptions } from './providers/local/media.js';
import { createFallbacks } from './fallbacks.js';
import { createMetering } from './metering.js';
import type { MeteringDeps } from './metering-types.js';
import type { Metrics } from '../../platform/metrics/metrics.js';
import { createTextGateway, textOptionsOf, textResponse } from './text.js';
import { createEmbeddingsGateway } from './embeddings.js';
import { createUpstreamModels } from './upstream-models.js';
import type { TextAnswer, TextOptions } from './text-types.js';

export const IDEMPOTENCY_PURGE_JOB = 'gateway.idempotency-purge';

declare module '../../platform/jobs/jobs.js' {
  interface JobPayloads {
    'gateway.idempotency-purge': Record<string, never>;
  }
}

export interface GatewayServiceDeps {
  db: Db;
  clock: Clock;
  logger: FastifyBaseLogger;
  catalog: Pick<CatalogService, 'resolveForGateway' | 'estimateTokens' | 'priceUsage' | 'setProviderStatus' | 'snapshot' | 'getById' | 'getBySlug'>;
  subscriptions: Pick<SubscriptionsService, 'activeFor'>;
  plans: Pick<PlansService, 'isModelAllowed' | 'featuresOf'>;
  wallet: Pick<WalletService, 'reserve' | 'settle' | 'settlementParts' | 'release' | 'markInFlight' | 'reservation' | 'grow' | 'sweepOne'>;
  usage: UsageService;
  library: LibraryService;
  /** Per-key budgets (the API keys module); without it keys have no budgets. */
  keys?: MeteringDeps['keys'];
  /** Upstream credentials by variable prefix (config.providers). */
  providers: Record<string, ProviderSettings>;
  /** Pause between pieces of the local provider's streams (default 0). */
  localChunkDelayMs?: number;
  /** Silence allowed inside an upstream stream (default 60 s). */
  streamIdleTimeoutMs?: number;
  /** Tuning of the built-in media provider (video render time, images per call). */
  localMedia?: Omit<LocalMediaOptions, 'clock'>;
  /** Where calls and upstream latency are counted (the service's registry). */
  metrics?: Metrics;
  /** Seals and opens the keys of upstream accounts operators add. */
  secrets: SecretBox;
  /** Cross-instance invalidation of the pool's cached accounts. */
  events?: EventBus;
  /** Where operators' upstream base URLs may point (checked when saved and when connecting). */
  outbound: OutboundPolicy;
  /** Prompts and answers on the GenAI spans (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`). */
  captureContent?: boolean;
}

export interface TextBody extends TextOptions {
  model: string;
  messages: ChatMessage[];
  maxTokens?: number;
  temperature?: number;
  stream?: boolean;
  /** false: the caller's messages go upstream as they are (the SDK-compatible surfaces); default: the spec's server instruction first. */
  serverInstruction?: boolean;
  /** The reasoning control's name on the caller's surface (`reasoning_effort`, `thinking`...), named when it is left out. */
  reasoningField?: string;
}

export interface EnhanceBody {
  model: string;
  prompt: string;
  target?: EnhanceTarget;
}

export interface CallOptions {
  idempotencyKey?: string;
  /** The request's Server-Timing, which the call adds its phases to. */
  timing?: ServerTiming;
}

export interface Replayable<T> {
  body: T;
  /** True when the answer came from an earlier request with the same Idempotency-Key (nothing charged). */
  replayed: boolean;
}

const textModelsOnly = (model: GatewayModel) =>
  model.type === 'TEXT' || model.type === 'MULTIMODAL'
    ? null
    : `The model "${model.slug}" is a ${model.type} model; POST /v1/ai/text needs a TEXT or MULTIMODAL model.`;
const multimodalOnly = (model: GatewayModel) =>
  model.type === 'MULTIMODAL'
    ? null
    : `Prompt enhancement needs a multimodal model, and "${model.slug}" is a ${model.type} model. Pick one from GET /v1/models?type=MULTIMODAL.`;

const TEXT_ROUTE = 'POST /v1/ai/text';

/** The JSON answer of a text call: text, usage (with the tokens charged), model, requestId, finishReason. */
export type TextAnswerBody = ReturnType<typeof textResponse>;
const textResponseOrNull = (answer: TextAnswer | null): TextAnswerBody | null => (answer ? textResponse(answer) : null);
const ENHANCE_ROUTE = 'POST /v1/ai/enhance/prompt';

/** The AI gateway: the text routes, the upstream-account pool and the idempotency store. */
export function createGatewayService(deps: GatewayServiceDeps) {
  const { db, clock, logger } = deps;
  // Every adapter, text and media, calls out through this one client (operators' base URLs checked at each connection).
  const http = upstreamHttpFor(deps.providers, deps.outbound);
  const media = buildMediaProviders(clock, deps.localMedia, http);
  const registry = buildProviderRegistry(deps.providers, {
    localChunkDelayMs: deps.localChunkDelayMs,
    streamIdleTimeoutMs: deps.streamIdleTimeoutMs,
    mediaOnly: media.mediaOnly,
    http,
  });
  const pool = createUpstreamPool({ db, clock, logger, catalog: deps.catalog, registry, metrics: deps.metrics, secrets: deps.secrets, events: deps.events });
  const accounts = createUpstreamAccounts({ db, clock, pool, secrets: deps.secrets, catalog: deps.catalog, outbound: deps.outbound });
  const idempotency = createIdempotencyStore({
    db,
    clock,
    reservationStatus: async (requestId) => (await deps.wallet.reservation(requestId))?.status ?? null,
    sweepReservation: (requestId, options) => deps.wallet.sweepOne(requestId, options),
  });
  const metering = createMetering({ ...deps, idempotency });
  const fallbacks = createFallbacks({ db, catalog: deps.catalog });
  const text = createTextGateway({ ...deps, pool, metering, fallbacks });

  /** Runs `run` once per Idempotency-Key: a repeat with the same body gets the stored answer. */
  async function once<T extends Record<string, unknown>>(
    principal: Principal,
    options: CallOptions,
    route: string,
    body: unknown,
    run: (request: MeteredRequest) => Promise<T>,
  ): Promise<Replayable<T>> {
    if (!options.idempotencyKey) return { body: await run(unkeyedRequest()), replayed: false };
    const keyed = await runWithIdempotencyKey(idempotency, { userId: principal.userId, key: options.idempotencyKey, route, body }, run, (result: T) => result);
    return keyed.replayed ? { body: keyed.response, replayed: true } : { body: keyed.result, replayed: false };
  }

  const textCall = (body: TextBody, timing: ServerTiming | undefined) => ({
    operation: 'text.generate' as const,
    modelSlug: body.model,
    messages: body.messages,
    maxTokens: body.maxTokens,
    temperature: body.temperature,
    options: textOptionsOf(body),
    instruction: body.serverInstruction === false ? null : undefined,
    ...(body.reasoningField ? { reasoningField: body.reasoningField } : {}),
    accepts: textModelsOnly,
    saveToHistory: true,
    answerBody: textResponse,
    timing,
  });

  return {
    pool,
    /** Operators' view and changes of the upstream accounts (admin API). */
    accounts,
    idempotency,
    metering,
    /** The sweeper closed a reservation a dead process left: its usage record (see Metering.recordSwept). */
    recordSwept: (tx: Tx, swept: SweptReservation) => metering.recordSwept(tx, swept),
    /** Operators' fallback models per model (the admin routes in fallbacks.routes.ts). */
    fallbacks,
    /** `Idempotency-Key` for any /v1/ai/* call: a repeat with the same body gets the stored answer, uncharged. */
    once,
    /** Media adapters by provider slug (the media gateway calls them through `pool`). */
    mediaAdapters: media.adapters,
    /** `POST /v1/ai/embeddings` and `/openai/v1/embeddings` (embeddings.ts). */
    embeddings: createEmbeddingsGateway({ ...deps, pool, metering, fallbacks, once }),
    /** What each provider lists as served, asked with its accounts (the catalog check; read-only). */
    upstreamModels: createUpstreamModels({ db, registry, pool, http }),

    /** Registers the upstream accounts and checks their credentials (providers become ACTIVE, DEGRADED or INACTIVE). */
    async start(): Promise<void> {
      await pool.start();
    },

    /** Writes buffered upstream spend; call before the database closes. */
    async stop(): Promise<void> {
      await pool.stop();
    },

    async text(principal: Principal, body: TextBody, options: CallOptions = {}) {
      return once(principal, options, TEXT_ROUTE, body, async (request) =>
        textResponse(await text.generate(principal, textCall(body, options.timing), request)),
      );
    },

    /**
     * `stream: true`: answers with server-sent events through `open` (called once the upstream accepted the call).
     * Errors before that are thrown and answered as JSON; a replay streams the stored answer again.
     * Resolves with the answer as billed (the stored one for a replay), or null when the stream broke midway.
     */
    async streamText(
      principal: Principal,
      body: TextBody,
      options: CallOptions & { open: (headers?: Record<string, string>) => SseStream },
    ): Promise<TextAnswerBody | null> {
      // The request id travels as a header: the stream's events carry none.
      const run = async (request: MeteredRequest) =>
        (await text.stream(principal, textCall(body, options.timing), request, (headers) => options.open({ ...headers, 'x-ai-request-id': request.requestId })))
          .answer;
      if (!options.idempotencyKey) return textResponseOrNull(await run(unkeyedRequest()));
      // A stream that broke midway is not a complete answer: the key is freed for a retry unless it was charged.
      const keyed = await runWithIdempotencyKey(
        idempotency,
        { userId: principal.userId, key: options.idempotencyKey, route: TEXT_ROUTE, body },
        run,
        textResponseOrNull,
      );
      if (!keyed.replayed) return textResponseOrNull(keyed.result);
      const stored = keyed.response;
      const sse = options.open({ 'idempotent-replayed': 'true', 'x-ai-request-id': stored.requestId });
      // The thinking first and whole (with its signatures), as a client must send it back on a tool follow-up.
      for (const [index, block] of (stored.thinking ?? []).entries()) {
        if (block.type === 'redacted_thinking') await sse.send({ type: 'thinking', index, redactedData: block.data });
        else {
          await sse.send({ type: 'thinking', index, delta: block.thinking });
          await sse.send({ type: 'thinking', index, signature: block.signature });
        }
      }
      if (stored.text) await sse.send({ type: 'text', delta: stored.text });
      if (stored.refusal) await sse.send({ type: 'refusal', delta: stored.refusal });
      for (const [index, call] of (stored.toolCalls ?? []).entries())
        await sse.send({ type: 'tool_call', index, id: call.id, name: call.name, argumentsDelta: call.arguments });
      await sse.send({ type: 'usage', usage: { inputTokens: stored.usage.inputTokens, outputTokens: stored.usage.outputTokens } });
      await sse.send({ type: 'finish', finishReason: stored.finishReason ?? 'stop' });
      sse.end();
      return stored;
    },

    async enhancePrompt(principal: Principal, body: EnhanceBody, options: CallOptions = {}) {
      const target = normaliseTarget(body.target);
      const enhancedBody = (text: string) => ({ enhanced: cleanEnhanced(text) || text.trim() || body.prompt });
      return once(principal, options, ENHANCE_ROUTE, body, async (request) => {
        const answer = await text.generate(
          principal,
          {
            operation: 'prompt.enhance',
            modelSlug: body.model,
            messages: [{ role: 'user', content: body.prompt }],
            instruction: enhanceInstruction(target),
            accepts: multimodalOnly,
            saveToHistory: false,
            answerBody: (answer) => enhancedBody(answer.text),
            timing: options.timing,
          },
          request,
        );
        return enhancedBody(answer.text);
      });
    },

    jobs(): JobDefinition[] {
      return [
        defineJob({
          name: IDEMPOTENCY_PURGE_JOB,
          options: { cron: '17 * * * *', retryLimit: 1 },
          handler: async () => {
            const purged = await idempotency.purgeExpired();
            if (purged > 0) logger.info({ purged }, 'expired idempotency keys purged');
          },
        }) as JobDefinition,
      ];
    },
  };
}

export type GatewayService = ReturnType<typeof createGatewayService>;
