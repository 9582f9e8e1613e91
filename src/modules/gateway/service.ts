import type { FastifyBaseLogger } from 'fastify';
import type { ProviderSettings } from '../../config.js';
import type { Principal } from '../../platform/auth/plugin.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { SecretBox } from '../../platform/crypto/sealed.js';
import type { Db, Tx } from '../../platform/db/database.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { defineJob, type JobDefinition } from '../../platform/jobs/jobs.js';
import type { Metrics } from '../../platform/metrics/metrics.js';
import type { OutboundPolicy } from '../../platform/net/outbound-policy.js';
import type { CatalogService } from '../catalog/service.js';
import type { LibraryService } from '../library/service.js';
import type { PlansService } from '../plans/service.js';
import type { SubscriptionsService } from '../subscriptions/service.js';
import type { UsageService } from '../usage/service.js';
import type { SweptReservation, WalletService } from '../wallet/service.js';
import { createEmbeddingsGateway } from './embeddings/embeddings.js';
import type { DailyRequestLimit } from './metering/access.js';
import { createIdempotencyStore, once, type MeteredRequest, type Replayable } from './metering/idempotency.js';
import { createMetering } from './metering/metering.js';
import { recordSwept } from './metering/swept.js';
import type { MeteringDeps } from './metering/types.js';
import type { LocalMediaOptions } from './providers/local/media.js';
import { createUpstreamAccounts } from './routing/accounts.js';
import { createFallbacks } from './routing/fallback-models.js';
import { buildMediaProviders } from './routing/media-adapters.js';
import { createUpstreamPool } from './routing/pool.js';
import { buildProviderRegistry, upstreamHttpFor } from './routing/registry.js';
import { createUpstreamModels } from './routing/upstream-models.js';
import { streamText, type OpenSse } from './text/stream.js';
import { createTextGateway } from './text/text.js';
import type { CallOptions, TextBody } from './text/types.js';

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
  /** The plan's `dailyRequests` (`createDailyRequestLimit`); without it requests are not counted. */
  dailyRequests?: Pick<DailyRequestLimit, 'admit'>;
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

/**
 * The AI gateway, built from its parts: the adapters and the upstream-account pool (routing/), the Idempotency-Keys
 * and the metering (metering/), the text and embeddings gateways (text/, embeddings/). The media gateway is built
 * beside it from `pool`, `mediaAdapters`, `metering` and `idempotency` (media/).
 */
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
  const textDeps = { ...deps, pool, metering, fallbacks, idempotency };

  return {
    pool,
    /** Operators' view and changes of the upstream accounts (admin API). */
    accounts,
    idempotency,
    metering,
    /** The sweeper closed a reservation a dead process left: its usage record, and its Idempotency-Key follows (swept.ts). */
    recordSwept: (tx: Tx, swept: SweptReservation) => recordSwept({ usage: deps.usage, keys: deps.keys, idempotency }, tx, swept),
    /** Operators' fallback models per model (the admin routes in surfaces/fallbacks.routes.ts). */
    fallbacks,
    /** `Idempotency-Key` for any /v1/ai/* call: a repeat with the same body gets the stored answer, uncharged. */
    once: <T extends Record<string, unknown>>(
      principal: Principal,
      options: CallOptions,
      route: string,
      body: unknown,
      run: (request: MeteredRequest) => Promise<T>,
    ): Promise<Replayable<T>> => once(idempotency, principal, options, route, body, run),
    /** Media adapters by provider slug (the media gateway calls them through `pool`). */
    mediaAdapters: media.adapters,
    /** `POST /v1/ai/embeddings` and `/openai/v1/embeddings` (embeddings/embeddings.ts). */
    embeddings: createEmbeddingsGateway({ ...deps, pool, metering, fallbacks, idempotency }),
    /** What each provider lists as served, asked with its accounts (the catalog check; read-only). */
    upstreamModels: createUpstreamModels({ db, registry, pool, http }),
    /** `POST /v1/ai/text` (`text`) and `POST /v1/ai/enhance/prompt` (`enhancePrompt`): text/text.ts. */
    ...createTextGateway(textDeps),
    /** `stream: true` on the text routes: server-sent events (text/stream.ts). */
    streamText: (principal: Principal, body: TextBody, options: CallOptions & { open: OpenSse }) => streamText(textDeps, principal, body, options),

    /** Registers the upstream accounts and checks their credentials (providers become ACTIVE, DEGRADED or INACTIVE). */
    async start(): Promise<void> {
      await pool.start();
    },

    /** Writes buffered upstream spend; call before the database closes. */
    async stop(): Promise<void> {
      await pool.stop();
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
