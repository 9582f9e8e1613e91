import { STOP_WORDS, topicWords } from './answers.js';

/** What the prompt offers for string and number values. */
export interface PromptFacts {
  phrase: string;
  capitalised: string[];
  numbers: number[];
  email?: string;
  url?: string;
  date?: string;
}

const QUESTION_WORDS = new Set([
  ...STOP_WORDS,
  'i',
  'is',
  'are',
  'can',
  'how',
  'who',
  'why',
  'the',
  'a',
  'an',
  'show',
  'find',
  'get',
  'list',
  'book',
  'check',
  'look',
  'search',
  'send',
  'let',
  'do',
  'does',
  'will',
  'hello',
  'hi',
  'hey',
]);

/** Words and numbers kept from a prompt: enough for any schema's places and numbers, and a bounded list to try. */
const FACTS_KEPT = 64;

/** Linear in the prompt: sets for what was seen, and no regex that retries a long run from each of its positions. */
export function promptFacts(prompt: string): PromptFacts {
  const capitalised = new Set<string>();
  const sentenceStarts = new Set<string>();
  for (const match of prompt.matchAll(/(^|[.!?]\s+|\s)(\p{Lu}[\p{L}'-]*)/gu)) {
    const word = match[2]!.replace(/'s$/, '');
    if (QUESTION_WORDS.has(word.toLowerCase()) || word.length < 2) continue;
    const atSentenceStart = match.index === 0 || /[.!?]/.test(match[1]!);
    const seen = atSentenceStart ? sentenceStarts : capitalised;
    if (seen.size < FACTS_KEPT) seen.add(word);
  }
  // Then lower-case places ("weather in oslo": the word after a preposition), then capitalised sentence starts.
  for (const match of prompt.matchAll(/\b(?:in|at|to|from|near)\s+(\p{L}[\p{L}'-]{2,})/giu)) {
    if (capitalised.size >= FACTS_KEPT * 2) break;
    if (!QUESTION_WORDS.has(match[1]!.toLowerCase())) capitalised.add(capitalise(match[1]!.toLowerCase()));
  }
  const words = topicWords(prompt, 4);
  return {
    phrase: words.join(' ') || prompt.replace(/\s+/g, ' ').trim().slice(0, 40) || 'example',
    capitalised: [...new Set([...capitalised, ...sentenceStarts])].slice(0, FACTS_KEPT),
    numbers: (prompt.match(/(?<![\w.-])-?\d+(?:\.\d+)?(?![\w-])/g) ?? []).slice(0, FACTS_KEPT).map(Number).filter(Number.isFinite),
    // The lookbehind starts a match only where a run of address characters starts: without it, a long run with no `@`
    // was scanned again from each of its positions (quadratic; 100,000 letters took 16 s).
    email: /(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+/.exec(prompt)?.[0],
    url: /https?:\/\/[^\s"'<>]+/.exec(prompt)?.[0]?.replace(/[.,;:!?)]+$/, ''),
    date: /\b\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b/.exec(prompt)?.[0],
  };
}

export const capitalise = (word: string) => (word ? word[0]!.toUpperCase() + word.slice(1) : word);
