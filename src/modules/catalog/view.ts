import type { ModelPricing, PriceUnit, models, providers } from '../../db/schema/catalog.js';
import type { Capabilities } from './capabilities.js';
import type { PricingSettings } from './pricing.js';

/** What a model's view is derived from (the snapshot's entry before its view is attached). */
export interface ModelViewSource {
  row: typeof models.$inferSelect;
  provider: typeof providers.$inferSelect;
  capabilities: Capabilities;
  rates: Partial<Record<PriceUnit, number>>;
}

/** The public Model resource, without the caller-specific `allowed` and `availableOn`. */
export interface ModelView {
  id: string;
  slug: string;
  displayName: string;
  type: string;
  status: string;
  capabilities: Capabilities;
  pricing: ModelPricing & { unit: 'PROVIDER_COST_MINOR'; note: string };
  cost: { unit: 'credits'; tokensPerCredit: number; tokensPerUnit: Partial<Record<PriceUnit, number>>; creditsPerUnit: Partial<Record<PriceUnit, number>> };
  maxContextTokens: number | null;
  maxOutputTokens: number | null;
  description: string | null;
  inputModalities: string[];
  outputModalities: string[];
  features: string[];
  availability: 'AVAILABLE' | 'RETIRING';
  provider: { slug: string; name: string; status: string };
}

/** Credits a per-unit token rate stands for, rounded up to 2 decimals (a price is never understated). */
const creditsPerUnit = (tokens: number, tokensPerCredit: number) => Math.ceil((tokens * 100) / tokensPerCredit) / 100;

export function toModelView(entry: ModelViewSource, settings: PricingSettings): ModelView {
  const { row, provider } = entry;
  const credits: Partial<Record<PriceUnit, number>> = {};
  for (const [unit, tokens] of Object.entries(entry.rates) as [PriceUnit, number][]) credits[unit] = creditsPerUnit(tokens, settings.tokensPerCredit);
  return {
    id: row.id,
    slug: row.slug,
    displayName: row.displayName,
    type: row.type,
    status: row.status,
    capabilities: entry.capabilities,
    pricing: {
      ...(row.pricing ?? { currency: 'USD' }),
      unit: 'PROVIDER_COST_MINOR',
      note: row.pricing?.note ?? 'Provider cost per unit in minor units of the currency, for reference only',
    },
    cost: { unit: 'credits', tokensPerCredit: settings.tokensPerCredit, tokensPerUnit: entry.rates, creditsPerUnit: credits },
    maxContextTokens: row.maxContextTokens,
    maxOutputTokens: row.maxOutputTokens,
    description: row.description,
    inputModalities: row.inputModalities,
    outputModalities: row.outputModalities,
    features: row.features,
    availability: row.availability === 'RETIRING' ? 'RETIRING' : 'AVAILABLE',
    provider: { slug: provider.slug, name: provider.name, status: provider.status },
  };
}
