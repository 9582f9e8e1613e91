import { badRequest } from '../../../platform/http/errors.js';
import { tokensAtLeast } from '../text/token-bounds.js';
import { countTextTokensUpTo } from '../text/tokens.js';

/** OpenAI's limits, applied to every provider: inputs per call, and tokens of all inputs together. */
export const MAX_EMBEDDING_INPUTS = 2048;
export const MAX_EMBEDDING_TOTAL_TOKENS = 300_000;

const tooLongInAll = (tokens: string) =>
  badRequest(`The input is ${tokens} tokens in all; send at most ${MAX_EMBEDDING_TOTAL_TOKENS} per call.`, [{ field: 'input', message: 'is too long in all' }]);

export const tooLongForModel = (index: number, tokens: string, model: { slug: string }, limit: number) =>
  badRequest(`input[${index}] is ${tokens} tokens; the model "${model.slug}" reads at most ${limit} per text. Split it.`, [
    { field: `input.${index}`, message: 'is too long for this model' },
  ]);

/**
 * Refusals of the body that need neither a model nor the tokenizer: no texts, too many, an empty one, or more tokens
 * in all than the cap even by the lowest count the characters allow (text/token-bounds.ts). Answers those lowest counts.
 */
export function checkEmbeddingsBody(input: readonly string[]): number[] {
  if (input.length === 0) throw badRequest('input is empty: send a text or an array of texts to embed.', [{ field: 'input', message: 'must not be empty' }]);
  if (input.length > MAX_EMBEDDING_INPUTS) {
    throw badRequest(`input has ${input.length} texts; send at most ${MAX_EMBEDDING_INPUTS} per call.`, [
      { field: 'input', message: `must have at most ${MAX_EMBEDDING_INPUTS} items` },
    ]);
  }
  const empty = input.findIndex((text) => text.length === 0);
  if (empty >= 0)
    throw badRequest(`input[${empty}] is an empty string; every text to embed needs at least one character.`, [
      { field: `input.${empty}`, message: 'must not be empty' },
    ]);
  const atLeast = input.map(tokensAtLeast);
  const total = atLeast.reduce((sum, count) => sum + count, 0);
  if (total > MAX_EMBEDDING_TOTAL_TOKENS) throw tooLongInAll(`at least ${total}`);
  return atLeast;
}

/**
 * The token count of each text, for a caller already let through to `model`. A text whose lowest count passes the
 * model's context is refused untokenized; the others are tokenized in order, stopping at the first that passes the
 * context or takes the total past the cap.
 */
export function countEmbeddingTokens(input: readonly string[], atLeast: readonly number[], model: { slug: string; maxContextTokens: number | null }): number[] {
  const limit = model.maxContextTokens ?? Number.POSITIVE_INFINITY;
  const surelyLong = atLeast.findIndex((count) => count > limit);
  if (surelyLong >= 0) throw tooLongForModel(surelyLong, `at least ${atLeast[surelyLong]}`, model, limit);
  const tokens: number[] = [];
  let total = 0;
  for (const [index, text] of input.entries()) {
    const count = countTextTokensUpTo(text, Math.min(limit, MAX_EMBEDDING_TOTAL_TOKENS - total));
    if (count > limit) throw tooLongForModel(index, `more than ${limit}`, model, limit);
    total += count;
    if (total > MAX_EMBEDDING_TOTAL_TOKENS) throw tooLongInAll(`more than ${MAX_EMBEDDING_TOTAL_TOKENS}`);
    tokens.push(count);
  }
  return tokens;
}
