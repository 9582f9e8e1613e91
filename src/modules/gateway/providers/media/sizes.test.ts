import { describe, expect, it } from 'vitest';
import { imageSizeRule, nearestSize, reducedRatio, snapImageSize, type SizeRule } from './sizes.js';

const size = (rule: SizeRule, width: number, height: number) => {
  const { width: w, height: h } = snapImageSize(rule, width, height);
  return `${w}x${h}`;
};

describe('snapImageSize: three-size menus', () => {
  const gptImage = imageSizeRule('openai', 'gpt-image-1');
  const dallE3 = imageSizeRule('openai', 'dall-e-3');

  it.each([
    [1024, 1024, '1024x1024'],
    [512, 512, '1024x1024'],
    [1920, 1080, '1536x1024'],
    [1280, 720, '1536x1024'],
    [1024, 768, '1536x1024'],
    [720, 1280, '1024x1536'],
    [1080, 1350, '1024x1536'],
    [1100, 1000, '1024x1024'],
    [1536, 1024, '1536x1024'],
  ])('GPT Image: %ix%i -> %s', (w, h, expected) => expect(size(gptImage, w, h)).toBe(expected));

  it.each([
    [1024, 1024, '1024x1024'],
    [1920, 1080, '1792x1024'],
    [1080, 1920, '1024x1792'],
    [800, 600, '1792x1024'],
  ])('DALL·E 3: %ix%i -> %s', (w, h, expected) => expect(size(dallE3, w, h)).toBe(expected));

  it('DALL·E 2 has only squares: the nearest area wins', () => {
    const rule = imageSizeRule('openai', 'dall-e-2');
    expect(size(rule, 300, 300)).toBe('256x256');
    expect(size(rule, 600, 500)).toBe('512x512');
    expect(size(rule, 1920, 1080)).toBe('1024x1024');
  });

  it('says whether the size changed and which ratio it used', () => {
    expect(snapImageSize(gptImage, 1024, 1536)).toEqual({ width: 1024, height: 1536, aspectRatio: '2:3', snapped: false });
    expect(snapImageSize(gptImage, 1000, 1500)).toEqual({ width: 1024, height: 1536, aspectRatio: '2:3', snapped: true });
  });
});

describe('snapImageSize: named aspect ratios', () => {
  it.each([
    ['google', 'imagen-4.0-generate-001', 1920, 1080, { width: 1408, height: 768, aspectRatio: '16:9' }],
    ['google', 'imagen-4.0-generate-001', 1000, 1000, { width: 1024, height: 1024, aspectRatio: '1:1' }],
    ['google', 'imagen-4.0-generate-001', 1200, 1600, { width: 896, height: 1280, aspectRatio: '3:4' }],
    ['google', 'imagen-4.0-generate-001', 600, 1300, { width: 768, height: 1408, aspectRatio: '9:16' }],
    ['google', 'gemini-2.5-flash-image', 2100, 900, { width: 1536, height: 672, aspectRatio: '21:9' }],
    ['stability', 'sd3.5-large', 1500, 1000, { width: 1216, height: 832, aspectRatio: '3:2' }],
    ['stability', 'ultra', 640, 1500, { width: 640, height: 1536, aspectRatio: '9:21' }],
    ['ideogram', 'V_3', 1600, 1000, { width: 1280, height: 800, aspectRatio: '16:10' }],
    ['bfl', 'flux-pro-1.1-ultra', 1024, 1024, { width: 2048, height: 2048, aspectRatio: '1:1' }],
  ])('%s %s: %ix%i', (provider, model, w, h, expected) => {
    expect(snapImageSize(imageSizeRule(provider, model), w, h)).toMatchObject(expected);
  });
});

describe('snapImageSize: free sizes', () => {
  it('passes other providers through unchanged', () => {
    for (const [provider, model] of [
      ['local', 'local-image'],
      ['together', 'some-model'],
      ['openai', 'my-compatible-model'],
    ]) {
      expect(snapImageSize(imageSizeRule(provider!, model!), 777, 333)).toEqual({ width: 777, height: 333, aspectRatio: '7:3', snapped: false });
    }
  });

  it('rounds and clamps FLUX sizes to multiples of 32 between 256 and 1440', () => {
    const flux = imageSizeRule('bfl', 'flux-pro-1.1');
    expect(size(flux, 1024, 768)).toBe('1024x768');
    expect(size(flux, 1000, 700)).toBe('992x704');
    expect(size(flux, 2000, 100)).toBe('1440x256');
    expect(snapImageSize(flux, 1000, 700).snapped).toBe(true);
  });

  it('refuses sizes that are not positive', () => {
    expect(() => snapImageSize({ kind: 'free' }, 0, 10)).toThrow(RangeError);
    expect(() => snapImageSize({ kind: 'free' }, 10, -1)).toThrow(RangeError);
  });
});

describe('helpers', () => {
  it('reduces ratios', () => {
    expect(reducedRatio(1920, 1080)).toBe('16:9');
    expect(reducedRatio(1024, 1536)).toBe('2:3');
    expect(reducedRatio(500, 500)).toBe('1:1');
  });

  it('nearestSize prefers the nearer ratio, then the nearer area, then the earlier candidate', () => {
    const candidates = [
      { id: 'a', width: 100, height: 100 },
      { id: 'b', width: 1000, height: 1000 },
      { id: 'c', width: 1600, height: 900 },
    ];
    expect(nearestSize(candidates, 900, 900).id).toBe('b');
    expect(nearestSize(candidates, 120, 120).id).toBe('a');
    expect(nearestSize(candidates, 1366, 768).id).toBe('c');
    expect(
      nearestSize(
        [
          { id: 'x', width: 10, height: 10 },
          { id: 'y', width: 10, height: 10 },
        ],
        10,
        10,
      ).id,
    ).toBe('x');
    expect(() => nearestSize([], 1, 1)).toThrow(RangeError);
  });
});
