import { eq } from 'drizzle-orm';
import {
  models,
  providers,
  type CapabilityBlock,
  type ModelAvailability,
  type ModelFeature,
  type ModelPricing,
  type ModelStatus,
  type ModelType,
  type ProviderStatus,
} from '../../db/schema/catalog.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Db } from '../../platform/db/database.js';
import { notFound } from '../../platform/http/errors.js';
import { decodeCursor, encodeCursor } from '../../platform/http/pagination.js';
import type { AuditWriter } from '../audit/service.js';
import type { CatalogSnapshot, ModelEntry, ModelRow, ProviderRow } from './snapshot.js';

export interface AdminModelQuery {
  limit: number;
  cursor?: string;
  status?: ModelStatus;
  availability?: ModelAvailability;
  provider?: string;
  type?: ModelType;
  /** Part of the slug or display name, case-insensitive. */
  q?: string;
}

/** What an operator may change on a model; `capabilityOverride` replaces the stored override (merged over the defaults). */
export interface ModelPatch {
  status?: ModelStatus;
  availability?: ModelAvailability;
  displayName?: string;
  description?: string | null;
  features?: ModelFeature[];
  maxContextTokens?: number | null;
  maxOutputTokens?: number | null;
  pricing?: ModelPricing | null;
  capabilityOverride?: CapabilityBlock;
}

/** The stored fields of a model an operator can change: what the audit trail keeps before and after. */
const storedModel = (row: ModelRow) => ({
  slug: row.slug,
  status: row.status,
  availability: row.availability,
  displayName: row.displayName,
  description: row.description,
  features: row.features,
  maxContextTokens: row.maxContextTokens,
  maxOutputTokens: row.maxOutputTokens,
  pricing: row.pricing,
  capabilityOverride: row.capabilityOverride,
});

const storedProvider = (row: ProviderRow) => ({ slug: row.slug, name: row.name, status: row.status });

/** A model as operators see it: every status, the stored override next to the merged capabilities, and why it is not served. */
export function adminModelView(entry: ModelEntry) {
  return {
    ...entry.view,
    status: entry.row.status,
    availability: entry.row.availability,
    upstreamModel: entry.row.upstreamModel,
    pricing: entry.row.pricing,
    capabilityOverride: entry.row.capabilityOverride,
    listed: entry.listed,
    unavailableReason: entry.unavailableReason,
    seedManaged: entry.row.seedManaged,
    updatedAt: entry.row.updatedAt.toISOString(),
  };
}

/**
 * The catalog's operator side: every model whatever its status, model edits and provider statuses. Each change
 * commits with its audit row; the caller's `changed` then drops the catalog on every instance, so the public
 * listing shows it at once.
 */
export function createCatalogAdmin(deps: { db: Db; clock: Clock; snapshot: () => Promise<CatalogSnapshot>; changed: () => Promise<void> }) {
  const { db, clock, snapshot, changed } = deps;

  async function entryById(id: string): Promise<ModelEntry> {
    const entry = (await snapshot()).byId.get(id);
    if (!entry) throw notFound(`No model with id "${id}". See GET /v1/admin/models.`);
    return entry;
  }

  return {
    /** Every model (any status), ordered by slug, cursor-paged. */
    async listModels(query: AdminModelQuery) {
      const after = query.cursor ? String(decodeCursor(query.cursor).sort) : null;
      const q = query.q?.toLowerCase();
      const matching = [...(await snapshot()).bySlug.values()]
        .filter(
          (e) =>
            (!query.status || e.row.status === query.status) &&
            (!query.availability || e.row.availability === query.availability) &&
            (!query.provider || e.provider.slug === query.provider) &&
            (!query.type || e.row.type === query.type) &&
            (!q || e.row.slug.toLowerCase().includes(q) || e.row.displayName.toLowerCase().includes(q)) &&
            (after === null || e.row.slug > after),
        )
        .sort((a, b) => (a.row.slug < b.row.slug ? -1 : 1));
      const items = matching.slice(0, query.limit);
      const last = items.at(-1);
      return {
        items: items.map(adminModelView),
        nextCursor: matching.length > query.limit && last ? encodeCursor({ sort: last.row.slug, id: last.row.id }) : null,
      };
    },

    async getModel(id: string) {
      return adminModelView(await entryById(id));
    },

    /** Changes a model; the seed stops refreshing it (an operator's edit wins over the built-in catalog). */
    async updateModel(id: string, patch: ModelPatch, audit: AuditWriter, reason: string | null = null) {
      await entryById(id);
      await db.transaction(async (tx) => {
        const [before] = await tx.select().from(models).where(eq(models.id, id)).for('update');
        if (!before) throw notFound(`No model with id "${id}".`);
        const [after] = await tx
          .update(models)
          .set({ ...patch, seedManaged: false, updatedAt: clock.now() })
          .where(eq(models.id, id))
          .returning();
        await audit({ action: 'model.update', targetType: 'model', targetId: id, before: storedModel(before), after: storedModel(after!), reason }, tx);
      });
      await changed();
      return adminModelView(await entryById(id));
    },

    /** Providers with their status and how many models each has. */
    async listProviders() {
      const snap = await snapshot();
      const counts = new Map<string, { models: number; listed: number }>();
      for (const entry of snap.bySlug.values()) {
        const count = counts.get(entry.provider.slug) ?? { models: 0, listed: 0 };
        count.models++;
        if (entry.listed) count.listed++;
        counts.set(entry.provider.slug, count);
      }
      return [...snap.providersBySlug.values()]
        .sort((a, b) => (a.slug < b.slug ? -1 : 1))
        .map((p) => ({
          id: p.id,
          slug: p.slug,
          name: p.name,
          status: p.status,
          builtIn: p.builtIn,
          website: p.website,
          models: counts.get(p.slug)?.models ?? 0,
          listedModels: counts.get(p.slug)?.listed ?? 0,
          updatedAt: p.updatedAt.toISOString(),
        }));
    },

    /**
     * An operator sets a provider's status. DISABLED holds (the pool's health updates never lift it); ACTIVE, DEGRADED
     * and INACTIVE are starting points that the pool's health updates then move as calls succeed or fail.
     */
    async setProviderStatus(slug: string, status: ProviderStatus, audit: AuditWriter, reason: string | null = null) {
      await db.transaction(async (tx) => {
        const [before] = await tx.select().from(providers).where(eq(providers.slug, slug)).for('update');
        if (!before) throw notFound(`No provider "${slug}". See GET /v1/admin/providers.`);
        const [after] = await tx.update(providers).set({ status, updatedAt: clock.now() }).where(eq(providers.slug, slug)).returning();
        await audit(
          {
            action: 'provider.status.change',
            targetType: 'provider',
            targetId: before.id,
            before: storedProvider(before),
            after: storedProvider(after!),
            reason,
          },
          tx,
        );
      });
      await changed();
    },
  };
}

export type CatalogAdmin = ReturnType<typeof createCatalogAdmin>;
