import type { ModelType, PriceUnit } from '../../db/schema/catalog.js';
import type { plans } from '../../db/schema/plans.js';
import type { CatalogSnapshot, ModelEntry } from '../catalog/service.js';
import type { PlansSnapshot } from './snapshot.js';

type PlanRow = typeof plans.$inferSelect;

export interface ModelAccessItem {
  id: string;
  slug: string;
  displayName: string;
  provider: { slug: string; name: string };
  unit: PriceUnit | null;
  tokensPerUnit: number | null;
}

export interface ModelAccessGroup {
  kind: ModelType;
  count: number;
  models: ModelAccessItem[];
}

const TYPE_ORDER: ModelType[] = ['TEXT', 'IMAGE', 'VIDEO', 'AUDIO', 'EMBEDDING', 'MULTIMODAL'];
const PRIMARY_UNITS: Record<ModelType, PriceUnit[]> = {
  TEXT: ['1m_output_tokens', '1m_input_tokens'],
  MULTIMODAL: ['1m_output_tokens', '1m_input_tokens'],
  EMBEDDING: ['1m_input_tokens'],
  IMAGE: ['image', 'generation'],
  VIDEO: ['second', 'generation', 'minute'],
  AUDIO: ['1k_chars', 'minute', 'generation', 'second'],
};

/** The unit a model is mainly billed by and its token price (what plan model lists show). */
export function primaryRate(entry: ModelEntry): { unit: PriceUnit | null; tokensPerUnit: number | null } {
  for (const unit of PRIMARY_UNITS[entry.row.type]) {
    const tokens = entry.rates[unit];
    if (tokens !== undefined) return { unit, tokensPerUnit: tokens };
  }
  return { unit: null, tokensPerUnit: null };
}

export function groupByKind(entries: ModelEntry[]): ModelAccessGroup[] {
  const groups = new Map<ModelType, ModelAccessItem[]>();
  for (const entry of entries) {
    const items = groups.get(entry.row.type) ?? [];
    items.push({
      id: entry.row.id,
      slug: entry.row.slug,
      displayName: entry.row.displayName,
      provider: { slug: entry.provider.slug, name: entry.provider.name },
      ...primaryRate(entry),
    });
    groups.set(entry.row.type, items);
  }
  return TYPE_ORDER.filter((kind) => groups.has(kind)).map((kind) => ({ kind, count: groups.get(kind)!.length, models: groups.get(kind)! }));
}

/** The models a plan allows (retired ones left out) and the ones of those the catalog serves now. */
export function modelsOfPlan(snap: PlansSnapshot, cat: CatalogSnapshot, plan: PlanRow): { allowed: ModelEntry[]; servable: ModelEntry[] } {
  const allowed: ModelEntry[] = [];
  if (plan.allModels) {
    for (const entry of cat.bySlug.values()) if (entry.row.availability !== 'RETIRED') allowed.push(entry);
  } else {
    for (const id of snap.lists.get(plan.id) ?? []) {
      const entry = cat.byId.get(id);
      if (entry && entry.row.availability !== 'RETIRED') allowed.push(entry);
    }
  }
  return { allowed, servable: cat.listed.filter((e) => plan.allModels || snap.lists.get(plan.id)?.has(e.row.id)) };
}

/** A plan as the public listing shows it: models by kind, features, and the channels it can be paid with now. */
export async function planView(plan: PlanRow, snap: PlansSnapshot, cat: CatalogSnapshot, live: string[]) {
  const { allowed, servable } = modelsOfPlan(snap, cat, plan);
  const policy = plan.allowedChannels.length > 0 ? plan.allowedChannels : live;
  return {
    id: plan.id,
    slug: plan.slug,
    name: plan.name,
    description: plan.description,
    interval: plan.interval,
    priceCents: plan.priceCents,
    currency: plan.currency,
    trialDays: plan.trialDays,
    tokenAllowance: plan.tokenAllowance,
    sortOrder: plan.sortOrder,
    limits: { ...plan.limits, tokensPerCycle: plan.tokenAllowance },
    features: {
      ...plan.features,
      signupDefault: plan.features.signupDefault === true,
      apiAccess: plan.features.apiAccess === true,
      modelAccess: groupByKind(servable),
    },
    allowedModelIds: allowed.map((e) => e.row.id),
    servableModelIds: servable.map((e) => e.row.id),
    allowedChannels: plan.allowedChannels,
    // A free plan has nothing to pay, so no channel is offered for it.
    payableWith: plan.priceCents > 0 ? policy.filter((slug) => live.includes(slug)) : [],
  };
}
