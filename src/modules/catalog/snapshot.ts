import { models, providers, type ModelType, type PriceUnit } from '../../db/schema/catalog.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { mergeCapabilities, type Capabilities } from './capabilities.js';
import { isPriced, tokenRates, type PricingSettings } from './pricing.js';
import { loadPricingSettings } from './settings.js';
import { toModelView, type ModelView } from './view.js';

export type ModelRow = typeof models.$inferSelect;
export type ProviderRow = typeof providers.$inferSelect;

/** One model with everything derived from it, computed once per catalog load (never per request). */
export interface ModelEntry {
  row: ModelRow;
  provider: ProviderRow;
  capabilities: Capabilities;
  rates: Partial<Record<PriceUnit, number>>;
  priced: boolean;
  /** Listed and servable: status ACTIVE/BETA, provider ACTIVE/DEGRADED, not retired, priced. */
  listed: boolean;
  /** Why the model cannot be served, or null. */
  unavailableReason: string | null;
  view: ModelView;
  /**
   * The view serialised once per catalog load, without its closing brace, so a listing appends the caller's
   * `allowed`/`availableOn` and never re-serialises hundreds of models per request. `meJson` omits provider.status.
   */
  jsonOpen: string;
  meJsonOpen: string;
}

export interface CatalogSnapshot {
  settings: PricingSettings;
  providersBySlug: Map<string, ProviderRow>;
  /** Every model, listed or not. */
  bySlug: Map<string, ModelEntry>;
  byId: Map<string, ModelEntry>;
  /**
   * Models by their name without the provider (`gpt-5` for `openai/gpt-5`), for clients that recognise a model only
   * by its vendor's own id; null where two providers serve the same name.
   */
  byBareName: Map<string, ModelEntry | null>;
  /** Listed models ordered by type then slug. */
  listed: ModelEntry[];
}

const TYPE_ORDER: ModelType[] = ['TEXT', 'IMAGE', 'VIDEO', 'AUDIO', 'EMBEDDING', 'MULTIMODAL'];

/** The model to use instead of a retired one (`flags.replacedBy`, set by the seed or an operator), or null. */
function replacementOf(row: ModelRow): string | null {
  const named = row.capabilityOverride.flags?.replacedBy;
  return typeof named === 'string' && named ? named : null;
}

function unavailableReason(row: ModelRow, provider: ProviderRow, priced: boolean): string | null {
  if (row.availability === 'RETIRED') {
    const replacement = replacementOf(row);
    return replacement ? `The model was retired by its provider; use "${replacement}" instead.` : 'The model was retired by its provider.';
  }
  if (row.status === 'DISABLED') return 'The model is disabled.';
  if (provider.status === 'INACTIVE') return `The ${provider.name} provider has no working credential.`;
  if (provider.status === 'DISABLED') return `The ${provider.name} provider is disabled.`;
  if (!priced) return 'The model has no price yet.';
  return null;
}

/** Loads the whole catalog in two queries (plus the settings row) and derives every model's entry. */
export async function loadCatalogSnapshot(db: DbOrTx): Promise<CatalogSnapshot> {
  const [providerRows, modelRows, settings] = await Promise.all([db.select().from(providers), db.select().from(models), loadPricingSettings(db)]);
  const providersById = new Map(providerRows.map((p) => [p.id, p]));
  const bySlug = new Map<string, ModelEntry>();
  const byId = new Map<string, ModelEntry>();
  const byBareName = new Map<string, ModelEntry | null>();
  const listed: ModelEntry[] = [];
  for (const row of modelRows) {
    const provider = providersById.get(row.providerId);
    if (!provider) continue;
    const priced = isPriced(row.pricing, settings);
    const reason = unavailableReason(row, provider, priced);
    const partial = {
      row,
      provider,
      capabilities: mergeCapabilities({
        type: row.type,
        features: row.features,
        maxOutputTokens: row.maxOutputTokens,
        maxBatch: row.maxBatch,
        providerSlug: provider.slug,
        providerOverrides: provider.capabilityDefaults,
        modelOverride: row.capabilityOverride,
      }),
      rates: tokenRates(row.pricing, settings),
      priced,
      listed: reason === null,
      unavailableReason: reason,
    };
    const view = toModelView(partial, settings);
    const { status: _providerStatus, ...meProvider } = view.provider;
    const entry: ModelEntry = {
      ...partial,
      view,
      jsonOpen: JSON.stringify(view).slice(0, -1),
      meJsonOpen: JSON.stringify({ ...view, provider: meProvider }).slice(0, -1),
    };
    bySlug.set(row.slug, entry);
    byId.set(row.id, entry);
    const bare = row.slug.startsWith(`${provider.slug}/`) ? row.slug.slice(provider.slug.length + 1) : null;
    if (bare) byBareName.set(bare, byBareName.has(bare) ? null : entry);
    if (entry.listed) listed.push(entry);
  }
  listed.sort((a, b) => TYPE_ORDER.indexOf(a.row.type) - TYPE_ORDER.indexOf(b.row.type) || (a.row.slug < b.row.slug ? -1 : a.row.slug > b.row.slug ? 1 : 0));
  return { settings, providersBySlug: new Map(providerRows.map((p) => [p.slug, p])), bySlug, byId, byBareName, listed };
}
