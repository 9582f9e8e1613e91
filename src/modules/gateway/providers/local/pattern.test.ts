import { describe, expect, it } from 'vitest';
import { compilePattern } from './pattern.js';
import { patternBudget } from './pattern-parse.js';
import { LOCAL_PATTERN_BOUNDS } from './schema-limits.js';

const compiled = (pattern: string) => compilePattern(pattern, patternBudget());

// Patterns and texts short enough for V8's own engine to answer at once: the automaton must agree with it everywhere.
const PATTERNS = [
  '^[A-Z]{3}$',
  '^\\d+$',
  '^(a+)+$',
  'abc',
  '^a|b$',
  '^(?:foo|bar)-\\d{2,4}$',
  '\\bcat\\b',
  '\\Bat',
  '^\\p{Lu}\\p{Ll}+$',
  '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$',
  '^\\+?[1-9]\\d{1,14}$',
  '^(?<year>\\d{4})-(\\d{2})$',
  'x*',
  '^$',
  '^.{2,3}$',
  '^\\u{1F600}$',
  '^\\uD83D\\uDE00$',
  '^[\\]a]+$',
  '^(a|ab)(c|bcd)(d*)$',
  '^\\x41\\cJ?$',
  '^(?:a*)*b$',
  '[]',
  '[^]',
  '^[a-z0-9-]+$',
  '^\\w+\\s\\w+$',
  '^[\\w.+-]+$',
  '^[^a-z]+$',
  '^[a-]+$',
  '^[-a]+$',
  '^[\\d\\s]+$',
  '^[\\b]$',
  '^[\\P{L}]+$',
  '^\\P{Ll}+$',
  '^[\\u0041-\\u005A]+$',
  '^\\S+$',
  '^\\W+$',
  '^[^\\d\\W]+$',
  '^\\p{Script=Han}+$',
  '^[\\p{L}\\p{N}]+$',
  '^\\/\\.\\*$',
  '^\\t\\n?$',
  '^[a-z-0]+$',
  'é',
];
const TEXTS = [
  '',
  'a',
  'b',
  'ab',
  'aab',
  'abcd',
  'aaaa',
  'aaaa!',
  'ABC',
  'ABCD',
  '123',
  '12a',
  'foo-12',
  'bar-12345',
  'a cat sat',
  'concat',
  'bat',
  'Hello',
  'hello',
  'ana@example.org',
  '+4512345678',
  '2024-05',
  '😀',
  'A\n',
  ']a]',
  'hi there',
  'é',
  'élan',
  'ÉCOLE',
  '\b',
  '中文',
  '!!',
  ' 1 2',
  'a-',
  '-',
  '/.*',
  '\t',
  '\t\n',
  'x-0',
  'a\u00a0b',
  '\u2028',
  '\ud800',
];

describe('patterns without backtracking', () => {
  it('match exactly what V8 matches', () => {
    const disagreements = PATTERNS.flatMap((pattern) => {
      const ours = compiled(pattern)!;
      const native = new RegExp(pattern, 'u');
      return TEXTS.filter((text) => ours.test(text) !== native.test(text)).map((text) => `${pattern} on ${JSON.stringify(text)}`);
    });
    expect(disagreements).toEqual([]);
  });

  it('make a short text each pattern matches, when there is an easy one', () => {
    const samples = Object.fromEntries(
      ['^[A-Z]{3}$', '^(?:foo|bar)-\\d{2,4}$', '^\\p{Lu}\\p{Ll}+$', '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$', '^(a+)+!$', '^\\u{1F600}$'].map((p) => [
        p,
        compiled(p)!.sample(64),
      ]),
    );
    expect(samples).toEqual({
      '^[A-Z]{3}$': 'AAA',
      '^(?:foo|bar)-\\d{2,4}$': 'foo-00',
      '^\\p{Lu}\\p{Ll}+$': 'Aa',
      '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$': 'a@a.a',
      '^(a+)+!$': 'a!',
      '^\\u{1F600}$': '😀',
    });
    expect(compiled('^a{10}$')!.sample(5)).toBeUndefined();
  });

  it('answer a pattern that backtracks exponentially in V8 within a bounded number of steps', () => {
    const budget = patternBudget();
    const evil = compilePattern('^(a+)+$', budget)!;
    expect(evil.test('a'.repeat(LOCAL_PATTERN_BOUNDS.candidateLength - 1) + '!')).toBe(false);
    expect(evil.test('a'.repeat(LOCAL_PATTERN_BOUNDS.candidateLength))).toBe(true);
    expect(LOCAL_PATTERN_BOUNDS.steps - budget.steps).toBeLessThan(2_000);
  });

  it('honour nothing they cannot bound: lookarounds, backreferences, huge repetitions, invalid syntax, long texts', () => {
    for (const pattern of ['^(?=a)a$', '(?<!b)a', '^(a)\\1$', '^(?<x>a)\\k<x>$', '(?:a{0,500}){0,500}', '(?:(?:){400}){400}', '(', '\\p{Nope}'])
      expect(compiled(pattern), pattern).toBeUndefined();
    expect(compiled('^a+$')!.test('a'.repeat(LOCAL_PATTERN_BOUNDS.candidateLength + 1))).toBe(false);
  });

  it('stop when the answer’s budget runs out, and no test passes after that', () => {
    const budget = { ...patternBudget(), steps: 500 };
    const pattern = compilePattern('^(?:[a-z]|\\d)*x$', budget)!;
    expect(pattern.test('x')).toBe(true);
    expect(pattern.test(`${'a'.repeat(60)}x`)).toBe(false);
    expect(budget.steps).toBeLessThan(0);
    expect(compilePattern('^a$', budget)).toBeUndefined();
  });
});
