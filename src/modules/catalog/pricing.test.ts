import { describe, expect, it } from 'vitest';
import { DEFAULT_PRICING_SETTINGS, creditsOf, isPriced, priceUnits, tokenRates, type PricingSettings } from './pricing.js';
import { pricingSettingsFrom } from './settings.js';
import { SEED_MODELS } from './seed-data.js';

const settings: PricingSettings = DEFAULT_PRICING_SETTINGS;
const tokens = (pricing: Parameters<typeof priceUnits>[0], usage: Parameters<typeof priceUnits>[1], s = settings) => {
  const result = priceUnits(pricing, usage, s);
  if (!result.ok) throw new Error(result.missing);
  return result.quote;
};

describe('provider cost to tokens', () => {
  it('charges ceil(cost in poisha × 1,000,000 / 1800) with the FX rate applied', () => {
    // 1M output tokens of a model at 60 US cents per 1M: 60 × 122 = 7320 poisha → 7320e6 / 1800 = 4,066,666.67 → 4,066,667.
    expect(tokens({ currency: 'USD', '1m_output_tokens': 60 }, { outputTokens: 1_000_000 }).tokens).toBe(4_066_667);
    // A BDT price needs no conversion: 18 BDT of cost is exactly 1,000,000 tokens.
    expect(tokens({ currency: 'BDT', image: 1800 }, { images: 1 }).tokens).toBe(1_000_000);
    expect(tokens({ currency: 'BDT', image: 1800 }, { images: 3 }).tokens).toBe(3_000_000);
  });

  it('rounds up once over the whole call, never down, and returns integers', () => {
    // 1 input token at 15 cents per 1M: 15 × 122 / 1e6 poisha = 0.00183 poisha → 1.0167 tokens → 2.
    expect(tokens({ currency: 'USD', '1m_input_tokens': 15 }, { inputTokens: 1 }).tokens).toBe(2);
    const q = tokens({ currency: 'USD', '1m_input_tokens': 15, '1m_output_tokens': 60 }, { inputTokens: 1234, outputTokens: 567 });
    // (1234 × 15 + 567 × 60) / 1e6 cents × 122 poisha / 1800 × 1e6 = 52530 × 122 / 1800 = 3560.3 → 3561
    expect(q.tokens).toBe(3561);
    expect(Number.isInteger(q.tokens)).toBe(true);
    expect(tokens({ currency: 'USD', '1m_input_tokens': 15 }, {}).tokens).toBe(0);
  });

  it('prices fractions of a minor unit exactly (7.5 cents per 1M, 4.2 cents per image)', () => {
    expect(tokens({ currency: 'USD', '1m_input_tokens': 7.5 }, { inputTokens: 1_000_000 }).tokens).toBe(508_334); // 915 poisha
    expect(tokens({ currency: 'USD', image: 4.2 }, { images: 2 }).tokens).toBe(Math.ceil((8.4 * 122 * 1e6) / 1800));
  });

  it('prices video per second (fractions to the millisecond), speech per 1k characters or per minute, music per generation', () => {
    expect(tokens({ currency: 'USD', second: 10 }, { seconds: 8 }).tokens).toBe(Math.ceil((80 * 122 * 1e6) / 1800));
    expect(tokens({ currency: 'USD', second: 10 }, { seconds: 0.5 }).tokens).toBe(Math.ceil((5 * 122 * 1e6) / 1800));
    expect(tokens({ currency: 'USD', '1k_chars': 1.5 }, { characters: 2000 }).tokens).toBe(Math.ceil((3 * 122 * 1e6) / 1800));
    // Per-minute speech from seconds, and from characters at 15 characters a second (900 characters = 1 minute).
    expect(tokens({ currency: 'USD', minute: 1.5 }, { seconds: 120 }).tokens).toBe(Math.ceil((3 * 122 * 1e6) / 1800));
    expect(tokens({ currency: 'USD', minute: 1.5 }, { characters: 900 }).tokens).toBe(Math.ceil((1.5 * 122 * 1e6) / 1800));
    expect(tokens({ currency: 'USD', generation: 20 }, { generations: 1 }).tokens).toBe(Math.ceil((20 * 122 * 1e6) / 1800));
    // A generation price covers the length it produced.
    expect(tokens({ currency: 'USD', generation: 20 }, { generations: 1, seconds: 30 }).tokens).toBe(Math.ceil((20 * 122 * 1e6) / 1800));
  });

  it('reports the provider cost in cents (rounded half up) and in millionths of a cent', () => {
    const q = tokens({ currency: 'USD', '1m_input_tokens': 250, '1m_output_tokens': 1000 }, { inputTokens: 10_000, outputTokens: 2_000 });
    // 10k × 2.5/1e4 + 2k × 10/1e4 = 2.5 + 2 = 4.5 cents
    expect(q).toMatchObject({ providerCostCents: 5, providerCostMicros: 4_500_000, currency: 'USD' });
  });

  it('refuses usage the model has no price for, and a currency without an exchange rate', () => {
    expect(priceUnits({ currency: 'USD', '1m_input_tokens': 1 }, { images: 1 }, settings)).toEqual({ ok: false, missing: 'a price per image' });
    expect(priceUnits({ currency: 'USD', image: 1 }, { outputTokens: 5 }, settings)).toEqual({ ok: false, missing: 'a price per output token' });
    expect(priceUnits({ currency: 'USD', image: 1 }, { seconds: 5 }, settings)).toEqual({ ok: false, missing: 'a price per second' });
    expect(priceUnits({ currency: 'USD', second: 1 }, { generations: 1 }, settings)).toEqual({ ok: false, missing: 'a price per generation' });
    expect(priceUnits({ currency: 'JPY', image: 1 }, { images: 1 }, settings)).toEqual({ ok: false, missing: 'an exchange rate for JPY' });
    expect(priceUnits(null, { images: 1 }, settings)).toEqual({ ok: false, missing: 'a price' });
    expect(() => priceUnits({ currency: 'USD', image: 1 }, { images: -1 }, settings)).toThrow(RangeError);
  });

  it('follows the token value and FX settings', () => {
    const doubled = { ...settings, tokenValueCents: 3600 };
    expect(tokens({ currency: 'BDT', image: 1800 }, { images: 1 }, doubled).tokens).toBe(500_000);
    const fx = { ...settings, fxToBdt: { ...settings.fxToBdt, USD: 100 } };
    expect(tokens({ currency: 'USD', image: 18 }, { images: 1 }, fx).tokens).toBe(1_000_000);
  });
});

