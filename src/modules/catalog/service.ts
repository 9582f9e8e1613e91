import { and, eq, gt, isNull, or } from 'drizzle-orm';
import { models, providers, type ModelFeature, type ModelPricing, type ModelType, type PriceUnit, type ProviderStatus } from '../../db/schema/catalog.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db } from '../../platform/db/database.js';
import type { EventBus } from '../../platform/events/event-bus.js';
import { createInvalidatingCache } from '../../platform/events/invalidating-cache.js';
import { AppError, badRequest, notFound } from '../../platform/http/errors.js';
import type { Capabilities } from './capabilities.js';
import { imageTokenTable, imageTokenUsage, type ImageTokenRequest } from './image-tokens.js';
import { priceUnits, type PricingSettings, type UsageUnits } from './pricing.js';
import { creditPricingOf, loadPricingSettings, PRICING_SETTINGS_KEY, savePricingSettings, type CreditPricing, type CreditPricingPatch } from './settings.js';
import type { AuditWriter } from '../audit/service.js';
import { seedCatalog } from './seed.js';
import { createCatalogAdmin } from './admin.js';
import { loadCatalogSnapshot, type CatalogSnapshot, type ModelEntry } from './snapshot.js';

export type { UsageUnits } from './pricing.js';
export { creditPricingOf, type CreditPricing, type CreditPricingPatch } from './settings.js';
export { imageTokenTable, outputTokensPerImage, promptTokenBound, type ImageTokenTable } from './image-tokens.js';
export type { CatalogSnapshot, ModelEntry } from './snapshot.js';
export type { AdminModelQuery, ModelPatch } from './admin.js';
export { MODEL_TYPES, MODEL_STATUSES, MODEL_AVAILABILITIES, MODEL_FEATURES, PROVIDER_STATUSES, PRICE_UNITS } from '../../db/schema/catalog.js';

/** What the gateway needs to call a model. */
export interface GatewayModel {
  id: string;
  slug: string;
  displayName: string;
  type: ModelType;
  providerId: string;
  providerSlug: string;
  providerStatus: ProviderStatus;
  /** The provider's own model name, sent upstream. */
  upstreamModel: string;
  features: ModelFeature[];
  capabilities: Capabilities;
  maxContextTokens: number | null;
  maxOutputTokens: number | null;
  status: 'ACTIVE' | 'BETA' | 'DISABLED';
  availability: 'AVAILABLE' | 'RETIRING' | 'RETIRED';
  pricing: ModelPricing | null;
}

/** Price units that replace the model's own for one request (its options' prices), in the model's pricing currency. */
export type PriceOptions = Partial<Record<PriceUnit, number>>;

export type EstimateRequest =
  | { kind: 'text'; inputTokens: number; maxOutputTokens: number }
  /** Token-billed image models (`image-tokens.ts`) also read the quality, size, prompt and source images. */
  | ({ kind: 'image' } & ImageTokenRequest)
  | { kind: 'video'; seconds: number }
  | { kind: 'speech'; characters: number }
  | { kind: 'music' };

export interface ModelFilter {
  type?: ModelType;
  provider?: string;
  capability?: ModelFeature;
}

export interface CatalogServiceDeps {
  db: Db;
  clock: Clock;
  /** Cross-instance cache invalidation; without it only this instance's writes invalidate. */
  events?: EventBus;
  /** A safety net for changes made behind the service's back (default 30 s). */
  cacheTtlMs?: number;
}

const SNAPSHOT = 'snapshot';

const toGatewayModel = (entry: ModelEntry): GatewayModel => ({
  id: entry.row.id,
  slug: entry.row.slug,
  displayName: entry.row.displayName,
  type: entry.row.type,
  providerId: entry.provider.id,
  providerSlug: entry.provider.slug,
  providerStatus: entry.provider.status,
  upstreamModel: entry.row.upstreamModel,
  features: entry.row.features,
  capabilities: entry.capabilities,
  maxContextTokens: entry.row.maxContextTokens,
  maxOutputTokens: entry.row.maxOutputTokens,
  status: entry.row.status,
  availability: entry.row.availability,
  pricing: entry.row.pricing,
});

function filterListed(snap: CatalogSnapshot, filter: ModelFilter): ModelEntry[] {
  if (!filter.type && !filter.provider && !filter.capability) return snap.listed;
  return snap.listed.filter(
    (e) =>
      (!filter.type || e.row.type === filter.type) &&
      (!filter.provider || e.provider.slug === filter.provider) &&
      (!filter.capability || e.row.features.includes(filter.capability)),
  );
}

