import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../platform/clock/clock.js';
import { SEED_MODELS } from '../../../catalog/seed-data.js';
import { mediaCapability } from './media-types.js';
import { PROVIDERS } from '../index.js';
import { buildMediaAdapters } from './registry.js';

describe('media adapter registry', () => {
  const adapters = buildMediaAdapters({ clock: new ManualClock(), local: { videoDelayMs: 0 } });

  it('builds one adapter per plugin with a media part, with the capabilities its API offers', () => {
    expect([...adapters.keys()].sort()).toEqual(
      PROVIDERS.filter((plugin) => plugin.media)
        .map((plugin) => plugin.slug)
        .sort(),
    );
    const capabilities = (slug: string) =>
      (['generateImage', 'submitVideo', 'generateSpeech', 'generateMusic'] as const).filter((c) => mediaCapability(adapters.get(slug)!, c) !== null);
    expect(capabilities('local')).toEqual(['generateImage', 'submitVideo', 'generateSpeech', 'generateMusic']);
    expect(capabilities('openai')).toEqual(['generateImage', 'generateSpeech']);
    expect(capabilities('runway')).toEqual(['submitVideo']);
    expect(capabilities('elevenlabs')).toEqual(['generateSpeech', 'generateMusic']);
    expect(adapters.get('local')!.needsCredential).toBe(false);
    for (const slug of ['openai', 'runway', 'elevenlabs']) expect(adapters.get(slug)!.needsCredential).toBe(true);
  });

  it('serves every seeded local media model and the seeded models of the providers it covers', () => {
    const needed = (type: string, features: readonly string[]) =>
      type === 'IMAGE'
        ? 'generateImage'
        : type === 'VIDEO'
          ? 'submitVideo'
          : features.includes('MUSIC') && !features.includes('TTS')
            ? 'generateMusic'
            : 'generateSpeech';
    const covered = SEED_MODELS.filter(
      (m) => ['IMAGE', 'VIDEO', 'AUDIO'].includes(m.type) && adapters.has(m.provider) && !(m.provider === 'openai' && m.type === 'VIDEO'),
    );
    expect(covered.some((m) => m.provider === 'runway')).toBe(true);
    for (const model of covered) {
      expect(mediaCapability(adapters.get(model.provider)!, needed(model.type, model.features)), `${model.provider}/${model.name}`).not.toBeNull();
    }
  });
});
