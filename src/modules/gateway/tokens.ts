import { countTokens, decode, decodeGenerator, encode } from 'gpt-tokenizer';
import type { ChatMessage } from './providers/types.js';

/**
 * Real token counts (o200k_base, the encoding of current OpenAI models). Used to estimate before a call and to
 * bill a stream that ended without the provider's usage. Special-token text in user input counts as plain text.
 */
const PLAIN = { disallowedSpecial: new Set<string>() };

/** Per-message framing overhead of the chat format, and the tokens that prime the reply (OpenAI cookbook). */
const TOKENS_PER_MESSAGE = 3;
const REPLY_PRIMING_TOKENS = 3;

export function countTextTokens(text: string): number {
  return text.length === 0 ? 0 : countTokens(text, PLAIN);
}

export function countMessageTokens(messages: readonly ChatMessage[]): number {
  let total = REPLY_PRIMING_TOKENS;
  for (const message of messages) total += TOKENS_PER_MESSAGE + countTextTokens(message.role) + countTextTokens(message.content);
  return total;
}

/** The text cut to at most `maxTokens` tokens (whole tokens, so the cut never splits a multi-byte character badly). */
export function truncateToTokens(text: string, maxTokens: number): { text: string; tokens: number; truncated: boolean } {
  const tokens = encode(text, PLAIN);
  if (tokens.length <= maxTokens) return { text, tokens: tokens.length, truncated: false };
  return { text: decode(tokens.slice(0, maxTokens)), tokens: maxTokens, truncated: true };
}

/** Splits text into its tokens' strings, for streaming token by token (a character split across tokens stays whole). */
export function tokenPieces(text: string): string[] {
  return [...decodeGenerator(encode(text, PLAIN))].filter((piece) => piece.length > 0);
}
