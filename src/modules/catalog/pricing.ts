import type { ModelPricing, PriceUnit } from '../../db/schema/catalog.js';

/**
 * Provider cost to tokens, in exact integer arithmetic.
 * Provider prices are minor units of their currency per unit (fractions allowed: 7.5 cents per 1M tokens);
 * the FX table turns them into poisha, and `tokenValueCents` poisha of provider cost buy `tokenValueTokens` tokens.
 * Tokens charged = ceil(cost in poisha × tokenValueTokens / tokenValueCents).
 */
export interface PricingSettings {
  /** Poisha (BDT minor units) of provider cost that `tokenValueTokens` tokens stand for (default 18 BDT). */
  tokenValueCents: number;
  tokenValueTokens: number;
  /** Tokens per customer credit (default 10,000). */
  tokensPerCredit: number;
  /** The currency token value is set in. */
  currency: 'BDT';
  /** BDT per one unit of each currency; every listed currency has minor units of 1/100. */
  fxToBdt: Record<string, number>;
  /** The top-up builder's master switch: off, quotes say so and orders are refused (400). */
  topUpEnabled: boolean;
}

export const DEFAULT_PRICING_SETTINGS: PricingSettings = {
  tokenValueCents: 1800,
  tokenValueTokens: 1_000_000,
  tokensPerCredit: 10_000,
  currency: 'BDT',
  fxToBdt: { BDT: 1, USD: 122, EUR: 142, GBP: 164 },
  topUpEnabled: true,
};

/** What one call used, in the units providers bill by. */
export interface UsageUnits {
  /** Every input token; the cached and cache-write ones below are parts of it, priced at their own rates. */
  inputTokens?: number;
  /** Every output token; the reasoning ones below are part of it. */
  outputTokens?: number;
  cachedInputTokens?: number;
  /** Every cache write, whatever its lifetime; the 1-hour ones below are part of it. */
  cacheWriteTokens?: number;
  /** Of `cacheWriteTokens`: written to a 1-hour cache (Anthropic's `ttl: "1h"`), which costs more than a 5-minute one. */
  cacheWrite1hTokens?: number;
  /** The image part of the input tokens (a source image), at its own price where the model lists one. */
  imageInputTokens?: number;
  reasoningTokens?: number;
  images?: number;
  /** Media seconds (video length, audio length); fractions are billed to the millisecond. */
  seconds?: number;
  characters?: number;
  generations?: number;
}

export interface PriceQuote {
  tokens: number;
  /** Provider cost in minor units of the provider's currency, rounded half up. */
  providerCostCents: number;
  /** Provider cost in millionths of a minor unit, rounded up (exact enough to sum many tiny calls). */
  providerCostMicros: number;
  currency: string;
}

/** Speech read aloud runs about 15 characters a second (900 a minute); used where a voice is priced per minute. */
export const SPEECH_CHARS_PER_SECOND = 15;

const micro = (value: number): bigint => BigInt(Math.round(value * 1e6));
const minBig = (a: bigint, b: bigint): bigint => (a < b ? a : b);
const ceilDiv = (a: bigint, b: bigint): bigint => (a <= 0n ? 0n : (a + b - 1n) / b);
const nonNegInt = (value: number | undefined, name: string): bigint => {
  const v = value ?? 0;
  if (!Number.isFinite(v) || v < 0) throw new RangeError(`${name} must be a non-negative number`);
  return BigInt(Math.ceil(v));
};

/**
 * Cost is accumulated in units of 1/(60·10¹²) of a minor unit, in which every supported price unit
 * (per 1M tokens, per image, per millisecond of a per-second or per-minute price, per character) is an integer.
 */
const SCALE = 60_000_000_000_000n;

export type PriceResult = { ok: true; quote: PriceQuote } | { ok: false; missing: string };

