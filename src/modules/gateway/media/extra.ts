import { badRequest } from '../../../platform/http/errors.js';
import { PRICE_UNITS, type GatewayModel, type PriceOptions } from '../../catalog/service.js';
import { checkValue, descriptorOf, type Descriptor } from './controls.js';
import type { ExtraKeys } from '../providers/media/media-types.js';

/** The catalog's price of one value of an option, or null when it lists none (only known, non-negative units count). */
function priceOfValue(descriptor: Descriptor, value: unknown): PriceOptions | null {
  const listed = descriptor.prices?.[String(value)];
  if (!listed || typeof listed !== 'object') return null;
  const price: PriceOptions = {};
  for (const unit of PRICE_UNITS) {
    const amount = (listed as Record<string, unknown>)[unit];
    if (typeof amount === 'number' && Number.isFinite(amount) && amount >= 0) price[unit] = amount;
  }
  return Object.keys(price).length > 0 ? price : null;
}

/**
 * A request's `extra` against what the model's adapter sends upstream (`declared`) and what the model's catalog row
 * allows (`capabilities.extra`): a key missing from either is refused, and a value must fit both. Returns the price
 * units a priced option changes (null: the model's own prices apply). Called before anything is reserved.
 */
export function checkExtra(model: GatewayModel, declared: ExtraKeys | undefined, extra: Record<string, unknown>): PriceOptions | null {
  const taken = Object.keys(declared ?? {}).filter((key) => descriptorOf(model.capabilities.extra, key));
  let priced: { key: string; price: PriceOptions } | null = null;
  for (const [key, value] of Object.entries(extra)) {
    const field = `extra.${key}`;
    const own = declared?.[key];
    const descriptor = descriptorOf(model.capabilities.extra, key);
    if (!own || !descriptor) {
      throw badRequest(`${field} is not taken by model ${model.slug}; it takes: ${taken.join(', ') || 'no extra keys'}.`, [
        { field, message: 'not taken by this model' },
      ]);
    }
    checkValue(model, field, own, value);
    checkValue(model, field, descriptor, value);
    // The model's own price is for the default value; any other value of a priced option needs its own price.
    if (!own.priced || value === descriptor.default) continue;
    const price = priceOfValue(descriptor, value);
    if (!price) {
      const sold = descriptor.default === undefined ? 'its default' : JSON.stringify(descriptor.default);
      throw badRequest(`${field} ${JSON.stringify(value)} has no price for model ${model.slug}: it is sold at ${sold} only.`, [
        { field, message: 'not priced for this model' },
      ]);
    }
    if (priced) {
      throw badRequest(`extra.${priced.key} and ${field} both change the price of model ${model.slug}; give only one of them.`, [
        { field, message: 'only one priced option at a time' },
      ]);
    }
    priced = { key, price };
  }
  return priced?.price ?? null;
}
