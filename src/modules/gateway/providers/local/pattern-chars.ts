/**
 * What one position of a `pattern` matches (a code point, a class, `\d`, `\p{L}`, `.`), as JavaScript defines it for
 * `u` regexps without flags: tests of one code point whose cost is known in advance (see pattern.ts).
 */
export type CharTest = (codePoint: number) => boolean;

export const DIGIT: CharTest = (cp) => cp >= 0x30 && cp <= 0x39;
export const WORD: CharTest = (cp) => DIGIT(cp) || (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a) || cp === 0x5f;
const SPACES = new Set([0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff]);
export const SPACE: CharTest = (cp) => SPACES.has(cp) || (cp >= 0x2000 && cp <= 0x200a);
const LINE_TERMINATORS = new Set([0x0a, 0x0d, 0x2028, 0x2029]);
export const ANY_BUT_NEWLINE: CharTest = (cp) => !LINE_TERMINATORS.has(cp);
export const not =
  (test: CharTest): CharTest =>
  (cp) =>
    !test(cp);

/**
 * Unicode properties are V8's to know: one RegExp per property, `^\p{...}$`, made once per process. V8 has already
 * accepted the name (as part of the whole pattern), and there are only some hundreds of valid names, so this stays
 * small. Making one costs up to milliseconds (`\p{L}` is hundreds of ranges): callers charge a property to their budget.
 */
const PROPERTIES = new Map<string, RegExp>();

export function property(name: string): CharTest {
  let single = PROPERTIES.get(name);
  if (!single) PROPERTIES.set(name, (single = new RegExp(`^\\p{${name}}$`, 'u')));
  const known = single;
  return (cp) => known.test(String.fromCodePoint(cp));
}

/** Code points tried, in order, for a class in a generated text. */
export const SAMPLE_CODE_POINTS = [
  ...[...'aAx0Z9_-. @/:+,'].map((c) => c.codePointAt(0)!),
  ...Array.from({ length: 95 }, (_, i) => 0x20 + i),
  0xe9,
  0xdf,
  0x416,
  0x4e2d,
  0xa0,
  0x09,
  0x0a,
];