export function priceUnits(pricing: ModelPricing | null, usage: UsageUnits, settings: PricingSettings): PriceResult {
  if (!pricing) return { ok: false, missing: 'a price' };
  const fx = settings.fxToBdt[pricing.currency];
  if (fx === undefined || !(fx > 0)) return { ok: false, missing: `an exchange rate for ${pricing.currency}` };
  const p = (unit: PriceUnit): bigint | null => (typeof pricing[unit] === 'number' && pricing[unit] >= 0 ? micro(pricing[unit]) : null);

  const inputTokens = nonNegInt(usage.inputTokens, 'inputTokens');
  const outputTokens = nonNegInt(usage.outputTokens, 'outputTokens');
  const images = nonNegInt(usage.images, 'images');
  const characters = nonNegInt(usage.characters, 'characters');
  const generations = nonNegInt(usage.generations, 'generations');
  const secondsMs = nonNegInt(usage.seconds === undefined ? undefined : usage.seconds * 1000, 'seconds');

  let scaled = 0n;
  const charge = (units: bigint, unit: PriceUnit, perUnitFactor: bigint): boolean => {
    if (units === 0n) return true;
    const price = p(unit);
    if (price === null) return false;
    scaled += units * price * perUnitFactor;
    return true;
  };
  // Each token class at its own price, or the fresh one when the model lists none; the parts never exceed the totals.
  const cached = minBig(nonNegInt(usage.cachedInputTokens, 'cachedInputTokens'), inputTokens);
  const written = minBig(nonNegInt(usage.cacheWriteTokens, 'cacheWriteTokens'), inputTokens - cached);
  const writtenHour = minBig(nonNegInt(usage.cacheWrite1hTokens, 'cacheWrite1hTokens'), written);
  const imageIn = minBig(nonNegInt(usage.imageInputTokens, 'imageInputTokens'), inputTokens - cached - written);
  const reasoning = minBig(nonNegInt(usage.reasoningTokens, 'reasoningTokens'), outputTokens);
  const classUnit = (unit: PriceUnit, fallback: PriceUnit): PriceUnit => (p(unit) === null ? fallback : unit);
  if (!charge(inputTokens - cached - written - imageIn, '1m_input_tokens', 60n)) return { ok: false, missing: 'a price per input token' };
  if (!charge(imageIn, classUnit('1m_image_input_tokens', '1m_input_tokens'), 60n)) return { ok: false, missing: 'a price per input token' };
  if (!charge(cached, classUnit('1m_cached_input_tokens', '1m_input_tokens'), 60n)) return { ok: false, missing: 'a price per input token' };
  if (!charge(written - writtenHour, classUnit('1m_cache_write_tokens', '1m_input_tokens'), 60n)) return { ok: false, missing: 'a price per input token' };
  // Without its own price a 1-hour write costs twice the fresh input, Anthropic's published multiplier (5-minute
  // writes 1.25x, 1-hour writes 2x: https://platform.claude.com/docs/en/build-with-claude/prompt-caching#pricing).
  const hourCharged =
    p('1m_cache_write_1h_tokens') === null ? charge(writtenHour, '1m_input_tokens', 120n) : charge(writtenHour, '1m_cache_write_1h_tokens', 60n);
  if (!hourCharged) return { ok: false, missing: 'a price per input token' };
  if (!charge(outputTokens - reasoning, '1m_output_tokens', 60n)) return { ok: false, missing: 'a price per output token' };
  if (!charge(reasoning, classUnit('1m_reasoning_tokens', '1m_output_tokens'), 60n)) return { ok: false, missing: 'a price per output token' };
  if (!charge(images, 'image', 60_000_000n)) return { ok: false, missing: 'a price per image' };

  let durationCharged = false;
  if (characters > 0n && p('1k_chars') !== null) {
    charge(characters, '1k_chars', 60_000n);
    durationCharged = true;
  }
  if (!durationCharged && (secondsMs > 0n || characters > 0n) && (p('second') !== null || p('minute') !== null)) {
    const ms = secondsMs > 0n ? secondsMs : ceilDiv(characters * 1000n, BigInt(SPEECH_CHARS_PER_SECOND));
    if (p('second') !== null) charge(ms, 'second', 60_000n);
    else charge(ms, 'minute', 1000n);
    durationCharged = true;
  }
  let generationsCharged = false;
  if (generations > 0n && p('generation') !== null) {
    charge(generations, 'generation', 60_000_000n);
    generationsCharged = true;
  }
  if ((secondsMs > 0n || characters > 0n) && !durationCharged && !generationsCharged) {
    return { ok: false, missing: characters > 0n ? 'a price per character' : 'a price per second' };
  }
  if (generations > 0n && !generationsCharged && !durationCharged) return { ok: false, missing: 'a price per generation' };

  const fxMicro = micro(fx);
  const tokens = ceilDiv(scaled * fxMicro * BigInt(settings.tokenValueTokens), BigInt(settings.tokenValueCents) * SCALE * 1_000_000n);
  return {
    ok: true,
    quote: {
      tokens: Number(tokens),
      providerCostCents: Number((scaled + SCALE / 2n) / SCALE),
      providerCostMicros: Number(ceilDiv(scaled, 60_000_000n)),
      currency: pricing.currency,
    },
  };
}

/** The usage that one of each price unit stands for (1M tokens for the per-token keys). */
const UNIT_USAGE: Record<PriceUnit, UsageUnits> = {
  '1m_input_tokens': { inputTokens: 1_000_000 },
  '1m_output_tokens': { outputTokens: 1_000_000 },
  '1m_cached_input_tokens': { inputTokens: 1_000_000, cachedInputTokens: 1_000_000 },
  '1m_cache_write_tokens': { inputTokens: 1_000_000, cacheWriteTokens: 1_000_000 },
  '1m_cache_write_1h_tokens': { inputTokens: 1_000_000, cacheWriteTokens: 1_000_000, cacheWrite1hTokens: 1_000_000 },
  '1m_reasoning_tokens': { outputTokens: 1_000_000, reasoningTokens: 1_000_000 },
  '1m_image_input_tokens': { inputTokens: 1_000_000, imageInputTokens: 1_000_000 },
  image: { images: 1 },
  second: { seconds: 1 },
  minute: { seconds: 60 },
  '1k_chars': { characters: 1000 },
  generation: { generations: 1 },
};

/** Tokens per unit for every unit the model is priced in (the `/v1/credits/rates` keys). */
export function tokenRates(pricing: ModelPricing | null, settings: PricingSettings): Partial<Record<PriceUnit, number>> {
  const rates: Partial<Record<PriceUnit, number>> = {};
  if (!pricing) return rates;
  for (const unit of Object.keys(UNIT_USAGE) as PriceUnit[]) {
    if (typeof pricing[unit] !== 'number') continue;
    // Priced alone, so each key reports exactly its own unit's rate.
    const result = priceUnits({ currency: pricing.currency, [unit]: pricing[unit] }, UNIT_USAGE[unit], settings);
    if (result.ok) rates[unit] = result.quote.tokens;
  }
  return rates;
}

/** True when the model has at least one usable price (a model without one is never served or billed at zero). */
export function isPriced(pricing: ModelPricing | null, settings: PricingSettings): boolean {
  if (!pricing || settings.fxToBdt[pricing.currency] === undefined) return false;
  return Object.keys(UNIT_USAGE).some((unit) => typeof pricing[unit as PriceUnit] === 'number');
}

/** Credits for a token amount, rounded down to 2 decimals (the balance rule). */
export const creditsOf = (tokens: number, tokensPerCredit: number): number => Math.floor((tokens * 100) / tokensPerCredit) / 100;
