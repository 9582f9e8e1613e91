/**
 * What o200k's pre-tokenizer guarantees, used to count long texts cheaply. Its split pattern never puts whitespace
 * between two visible characters of one pre-token (a pre-token is letters, 1-3 digits or punctuation, with at most one
 * leading space or symbol, or a run of whitespace), and every token is at most 128 bytes. Hence:
 * - a text has at least one token per run of visible characters, and at least one per 128 UTF-8 bytes;
 * - a pre-token always starts at a space or tab that follows a visible character, so counting the pieces of a text
 *   cut there gives exactly the count of the whole.
 */

/** The longest o200k token, in UTF-8 bytes (a run of 128 spaces). */
const MAX_TOKEN_BYTES = 128;

/**
 * Byte-pair merging costs the square of a pre-token's length: one 200,000-letter word takes half a minute, a
 * 200,000-character CJK run minutes. Long texts are counted in slices of at most this many characters (slices of
 * 2,048 were 2 to 5 times slower on long words and rare CJK; smaller ones no faster on prose).
 */
export const TOKEN_SLICE_CHARS = 512;

/** JavaScript's `\s`, which the split pattern uses. */
function isSpace(code: number): boolean {
  if (code < 128) return code === 32 || (code >= 9 && code <= 13);
  return (
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

/** A count the text's tokens cannot be below, found without the tokenizer (one pass over the characters). */
export function tokensAtLeast(text: string): number {
  let runs = 0;
  let inRun = false;
  for (let i = 0; i < text.length; i++) {
    const visible = !isSpace(text.charCodeAt(i));
    if (visible && !inRun) runs++;
    inRun = visible;
  }
  return Math.max(runs, Math.ceil(Buffer.byteLength(text) / MAX_TOKEN_BYTES));
}

/** The last index in (from, to] where a pre-token surely starts: a space or tab after a visible character; else -1. */
function lastCut(text: string, from: number, to: number): number {
  for (let i = to; i > from; i--) {
    const code = text.charCodeAt(i);
    if ((code === 32 || code === 9) && !isSpace(text.charCodeAt(i - 1))) return i;
  }
  return -1;
}

/**
 * The text in slices of at most TOKEN_SLICE_CHARS characters whose counts add up to the whole's. A stretch with no
 * space for that long (unspaced CJK, a base64 blob, junk) is cut where it must: its count may then differ from the
 * whole's by about a token per cut, the price of never spending seconds on one word.
 */
export function* tokenSlices(text: string): Generator<string> {
  let start = 0;
  while (text.length - start > TOKEN_SLICE_CHARS) {
    let cut = lastCut(text, start, start + TOKEN_SLICE_CHARS);
    if (cut < 0) {
      cut = start + TOKEN_SLICE_CHARS;
      const code = text.charCodeAt(cut);
      if (code >= 0xdc00 && code <= 0xdfff) cut--; // never between the two halves of a surrogate pair
    }
    yield text.slice(start, cut);
    start = cut;
  }
  yield start === 0 ? text : text.slice(start);
}
