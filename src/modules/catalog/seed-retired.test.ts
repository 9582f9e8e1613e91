import { describe, expect, it } from 'vitest';
import { SEED_MODELS } from './seed-data.js';

const slugOf = (model: (typeof SEED_MODELS)[number]) => `${model.provider}/${model.name}`;

describe('retired seed models', () => {
  const retired = SEED_MODELS.filter((m) => m.availability === 'RETIRED');
  const sold = new Map(SEED_MODELS.filter((m) => m.availability !== 'RETIRED' && m.status !== 'DISABLED').map((m) => [slugOf(m), m]));

  it('name a replacement the catalog sells, of the same type', () => {
    expect(retired.length).toBeGreaterThan(0);
    for (const model of retired) {
      const replacement = sold.get(String(model.capabilityOverride?.flags?.replacedBy));
      expect(replacement, `${slugOf(model)} names no model on sale`).toBeDefined();
      expect(replacement!.type, slugOf(model)).toBe(model.type);
    }
  });

  it("send Imagen 4 callers to the Gemini image models, as Google's migration guide does", () => {
    const replacements = Object.fromEntries(retired.filter((m) => m.provider === 'google').map((m) => [m.name, m.capabilityOverride?.flags?.replacedBy]));
    expect(replacements).toEqual({
      'imagen-4': 'google/gemini-3.1-flash-image',
      'imagen-4-fast': 'google/gemini-3.1-flash-image',
      'imagen-4-ultra': 'google/gemini-3-pro-image',
    });
  });
});
