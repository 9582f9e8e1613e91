import { describe, expect, it } from 'vitest';
import { capabilityKind, deepMerge, mergeCapabilities, type CapabilityInput } from './capabilities.js';

const base = (over: Partial<CapabilityInput>): CapabilityInput => ({
  type: 'TEXT',
  features: ['TEXT'],
  maxOutputTokens: 4096,
  maxBatch: null,
  providerSlug: 'openai',
  providerOverrides: {},
  modelOverride: {},
  ...over,
});

describe('deepMerge', () => {
  it('merges objects key by key, the override winning; arrays and scalars replace; null removes', () => {
    const merged = deepMerge({ a: { x: 1, y: [1, 2], z: 'keep' }, b: 1, c: 'gone' }, { a: { x: 2, y: [3] }, b: { now: 'object' }, c: null, d: true });
    expect(merged).toEqual({ a: { x: 2, y: [3], z: 'keep' }, b: { now: 'object' }, d: true });
  });

  it('replaces a descriptor whose type changes instead of mixing the two', () => {
    const merged = deepMerge({ d: { type: 'enum', values: [5, 10], default: 5 } }, { d: { type: 'integer', min: 1, max: 8 } });
    expect(merged).toEqual({ d: { type: 'integer', min: 1, max: 8 } });
    expect(deepMerge({ d: { type: 'enum', values: [5, 10], default: 5 } }, { d: { default: 10 } })).toEqual({
      d: { type: 'enum', values: [5, 10], default: 10 },
    });
  });

  it('does not mutate its inputs', () => {
    const a = { controls: { x: { type: 'integer', min: 1 } } };
    const b = { controls: { x: { min: 2 } } };
    deepMerge(a, b);
    expect(a.controls.x.min).toBe(1);
  });
});

describe('mergeCapabilities', () => {
  it('starts from the type default: text models advertise maxTokens (capped by the model) and temperature', () => {
    const caps = mergeCapabilities(base({ maxOutputTokens: 1000 }));
    expect(caps.controls).toMatchObject({ maxTokens: { type: 'integer', min: 1, max: 1000, default: 1000 }, temperature: { type: 'number', max: 2 } });
    expect(caps.extra).toEqual({});
    expect(caps.flags).toMatchObject({ streaming: true });
  });

  it('applies the built-in provider default, then the provider row override, then the model override (each wins)', () => {
    expect(mergeCapabilities(base({ providerSlug: 'anthropic' })).controls.temperature).toMatchObject({ max: 1 });
    const caps = mergeCapabilities(
      base({
        providerSlug: 'anthropic',
        providerOverrides: { TEXT: { controls: { temperature: { type: 'number', min: 0, max: 0.8 } } } },
        modelOverride: { controls: { temperature: { default: 0.3 } }, flags: { cache: true } },
      }),
    );
    expect(caps.controls.temperature).toMatchObject({ max: 0.8, default: 0.3 });
    expect(caps.flags).toMatchObject({ cache: true, streaming: true });
    expect(mergeCapabilities(base({ modelOverride: { controls: { temperature: null } } })).controls).not.toHaveProperty('temperature');
  });

  it('advertises only what a provider honours: OpenAI images take no seed, Kling video takes its extras', () => {
    expect(mergeCapabilities(base({ type: 'IMAGE', features: ['IMAGE_GENERATION'] })).controls).not.toHaveProperty('seed');
    expect(mergeCapabilities(base({ type: 'IMAGE', features: ['IMAGE_GENERATION'], providerSlug: 'bfl' })).controls).toHaveProperty('seed');
    const edit = mergeCapabilities(base({ type: 'IMAGE', features: ['IMAGE_GENERATION', 'IMAGE_EDIT'], providerSlug: 'stability' }));
    expect(edit.controls).toMatchObject({ initImageUrl: { type: 'image' }, strength: { min: 0, max: 1 }, negativePrompt: { type: 'string' } });
    const kling = mergeCapabilities(base({ type: 'VIDEO', features: ['VIDEO_GENERATION'], providerSlug: 'kling' }));
    expect(kling.controls).toMatchObject({ endImageUrl: { type: 'image', role: 'endFrame' }, seedImageUrl: { role: 'startFrame' } });
    expect(kling.extra).toMatchObject({
      cfg_scale: { type: 'number', min: 0, max: 1, step: 0.1 },
      mode: { type: 'enum', values: ['std', 'pro'], default: 'std' },
    });
  });

  it('gives audio its block per model: music has no voice and no duration; speech has a voice but no format', () => {
    expect(capabilityKind('AUDIO', ['MUSIC'])).toBe('AUDIO_MUSIC');
    expect(capabilityKind('AUDIO', ['TTS'])).toBe('AUDIO_SPEECH');
    const music = mergeCapabilities(base({ type: 'AUDIO', features: ['MUSIC'], providerSlug: 'local' }));
    expect(music.controls).toEqual({});
    const speech = mergeCapabilities(base({ type: 'AUDIO', features: ['TTS'], providerSlug: 'local' }));
    expect(Object.keys(speech.controls)).toEqual(['voice']);
    expect(speech.controls).not.toHaveProperty('format');
  });

  it('carries maxBatch from the model when recorded', () => {
    expect(mergeCapabilities(base({ type: 'IMAGE', features: ['IMAGE_GENERATION'], maxBatch: 1 })).maxBatch).toBe(1);
    expect(mergeCapabilities(base({})).maxBatch).toBeUndefined();
  });
});