describe('token classes', () => {
  // Claude Haiku 4.5's list prices (US cents per 1M): input 100, cache read 10, cache write 125, output 500.
  const haiku = { currency: 'USD', '1m_input_tokens': 100, '1m_cached_input_tokens': 10, '1m_cache_write_tokens': 125, '1m_output_tokens': 500 };

  it('charges each class at its own price, summed exactly and rounded once', () => {
    // 10,000 input of which 9,000 cache reads and 500 cache writes; 200 output:
    // (500 × 100 + 9000 × 10 + 500 × 125 + 200 × 500) / 1e6 cents = 302,500 / 1e6 → × 122 / 1800 × 1e6 = 20,502.7 → 20,503.
    const usage = { inputTokens: 10_000, cachedInputTokens: 9_000, cacheWriteTokens: 500, outputTokens: 200 };
    expect(tokens(haiku, usage).tokens).toBe(20_503);
    expect(tokens(haiku, usage).tokens).toBeLessThan(tokens(haiku, { inputTokens: 10_000, outputTokens: 200 }).tokens);
  });

  it('bills a class without its own price at the fresh price, never free', () => {
    const plain = { currency: 'USD', '1m_input_tokens': 100, '1m_output_tokens': 500 };
    expect(tokens(plain, { inputTokens: 10_000, cachedInputTokens: 9_000, cacheWriteTokens: 500, outputTokens: 200, reasoningTokens: 150 })).toEqual(
      tokens(plain, { inputTokens: 10_000, outputTokens: 200 }),
    );
    // Reasoning at the output price unless the model lists its own.
    expect(tokens({ ...plain, '1m_reasoning_tokens': 250 }, { outputTokens: 200, reasoningTokens: 200 }).tokens).toBe(
      tokens({ currency: 'USD', '1m_output_tokens': 250 }, { outputTokens: 200 }).tokens,
    );
  });

  it('never counts a class beyond its total (a provider reporting more cached than input)', () => {
    expect(tokens(haiku, { inputTokens: 100, cachedInputTokens: 5_000 })).toEqual(tokens(haiku, { inputTokens: 100, cachedInputTokens: 100 }));
  });
});

describe('rates and helpers', () => {
  it('gives tokens per unit for every priced unit only', () => {
    expect(tokenRates({ currency: 'USD', '1m_input_tokens': 15, '1m_output_tokens': 60 }, settings)).toEqual({
      '1m_input_tokens': 1_016_667,
      '1m_output_tokens': 4_066_667,
    });
    expect(tokenRates({ currency: 'USD', minute: 1.5, '1k_chars': 3 }, settings)).toEqual({ minute: 101_667, '1k_chars': 203_334 });
    expect(tokenRates(null, settings)).toEqual({});
  });

  it('knows a model with no usable price', () => {
    expect(isPriced({ currency: 'USD' }, settings)).toBe(false);
    expect(isPriced({ currency: 'XYZ', image: 1 }, settings)).toBe(false);
    expect(isPriced({ currency: 'USD', image: 0.5 }, settings)).toBe(true);
    expect(isPriced(null, settings)).toBe(false);
  });

  it('rounds credits down to 2 decimals', () => {
    expect(creditsOf(12_345, 10_000)).toBe(1.23);
    expect(creditsOf(9_999, 10_000)).toBe(0.99);
    expect(creditsOf(0, 10_000)).toBe(0);
  });

  it('reads stored settings over the defaults and ignores invalid values', () => {
    expect(pricingSettingsFrom(undefined)).toEqual(DEFAULT_PRICING_SETTINGS);
    const read = pricingSettingsFrom({ tokenValueCents: 2000, tokensPerCredit: -5, fxToBdt: { USD: 120, eur: 1, GBP: 'x', BDT: 7 } });
    expect(read).toMatchObject({ tokenValueCents: 2000, tokensPerCredit: 10_000 });
    expect(read.fxToBdt).toEqual({ ...DEFAULT_PRICING_SETTINGS.fxToBdt, USD: 120, BDT: 1 });
  });
});

describe("the README's worked example (local/text, 46 tokens read, 88 written, maxTokens 100)", () => {
  const pricing = SEED_MODELS.find((m) => m.provider === 'local' && m.name === 'text')!.pricing;

  it('reserves 303 tokens, charges 270 and refunds 33, from the catalog price of 10 and 40 US cents per 1M', () => {
    expect(pricing).toMatchObject({ currency: 'USD', '1m_input_tokens': 10, '1m_output_tokens': 40 });
    const reserved = tokens(pricing, { inputTokens: 46, outputTokens: 100 }).tokens;
    const charged = tokens(pricing, { inputTokens: 46, outputTokens: 88 }).tokens;
    expect(reserved).toBe(303);
    expect(charged).toBe(270);
    expect(reserved - charged).toBe(33);
    expect(charged / settings.tokensPerCredit).toBe(0.027);
    expect(creditsOf(charged, settings.tokensPerCredit)).toBe(0.02); // balances show credits floored to two decimals
  });
});
