import { describe, expect, it } from 'vitest';
import { mergeCapabilities } from './capabilities.js';
import { imageTokenTable, imageTokenUsage, outputTokensPerImage, promptTokenBound } from './image-tokens.js';
import { DEFAULT_PRICING_SETTINGS, priceUnits } from './pricing.js';
import { SEED_MODELS } from './seed-data.js';

const seeded = (slug: string) => {
  const model = SEED_MODELS.find((m) => `${m.provider}/${m.name}` === slug)!;
  const capabilities = mergeCapabilities({
    type: model.type,
    features: model.features,
    maxOutputTokens: null,
    maxBatch: null,
    providerSlug: model.provider,
    providerOverrides: {},
    modelOverride: model.capabilityOverride ?? {},
  });
  return { model, capabilities };
};

describe('GPT Image token table on the catalog row', () => {
  const { model, capabilities } = seeded('openai/gpt-image-1');
  const table = imageTokenTable(capabilities)!;

  it("carries OpenAI's documented output tokens and a quality control defaulting to auto", () => {
    // https://platform.openai.com/docs/guides/image-generation ("Cost and latency").
    expect(table.output).toEqual({
      low: { '1024x1024': 272, '1024x1536': 408, '1536x1024': 400 },
      medium: { '1024x1024': 1056, '1024x1536': 1584, '1536x1024': 1568 },
      high: { '1024x1024': 4160, '1024x1536': 6240, '1536x1024': 6208 },
    });
    expect(capabilities.controls.quality).toEqual({ type: 'enum', label: 'Quality', values: ['low', 'medium', 'high', 'auto'], default: 'auto' });
    // https://platform.openai.com/docs/pricing: $5 text in, $10 image in, $40 image out per 1M tokens.
    expect(model.pricing).toMatchObject({ currency: 'USD', '1m_input_tokens': 500, '1m_image_input_tokens': 1000, '1m_output_tokens': 4000 });
  });

  it('counts auto, no quality and an unknown one as the dearest, and an unknown size as the dearest of the quality', () => {
    expect(outputTokensPerImage(table, 'low', 1024, 1536)).toBe(408);
    expect(outputTokensPerImage(table, 'auto', 1536, 1024)).toBe(6208);
    expect(outputTokensPerImage(table, null, 1024, 1024)).toBe(4160);
    expect(outputTokensPerImage(table, 'ultra', 1024, 1024)).toBe(4160);
    expect(outputTokensPerImage(table, 'medium', 512, 512)).toBe(1584);
  });

  it('bounds a call: the prompt at a token per byte plus framing, each source image at its most, every image at its quality', () => {
    expect(promptTokenBound('ঘঘ')).toBe(6 + 64);
    expect(imageTokenUsage(table, { count: 3, quality: 'medium', width: 1024, height: 1024, promptTokens: 100, sourceImages: 1 })).toEqual({
      inputTokens: 100 + 581,
      imageInputTokens: 581,
      outputTokens: 3 * 1056,
    });
  });

  it('prices the image part of the input at its own price, and at the input price where a model lists none', () => {
    const quote = priceUnits(model.pricing, { inputTokens: 300, imageInputTokens: 200, outputTokens: 1000 }, DEFAULT_PRICING_SETTINGS);
    // (100 x 500 + 200 x 1000 + 1000 x 4000) cents per 1M, x 122 / 1800.
    expect(quote.ok && quote.quote.tokens).toBe(Math.ceil(((100 * 500 + 200 * 1000 + 1000 * 4000) * 122) / 1800));
    const plain = priceUnits({ currency: 'USD', '1m_input_tokens': 500 }, { inputTokens: 300, imageInputTokens: 200 }, DEFAULT_PRICING_SETTINGS);
    expect(plain.ok && plain.quote.tokens).toBe(Math.ceil((300 * 500 * 122) / 1800));
  });

  it('ignores a malformed table (the model is then priced per image), and per-image models have none', () => {
    expect(imageTokenTable({ flags: { imageTokens: { output: { low: { '1024x1024': -1 } }, sourceImageMax: 10 } } })).toBeNull();
    expect(imageTokenTable({ flags: { imageTokens: { output: {}, sourceImageMax: 10 } } })).toBeNull();
    expect(imageTokenTable({ flags: { imageTokens: { output: { low: { '1024x1024': 1 } } } } })).toBeNull();
    expect(imageTokenTable(seeded('openai/dall-e-3').capabilities)).toBeNull();
    expect(seeded('openai/dall-e-3').capabilities.controls.quality).toMatchObject({ values: ['standard'], default: 'standard' });
  });
});
