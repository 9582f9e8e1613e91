import { eq } from 'drizzle-orm';
import { settings } from '../../db/schema/settings.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { DEFAULT_PRICING_SETTINGS, type PricingSettings } from './pricing.js';

export const PRICING_SETTINGS_KEY = 'billing.pricing';

/** The credit pricing operators set (`GET/PUT /v1/admin/credits/pricing`). */
export interface CreditPricing {
  tokenValueCents: number;
  tokenValueTokens: number;
  tokensPerCredit: number;
  currency: string;
  topUpEnabled: boolean;
}
export type CreditPricingPatch = Partial<Pick<CreditPricing, 'tokenValueCents' | 'tokenValueTokens' | 'tokensPerCredit' | 'topUpEnabled'>>;

export const creditPricingOf = (s: PricingSettings): CreditPricing => ({
  tokenValueCents: s.tokenValueCents,
  tokenValueTokens: s.tokenValueTokens,
  tokensPerCredit: s.tokensPerCredit,
  currency: s.currency,
  topUpEnabled: s.topUpEnabled,
});

const positiveInt = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value) && value > 0;

/** Stored pricing settings over the defaults; a stored value that is not valid keeps the default. */
export function pricingSettingsFrom(stored: Record<string, unknown> | undefined): PricingSettings {
  const result: PricingSettings = { ...DEFAULT_PRICING_SETTINGS, fxToBdt: { ...DEFAULT_PRICING_SETTINGS.fxToBdt } };
  if (!stored) return result;
  if (positiveInt(stored.tokenValueCents)) result.tokenValueCents = stored.tokenValueCents;
  if (positiveInt(stored.tokenValueTokens)) result.tokenValueTokens = stored.tokenValueTokens;
  if (positiveInt(stored.tokensPerCredit)) result.tokensPerCredit = stored.tokensPerCredit;
  if (typeof stored.topUpEnabled === 'boolean') result.topUpEnabled = stored.topUpEnabled;
  if (stored.fxToBdt && typeof stored.fxToBdt === 'object') {
    for (const [currency, rate] of Object.entries(stored.fxToBdt as Record<string, unknown>)) {
      if (/^[A-Z]{3}$/.test(currency) && typeof rate === 'number' && rate > 0 && Number.isFinite(rate)) result.fxToBdt[currency] = rate;
    }
  }
  result.fxToBdt.BDT = 1;
  return result;
}

export async function loadPricingSettings(db: DbOrTx): Promise<PricingSettings> {
  const [row] = await db.select({ value: settings.value }).from(settings).where(eq(settings.key, PRICING_SETTINGS_KEY));
  return pricingSettingsFrom(row?.value);
}

/** Writes (part of) the pricing settings; the values are validated by `pricingSettingsFrom` when read. */
export async function savePricingSettings(db: DbOrTx, patch: Partial<PricingSettings>, now: Date, updatedBy: string | null = null): Promise<PricingSettings> {
  const current = await loadPricingSettings(db);
  const next = pricingSettingsFrom({ ...current, ...patch, fxToBdt: { ...current.fxToBdt, ...(patch.fxToBdt ?? {}) } });
  await db
    .insert(settings)
    .values({ key: PRICING_SETTINGS_KEY, value: next as unknown as Record<string, unknown>, updatedAt: now, updatedBy })
    .onConflictDoUpdate({ target: settings.key, set: { value: next as unknown as Record<string, unknown>, updatedAt: now, updatedBy } });
  return next;
}
