import { describe, expect, it } from 'vitest';
import { DEFAULT_PRICING_SETTINGS, priceUnits, tokenRates } from './pricing.js';
import { SEED_MODELS } from './seed-data.js';

// Anthropic bills a 1-hour cache write at 2x the input price and a 5-minute one at 1.25x
// (https://platform.claude.com/docs/en/build-with-claude/prompt-caching#pricing). The 1-hour writes are a part of the
// cache writes with their own price unit, `1m_cache_write_1h_tokens`, or twice the input price when a model lists none.

const tokens = (pricing: Parameters<typeof priceUnits>[0], usage: Parameters<typeof priceUnits>[1]) => {
  const result = priceUnits(pricing, usage, DEFAULT_PRICING_SETTINGS);
  if (!result.ok) throw new Error(result.missing);
  return result.quote;
};

// Claude Haiku 4.5's list prices (US cents per 1M): input 100, 5-minute write 125, 1-hour write 200, output 500.
const haiku = { currency: 'USD', '1m_input_tokens': 100, '1m_cache_write_tokens': 125, '1m_cache_write_1h_tokens': 200, '1m_output_tokens': 500 };

describe('1-hour cache writes', () => {
  it('are charged at their own price, the rest of the writes at the 5-minute price', () => {
    // (1,000 x 100 + 9,000 x 200 + 200 x 500) / 1M US cents x 122 = 244 poisha -> 244e6 / 1800 = 135,555.6 -> 135,556
    expect(tokens(haiku, { inputTokens: 10_000, cacheWriteTokens: 9_000, cacheWrite1hTokens: 9_000, outputTokens: 200 }).tokens).toBe(135_556);
    // (1,000 x 100 + 5,000 x 125 + 4,000 x 200 + 200 x 500) = 1,625,000 -> 198.25 poisha -> 110,138.9 -> 110,139
    expect(tokens(haiku, { inputTokens: 10_000, cacheWriteTokens: 9_000, cacheWrite1hTokens: 4_000, outputTokens: 200 }).tokens).toBe(110_139);
    // Without the 1-hour part, the same writes at the 5-minute price: 1,325,000 -> 161.65 poisha -> 89,806
    expect(tokens(haiku, { inputTokens: 10_000, cacheWriteTokens: 9_000, outputTokens: 200 }).tokens).toBe(89_806);
  });

  it('cost twice the input price when the model lists no 1-hour price', () => {
    const { '1m_cache_write_1h_tokens': _hour, ...unlisted } = haiku;
    const usage = { inputTokens: 10_000, cacheWriteTokens: 9_000, cacheWrite1hTokens: 9_000, outputTokens: 200 };
    expect(tokens(unlisted, usage)).toEqual(tokens(haiku, usage));
    // Neither write price listed: the 5-minute part at the fresh price, the 1-hour part still at twice it.
    const plain = { currency: 'USD', '1m_input_tokens': 100, '1m_output_tokens': 500 };
    expect(tokens(plain, { inputTokens: 10_000, cacheWriteTokens: 9_000, cacheWrite1hTokens: 4_000 }).tokens).toBe(
      tokens(plain, { inputTokens: 10_000 + 4_000 }).tokens, // 6,000 at 1x plus 4,000 at 2x = 14,000 at 1x
    );
  });

  it('never count beyond the cache writes they are part of, nor need an input price they do not use', () => {
    expect(tokens(haiku, { inputTokens: 10_000, cacheWriteTokens: 2_000, cacheWrite1hTokens: 9_000 })).toEqual(
      tokens(haiku, { inputTokens: 10_000, cacheWriteTokens: 2_000, cacheWrite1hTokens: 2_000 }),
    );
    expect(tokens(haiku, { inputTokens: 10_000, cacheWrite1hTokens: 9_000 })).toEqual(tokens(haiku, { inputTokens: 10_000 }));
    expect(
      priceUnits({ currency: 'USD', '1m_output_tokens': 500 }, { inputTokens: 10, cacheWriteTokens: 10, cacheWrite1hTokens: 10 }, DEFAULT_PRICING_SETTINGS),
    ).toEqual({ ok: false, missing: 'a price per input token' });
  });

  it('have their own token rate, which the seeded Claude models list at twice the input rate', () => {
    expect(tokenRates(haiku, DEFAULT_PRICING_SETTINGS)['1m_cache_write_1h_tokens']).toBe(
      tokens(haiku, { inputTokens: 1_000_000, cacheWriteTokens: 1_000_000, cacheWrite1hTokens: 1_000_000 }).tokens,
    );
    const claude = SEED_MODELS.filter((model) => model.provider === 'anthropic');
    expect(claude.length).toBeGreaterThan(0);
    for (const model of claude) {
      expect(model.pricing['1m_cache_write_1h_tokens'], model.name).toBe(2 * model.pricing['1m_input_tokens']!);
      const rates = tokenRates(model.pricing, DEFAULT_PRICING_SETTINGS);
      expect(rates['1m_cache_write_1h_tokens']! / rates['1m_input_tokens']!, model.name).toBeCloseTo(2, 4);
    }
  });
});
