import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, json, type TestApp } from '../../../test/helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

const estimate = (payload: unknown) => t.app.inject({ method: 'POST', url: '/v1/credits/estimate', payload: payload as object });
/** Tokens for a cost of `cents` US cents at the default 122 BDT per USD and 18 BDT per 1M tokens. */
const usdTokens = (cents: number) => Math.ceil((cents * 122 * 1e6) / 1800 - 1e-9);

describe('GET /v1/credits/rates', () => {
  it('lists the token price per unit of every listed model with the spec’s unit keys', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/v1/credits/rates' });
    expect(response.statusCode).toBe(200);
    const body = json(response);
    expect(body).toMatchObject({ currency: 'BDT', tokensPerCredit: 10_000, tokenValue: { priceCents: 1800, tokens: 1_000_000 } });
    const rates = Object.fromEntries(body.items.map((i: { slug: string; rates: unknown }) => [i.slug, i.rates]));
    expect(rates).toEqual({
      'local/text': { '1m_input_tokens': usdTokens(10), '1m_output_tokens': usdTokens(40) },
      'local/image': { image: usdTokens(1) },
      'local/video': { second: usdTokens(2) },
      'local/music': { generation: usdTokens(5) },
      'local/speech': { '1k_chars': usdTokens(1.5) },
      'local/embed': { '1m_input_tokens': usdTokens(2) },
      'local/vision': { '1m_input_tokens': usdTokens(15), '1m_output_tokens': usdTokens(60) },
    });
    expect(body.items[0]).toMatchObject({
      modelId: expect.any(String),
      displayName: 'Local Text',
      type: 'TEXT',
      provider: { slug: 'local', name: 'Local (built in)' },
    });
  });

  it('includes per-minute speech and follows the token value setting', async () => {
    await t.services.catalog.setProviderStatus('openai', 'ACTIVE');
    await t.services.catalog.updatePricingSettings({ tokenValueCents: 3600 });
    try {
      const items = json(await t.app.inject({ method: 'GET', url: '/v1/credits/rates' })).items;
      const rates = (slug: string) => items.find((i: { slug: string }) => i.slug === slug).rates;
      expect(rates('openai/gpt-4o-mini-tts')).toEqual({ minute: Math.ceil(usdTokens(1.5) / 2) });
      expect(rates('openai/tts-1')).toEqual({ '1k_chars': Math.ceil(usdTokens(1.5) / 2) });
      // GPT Image is billed by tokens (text in $5, image in $10, image out $40 per 1M); `image` stays the rate to show.
      expect(rates('openai/gpt-image-1')).toEqual({
        image: Math.ceil(usdTokens(4.2) / 2),
        '1m_input_tokens': Math.ceil(usdTokens(500) / 2),
        '1m_image_input_tokens': Math.ceil(usdTokens(1000) / 2),
        '1m_output_tokens': Math.ceil(usdTokens(4000) / 2),
      });
      // Disabled models (Sora has no adapter yet) are not rated.
      expect(items.some((i: { slug: string }) => i.slug === 'openai/sora-2')).toBe(false);
    } finally {
      await t.services.catalog.updatePricingSettings({ tokenValueCents: 1800 });
      await t.services.catalog.setProviderStatus('openai', 'INACTIVE');
    }
  });

  it('rejects unknown query keys', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/v1/credits/rates?model=x' })).statusCode).toBe(400);
  });
});

