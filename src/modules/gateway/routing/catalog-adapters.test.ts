import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../platform/clock/clock.js';
import { capabilityKind, mergeCapabilities } from '../../catalog/capabilities.js';
import { SEED_MODELS } from '../../catalog/seed-data.js';
import { mediaCapability, type ExtraCallKind, type MediaCapability } from '../providers/media/media-types.js';
import { buildMediaAdapters } from '../providers/media/registry.js';
import { pluginOf } from '../providers/index.js';
import { buildProviderRegistry } from './registry.js';

/** What a model of each type needs from its provider's adapters; null: nothing can serve it. */
function needs(model: (typeof SEED_MODELS)[number]): 'text' | 'embed' | MediaCapability | null {
  switch (model.type) {
    case 'TEXT':
    case 'MULTIMODAL':
      return 'text';
    case 'EMBEDDING':
      return 'embed';
    case 'IMAGE':
      return 'generateImage';
    case 'VIDEO':
      return 'submitVideo';
    case 'AUDIO':
      return model.features.includes('TTS') ? 'generateSpeech' : 'generateMusic';
    default:
      return null;
  }
}

describe('the seeded catalog is truthful', () => {
  const media = buildMediaAdapters({ clock: new ManualClock(), local: { videoDelayMs: 0 } });
  const text = buildProviderRegistry({});

  it('offers no model whose provider has no adapter for its type (the others are seeded DISABLED)', () => {
    const listed = SEED_MODELS.filter((model) => model.status !== 'DISABLED' && model.availability !== 'RETIRED');
    const unserved = listed.flatMap((model) => {
      const need = needs(model);
      const adapter = media.get(model.provider);
      const served =
        need === 'text'
          ? pluginOf(model.provider)?.text !== undefined
          : need === 'embed'
            ? pluginOf(model.provider)?.text !== undefined && text.get(model.provider)?.adapter.embed !== undefined
            : need !== null && adapter !== undefined && mediaCapability(adapter, need) !== null;
      return served ? [] : [`${model.provider}/${model.name} (${model.type}${need ? `, needs ${need}` : ''})`];
    });
    expect(unserved).toEqual([]);
  });

  it('serves the embedding models of the built-in provider, OpenAI, Google and Mistral', () => {
    const embedding = SEED_MODELS.filter((model) => model.type === 'EMBEDDING');
    expect(embedding.every((model) => model.status !== 'DISABLED')).toBe(true);
    expect(new Set(embedding.map((model) => model.provider))).toEqual(new Set(['local', 'openai', 'google', 'mistral']));
    expect(embedding.find((model) => model.provider === 'local')?.name).toBe('embed');
  });

  it('serves every seeded image, video, speech and music provider', () => {
    const providers = new Set(SEED_MODELS.filter((m) => ['IMAGE', 'VIDEO', 'AUDIO'].includes(m.type) && m.status !== 'DISABLED').map((m) => m.provider));
    for (const slug of ['google', 'stability', 'bfl', 'ideogram', 'recraft', 'kling', 'minimax']) expect(providers.has(slug), slug).toBe(true);
    for (const slug of providers) expect(media.has(slug), slug).toBe(true);
  });

  it('advertises only extra keys its adapter sends, and prices every other value of a priced one', () => {
    const callKind: Partial<Record<string, ExtraCallKind>> = { VIDEO: 'video', AUDIO_SPEECH: 'speech', AUDIO_MUSIC: 'music' };
    const problems = SEED_MODELS.filter((model) => model.status !== 'DISABLED').flatMap((model) => {
      const kind = capabilityKind(model.type, model.features);
      const merged = mergeCapabilities({
        type: model.type,
        features: model.features,
        maxOutputTokens: model.maxOutputTokens ?? null,
        maxBatch: null,
        providerSlug: model.provider,
        providerOverrides: {},
        modelOverride: model.capabilityOverride ?? {},
      });
      const call = callKind[kind];
      const declared = call ? media.get(model.provider)?.extraKeys?.[call] : undefined;
      return Object.entries(merged.extra).flatMap(([key, value]) => {
        const own = declared?.[key];
        const slug = `${model.provider}/${model.name} extra.${key}`;
        if (!own) return [`${slug} is not sent by the adapter`];
        const descriptor = value as { values?: unknown[]; default?: unknown; prices?: Record<string, unknown> };
        if (!own.priced) return [];
        const unpriced = (descriptor.values ?? []).filter((v) => v !== descriptor.default && !descriptor.prices?.[String(v)]);
        return unpriced.length > 0 ? [`${slug} allows unpriced ${unpriced.join(', ')}`] : [];
      });
    });
    expect(problems).toEqual([]);
  });
});
