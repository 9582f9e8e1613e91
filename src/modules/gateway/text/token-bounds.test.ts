import { countTokens } from 'gpt-tokenizer';
import { describe, expect, it } from 'vitest';
import { TOKEN_SLICE_CHARS, tokenSlices, tokensAtLeast } from './token-bounds.js';
import { countTextTokens, countTextTokensUpTo } from './tokens.js';

const PLAIN = { disallowedSpecial: new Set<string>() };
const whole = (text: string) => countTokens(text, PLAIN);

/** A seeded generator, so a failure can be replayed. */
function random(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

const PIECES = [
  'the',
  'Lighthouse',
  "keeper's",
  "don't",
  'naïve',
  'café',
  '灯塔',
  '守护者',
  '12345',
  '3.14',
  '(see',
  'below)',
  '—',
  '...',
  '!!',
  'https://example.com/a/b',
  '🙂',
  '👩‍💻',
  'ΑΒΓ',
  'кот',
  '<|endoftext|>',
  '\u00a0',
  '\u3000',
  '/',
  "'s",
  'ALLCAPS',
  'camelCase',
];
const GAPS = [' ', ' ', ' ', '  ', '\t', '\n', '\n\n', ' \n', '\r\n', '   \t ', ''];

/** Text shaped like real input, with every kind of gap the pre-tokenizer treats differently. */
function textOf(seed: number, length: number): string {
  const next = random(seed);
  let text = '';
  while (text.length < length) text += PIECES[Math.floor(next() * PIECES.length)]! + GAPS[Math.floor(next() * GAPS.length)]!;
  return text;
}

describe('tokenSlices', () => {
  it('cuts long texts into slices whose counts add up to the whole count', () => {
    for (let seed = 1; seed <= 40; seed++) {
      const text = textOf(seed, 3_000 + seed * 500);
      const slices = [...tokenSlices(text)];
      expect(slices.join(''), `seed ${seed}`).toBe(text);
      expect(slices.length).toBeGreaterThan(1);
      expect(Math.max(...slices.map((s) => s.length))).toBeLessThanOrEqual(TOKEN_SLICE_CHARS);
      expect(
        slices.reduce((sum, slice) => sum + whole(slice), 0),
        `seed ${seed}`,
      ).toBe(whole(text));
    }
  });

  it('counts a long word in bounded time, close to its whole count, without splitting a surrogate pair', () => {
    const started = performance.now();
    expect(countTextTokens('a'.repeat(200_000))).toBeGreaterThanOrEqual(25_000);
    expect(performance.now() - started).toBeLessThan(5_000); // whole: about 30 s
    const emoji = '🙂'.repeat(5_000);
    expect([...tokenSlices(emoji)].every((slice) => !/^[\udc00-\udfff]|[\ud800-\udbff]$/.test(slice))).toBe(true);
    const cjk = '灯塔守护者照亮海岸'.repeat(500);
    expect(Math.abs(countTextTokens(cjk) - whole(cjk))).toBeLessThanOrEqual(Math.ceil(cjk.length / TOKEN_SLICE_CHARS));
  });
});

describe('tokensAtLeast', () => {
  it('never exceeds the real count', () => {
    const samples = [
      ...Array.from({ length: 20 }, (_, i) => textOf(100 + i, 2_000)),
      'a'.repeat(5_000),
      ' '.repeat(5_000),
      '7'.repeat(5_000),
      'word '.repeat(2_000),
      '\u3000x'.repeat(1_000),
      '',
    ];
    for (const text of samples) expect(tokensAtLeast(text), JSON.stringify(text.slice(0, 40))).toBeLessThanOrEqual(whole(text));
    expect(tokensAtLeast('word '.repeat(2_000))).toBe(2_000);
    expect(tokensAtLeast(' '.repeat(1_280))).toBe(10);
  });
});

describe('countTextTokensUpTo', () => {
  it('is the count when within the limit, and stops past it', () => {
    const text = textOf(7, 20_000);
    expect(countTextTokensUpTo(text, Number.MAX_SAFE_INTEGER)).toBe(whole(text));
    const capped = countTextTokensUpTo(text, 100);
    expect(capped).toBeGreaterThan(100);
    expect(capped).toBeLessThan(whole(text));
  });
});
