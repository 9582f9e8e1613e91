/**
 * The built-in embedding model (`local/embed`): deterministic vectors made offline from hashed features of the text,
 * so semantic search works on a fresh clone with no credentials. Texts that share words, or pieces of words
 * ("bake" and "baking"), point the same way; unrelated texts are close to orthogonal. It knows no synonyms.
 *
 * Each feature (a word, a pair of neighbouring words, a character trigram of a word) is hashed to one of 256
 * dimensions with a sign (the hashing trick); weights grow with the logarithm of the count, and the vector is
 * L2-normalised. A shorter `dimensions` keeps the first components and normalises again, as OpenAI's
 * text-embedding-3 models shorten theirs.
 */

export const LOCAL_EMBEDDING_DIMENSIONS = 256;

/** Words that say little about what a text is about (weighed far less than the others). */
const STOP_WORDS = new Set(
  (
    'a an and are as at be but by for from has have how i in is it its of on or that the this to was were what when ' +
    'where which who why will with you your do does did can could should would my me we our they their them he she his her'
  ).split(' '),
);

const WORD_WEIGHT = 1;
const STOP_WORD_WEIGHT = 0.1;
const PAIR_WEIGHT = 0.5;
const TRIGRAM_WEIGHT = 0.35;

/** FNV-1a, 32 bits: small, fast and stable across versions (the vectors must never change for a given text). */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** Lower case, accents removed, split into runs of letters and digits. */
export function wordsOf(text: string): string[] {
  return (
    text
      .normalize('NFKD')
      .replace(/\p{M}+/gu, '')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? []
  );
}

/** Each feature of the text with its weight (a feature seen again adds less: 1 + ln(count) times its base weight). */
function features(text: string): Map<string, number> {
  const seen = new Map<string, { base: number; count: number }>();
  const add = (feature: string, base: number) => {
    const entry = seen.get(feature);
    if (entry) entry.count++;
    else seen.set(feature, { base, count: 1 });
  };
  const words = wordsOf(text);
  for (const [index, word] of words.entries()) {
    const stop = STOP_WORDS.has(word);
    add(`w:${word}`, stop ? STOP_WORD_WEIGHT : WORD_WEIGHT);
    if (stop) continue;
    const padded = ` ${word} `;
    for (let i = 0; i + 3 <= padded.length; i++) add(`t:${padded.slice(i, i + 3)}`, TRIGRAM_WEIGHT);
    const next = words[index + 1];
    if (next && !STOP_WORDS.has(next)) add(`p:${word} ${next}`, PAIR_WEIGHT);
  }
  // A text of no letters or digits (punctuation, emoji) still gets a vector of its own.
  if (seen.size === 0) add(`raw:${text}`, WORD_WEIGHT);
  return new Map([...seen].map(([feature, { base, count }]) => [feature, base * (1 + Math.log(count))]));
}

function normalised(vector: Float64Array): number[] {
  let norm = 0;
  for (const value of vector) norm += value * value;
  norm = Math.sqrt(norm);
  // All features hashed past a short prefix: fall back to a fixed unit vector rather than divide by zero.
  if (norm === 0) return Array.from(vector, (_, i) => (i === 0 ? 1 : 0));
  return Array.from(vector, (value) => value / norm);
}

/** The unit vector of `text`, with `dimensions` components (at most LOCAL_EMBEDDING_DIMENSIONS). */
export function localEmbedding(text: string, dimensions = LOCAL_EMBEDDING_DIMENSIONS): number[] {
  const full = new Float64Array(LOCAL_EMBEDDING_DIMENSIONS);
  for (const [feature, weight] of features(text)) {
    const hash = fnv1a(feature);
    const sign = hash & 0x80000000 ? -1 : 1;
    full[hash % LOCAL_EMBEDDING_DIMENSIONS]! += sign * weight;
  }
  return normalised(full.subarray(0, dimensions));
}