const modelUnavailable = (slug: string, reason: string) =>
  new AppError(503, 'MODEL_UNAVAILABLE', `The model "${slug}" cannot be used right now: ${reason} Choose a different model from GET /v1/models.`, {
    model: slug,
    reason,
  });

/** The model catalog: providers, models, capabilities, prices and the estimator the gateway reserves with. */
export function createCatalogService(deps: CatalogServiceDeps) {
  const { db, clock, events } = deps;
  // The whole catalog is one entry: every write drops it on every instance (NOTIFY `cache_catalog`).
  const cache = createInvalidatingCache<CatalogSnapshot>({
    name: 'catalog',
    bus: events,
    ttlMs: deps.cacheTtlMs ?? 30_000,
    load: () => loadCatalogSnapshot(db),
  });
  const snapshot = (): Promise<CatalogSnapshot> => cache.get(SNAPSHOT);
  const invalidate = (): void => cache.forget(SNAPSHOT);
  // Runs after the write committed: a failed NOTIFY must not fail it (other instances catch up within the TTL).
  const changed = (): Promise<void> => cache.changed(SNAPSHOT).catch(() => undefined);

  function price(snap: CatalogSnapshot, model: Pick<GatewayModel, 'id' | 'slug'>, usage: UsageUnits, options?: PriceOptions) {
    const entry = snap.byId.get(model.id) ?? snap.bySlug.get(model.slug);
    if (!entry) throw notFound(`No model with slug "${model.slug}".`);
    const pricing = options && entry.row.pricing ? { ...entry.row.pricing, ...options } : entry.row.pricing;
    const result = priceUnits(pricing, usage, snap.settings);
    if (!result.ok) throw modelUnavailable(entry.row.slug, `it has no ${result.missing.replace(/^an? /, '')} for this kind of use.`);
    return result.quote;
  }

  function usageFor(entry: ModelEntry, request: EstimateRequest): UsageUnits {
    const type = entry.row.type;
    const wrongKind = (wanted: string) =>
      badRequest(`The model "${entry.row.slug}" is a ${type} model; a ${request.kind} estimate needs ${wanted}.`, { model: entry.row.slug, type });
    switch (request.kind) {
      case 'text':
        if (type !== 'TEXT' && type !== 'MULTIMODAL' && type !== 'EMBEDDING') throw wrongKind('a TEXT, MULTIMODAL or EMBEDDING model');
        return { inputTokens: request.inputTokens, outputTokens: type === 'EMBEDDING' ? 0 : request.maxOutputTokens };
      case 'image': {
        if (type !== 'IMAGE') throw wrongKind('an IMAGE model');
        const table = imageTokenTable(entry.capabilities);
        return table ? imageTokenUsage(table, request) : { images: request.count };
      }
      case 'video':
        if (type !== 'VIDEO') throw wrongKind('a VIDEO model');
        return entry.row.pricing?.second !== undefined || entry.row.pricing?.minute !== undefined ? { seconds: request.seconds } : { generations: 1 };
      case 'speech':
        if (type !== 'AUDIO' || !entry.row.features.includes('TTS')) throw wrongKind('a speech (TTS) model');
        return { characters: request.characters };
      case 'music':
        if (type !== 'AUDIO' || !entry.row.features.includes('MUSIC')) throw wrongKind('a music model');
        return { generations: 1 };
    }
  }

  return {
    /** Operators' reads and changes (admin API): every model, model edits, provider statuses; each change audited. */
    admin: createCatalogAdmin({ db, clock, snapshot, changed }),

    /** Seeds the catalog on first start (and when the seed changes); fast and idempotent. */
    async seed(): Promise<{ seeded: boolean }> {
      const result = await seedCatalog(db, clock.now());
      if (result.seeded) await changed();
      return result;
    },

    snapshot,
    /** Drops this instance's cache (other instances hear about writes through the event bus). */
    invalidate,
    async pricingSettings(): Promise<PricingSettings> {
      return (await snapshot()).settings;
    },

    async updatePricingSettings(patch: Partial<PricingSettings>, updatedBy: string | null = null): Promise<PricingSettings> {
      const next = await savePricingSettings(db, patch, clock.now(), updatedBy);
      await changed();
      return next;
    },

    /**
     * `PUT /v1/admin/credits/pricing`: token value, tokens per credit and the top-up master switch, written with its
     * audit row (before and after) in one transaction; every instance drops its cached settings once it commits.
     */
    async adminUpdateCreditPricing(patch: CreditPricingPatch, audit: AuditWriter, updatedBy: string | null): Promise<CreditPricing> {
      const result = await db.transaction(async (tx) => {
        const before = creditPricingOf(await loadPricingSettings(tx));
        const after = creditPricingOf(await savePricingSettings(tx, patch, clock.now(), updatedBy));
        await audit({ action: 'credits.pricing.update', targetType: 'settings', targetId: PRICING_SETTINGS_KEY, before, after }, tx);
        return after;
      });
      await changed();
      return result;
    },

    /** Listed models (status ACTIVE/BETA, provider ACTIVE/DEGRADED), ordered by type then slug. */
    async list(filter: ModelFilter = {}): Promise<ModelEntry[]> {
      return filterListed(await snapshot(), filter);
    },
    /** The listed models of a given snapshot that match the filter. */
    filter: filterListed,

    async getById(id: string): Promise<ModelEntry | undefined> {
      return (await snapshot()).byId.get(id);
    },

    async getBySlug(slug: string): Promise<ModelEntry | undefined> {
      return (await snapshot()).bySlug.get(slug);
    },

    /** 404 NOT_FOUND for an unknown slug; 503 MODEL_UNAVAILABLE when the model exists but cannot be served. */
    async resolveForGateway(slug: string): Promise<GatewayModel> {
      const snap = await snapshot();
      // A vendor's own id (`gpt-5`) names our `openai/gpt-5`: frameworks switch on reasoning options by that id.
      const exact = snap.bySlug.get(slug);
      const bare = exact || slug.includes('/') ? undefined : snap.byBareName.get(slug);
      if (bare === null)
        throw notFound(`More than one provider serves a model named "${slug}". Name it with its provider, as GET /v1/models lists it (e.g. "openai/${slug}").`);
      const entry = exact ?? bare;
      if (!entry) throw notFound(`No model with slug "${slug}". Read model slugs from GET /v1/models.`);
      if (entry.unavailableReason) throw modelUnavailable(slug, entry.unavailableReason);
      return toGatewayModel(entry);
    },

    async setProviderStatus(providerSlug: string, status: ProviderStatus): Promise<void> {
      const updated = await db
        .update(providers)
        .set({ status, updatedAt: clock.now() })
        .where(eq(providers.slug, providerSlug))
        .returning({ id: providers.id });
      if (updated.length === 0) throw notFound(`No provider with slug "${providerSlug}".`);
      await changed();
    },

    /**
     * Records the most images one call of a model returned after it under-delivered (`capabilities.maxBatch`); only
     * ever lowers a recorded value, so concurrent calls agree. Returns whether it changed.
     */
    async recordMaxBatch(modelId: string, maxBatch: number): Promise<boolean> {
      if (!Number.isInteger(maxBatch) || maxBatch < 1) return false;
      const updated = await db
        .update(models)
        .set({ maxBatch, updatedAt: clock.now() })
        .where(and(eq(models.id, modelId), or(isNull(models.maxBatch), gt(models.maxBatch, maxBatch))))
        .returning({ id: models.id });
      if (updated.length > 0) await changed();
      return updated.length > 0;
    },

    /**
     * Tokens one generation will reserve; the same function backs POST /v1/credits/estimate. `options`: the price units
     * the request's priced options change (see `ControlDescriptor.prices`).
     */
    async estimateTokens(model: Pick<GatewayModel, 'id' | 'slug'>, request: EstimateRequest, options?: PriceOptions): Promise<number> {
      const snap = await snapshot();
      const entry = snap.byId.get(model.id) ?? snap.bySlug.get(model.slug);
      if (!entry) throw notFound(`No model with slug "${model.slug}".`);
      return price(snap, model, usageFor(entry, request), options).tokens;
    },

    /** Tokens and provider cost of what a call actually used (with the price units its options changed). */
    async priceUsage(model: Pick<GatewayModel, 'id' | 'slug'>, usage: UsageUnits, options?: PriceOptions) {
      return price(await snapshot(), model, usage, options);
    },
  };
}

export type CatalogService = ReturnType<typeof createCatalogService>;