describe('POST /v1/credits/estimate', () => {
  it('estimates text on the prompt tokens and maxTokens (2048 when omitted, capped by the model)', async () => {
    const response = await estimate({ model: 'local/text', inputTokens: 1000 });
    expect(response.statusCode).toBe(200);
    const expected = Math.ceil((((1000 * 10 + 2048 * 40) / 1e6) * 122 * 1e6) / 1800 - 1e-9);
    expect(json(response)).toEqual({
      model: 'local/text',
      tokens: expected,
      credits: Math.ceil((expected * 100) / 10_000) / 100,
      tokensPerCredit: 10_000,
      basis: { inputTokens: 1000, maxTokens: 2048 },
    });
    expect(json(await estimate({ model: 'local/text', inputTokens: 1000, maxTokens: 100_000 })).basis).toEqual({ inputTokens: 1000, maxTokens: 4096 });
    const fromMessages = json(await estimate({ model: 'local/vision', messages: [{ role: 'user', content: 'x'.repeat(400) }], maxTokens: 10 }));
    expect(fromMessages.basis).toEqual({ inputTokens: 104, maxTokens: 10 });
    const fromPrompt = json(await estimate({ model: 'local/embed', prompt: 'ঘ'.repeat(100) }));
    expect(fromPrompt.basis).toEqual({ inputTokens: 75, maxTokens: 0 });
  });

  it('estimates images by count, video by duration (the model’s default when omitted), speech by characters, music per generation', async () => {
    expect(json(await estimate({ model: 'local/image', count: 3 }))).toMatchObject({ tokens: usdTokens(3), basis: { count: 3 } });
    expect(json(await estimate({ model: 'local/image' }))).toMatchObject({ tokens: usdTokens(1), basis: { count: 1 } });
    expect(json(await estimate({ model: 'local/video', durationSeconds: 7 }))).toMatchObject({ tokens: usdTokens(14), basis: { durationSeconds: 7 } });
    expect(json(await estimate({ model: 'local/video' }))).toMatchObject({ tokens: usdTokens(8), basis: { durationSeconds: 4 } });
    expect(json(await estimate({ model: 'local/speech', text: 'hello world' }))).toMatchObject({
      tokens: usdTokens((1.5 * 11) / 1000),
      basis: { characters: 11 },
    });
    expect(json(await estimate({ model: 'local/speech', characters: 2000 }))).toMatchObject({ tokens: usdTokens(3), basis: { characters: 2000 } });
    expect(json(await estimate({ model: 'local/music' }))).toMatchObject({ tokens: usdTokens(5), basis: { generations: 1 } });
  });

  it('uses the very estimator the gateway reserves with', async () => {
    const model = await t.services.catalog.resolveForGateway('local/text');
    const viaService = await t.services.catalog.estimateTokens(model, { kind: 'text', inputTokens: 321, maxOutputTokens: 2048 });
    expect(json(await estimate({ model: 'local/text', inputTokens: 321 })).tokens).toBe(viaService);
  });

  it('answers 404 for an unknown model and 503 MODEL_UNAVAILABLE for one that cannot be served', async () => {
    const unknown = await estimate({ model: 'nobody/nothing' });
    expect(unknown.statusCode).toBe(404);
    expect(json(unknown).error.code).toBe('NOT_FOUND');
    const inactive = await estimate({ model: 'openai/gpt-4o' });
    expect(inactive.statusCode).toBe(503);
    expect(json(inactive).error).toMatchObject({ code: 'MODEL_UNAVAILABLE', details: { model: 'openai/gpt-4o' } });
  });

  it.each([
    ['a missing model', {}, 'model'],
    ['a model of the wrong type', { model: 42 }, 'model'],
    ['an over-long model', { model: 'm'.repeat(201) }, 'model'],
    ['too many images', { model: 'local/image', count: 9 }, 'count'],
    ['a fractional count', { model: 'local/image', count: 1.5 }, 'count'],
    ['a zero duration', { model: 'local/video', durationSeconds: 0 }, 'durationSeconds'],
    ['a negative maxTokens', { model: 'local/text', maxTokens: -1 }, 'maxTokens'],
    ['an unknown field', { model: 'local/text', temperature: 2 }, 'temperature'],
    ['a message with an unknown key', { model: 'local/text', messages: [{ role: 'user', content: 'x', name: 'y' }] }, 'name'],
  ])('answers 400 for %s', async (_label, payload, field) => {
    const response = await estimate(payload);
    expect(response.statusCode).toBe(400);
    expect(json(response).error.code).toBe('BAD_REQUEST');
    expect(JSON.stringify(json(response).error)).toContain(field);
  });
});

describe('priceUsage and estimateTokens (the gateway contract)', () => {
  it('prices real usage in tokens with the provider cost', async () => {
    const model = await t.services.catalog.resolveForGateway('local/vision');
    const quote = await t.services.catalog.priceUsage(model, { inputTokens: 10_000, outputTokens: 5_000 });
    // 10k × 15/1e6 + 5k × 60/1e6 = 0.15 + 0.3 = 0.45 cents
    expect(quote).toEqual({ tokens: usdTokens(0.45), providerCostCents: 0, providerCostMicros: 450_000, currency: 'USD' });
    expect(await t.services.catalog.priceUsage(model, {})).toMatchObject({ tokens: 0, providerCostCents: 0 });
  });

  it('refuses to price usage a model has no price for (never bills at zero) and a mismatched estimate kind', async () => {
    const text = await t.services.catalog.resolveForGateway('local/text');
    await expect(t.services.catalog.priceUsage(text, { images: 2 })).rejects.toMatchObject({ statusCode: 503, code: 'MODEL_UNAVAILABLE' });
    await expect(t.services.catalog.estimateTokens(text, { kind: 'image', count: 1 })).rejects.toMatchObject({ statusCode: 400, code: 'BAD_REQUEST' });
    const music = await t.services.catalog.resolveForGateway('local/music');
    await expect(t.services.catalog.estimateTokens(music, { kind: 'speech', characters: 10 })).rejects.toMatchObject({ statusCode: 400 });
    expect(await t.services.catalog.estimateTokens(music, { kind: 'music' })).toBe(usdTokens(5));
  });

  it('prices a model with a fractional provider price exactly', async () => {
    await t.services.catalog.setProviderStatus('google', 'ACTIVE');
    try {
      const flash = await t.services.catalog.resolveForGateway('google/gemini-2.5-flash-image');
      expect(await t.services.catalog.estimateTokens(flash, { kind: 'image', count: 2 })).toBe(usdTokens(7.8));
    } finally {
      await t.services.catalog.setProviderStatus('google', 'INACTIVE');
    }
    await expect(t.services.catalog.resolveForGateway('google/gemini-2.5-flash-image')).rejects.toMatchObject({ statusCode: 503 });
  });
});
