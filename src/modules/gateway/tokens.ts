import { createRequire } from 'node:module';
import type * as GptTokenizer from 'gpt-tokenizer';
import type { ChatMessage } from './providers/types.js';

/**
 * gpt-tokenizer's tables hold ~20 MB of heap (~40 MB resident), so they are loaded by the first count rather than at
 * start: a service that never meters text (or has not yet) does not carry them. A synchronous `require` (its CommonJS
 * build), so the counting functions stay synchronous; the first call pays the load once (~170 ms).
 */
let tokenizer: typeof GptTokenizer | undefined;
const loadTokenizer = (): typeof GptTokenizer => (tokenizer ??= createRequire(import.meta.url)('gpt-tokenizer') as typeof GptTokenizer);

/**
 * Real token counts (o200k_base, the encoding of current OpenAI models). Used to estimate before a call and to
 * bill a stream that ended without the provider's usage. Special-token text in user input counts as plain text.
 */
const PLAIN = { disallowedSpecial: new Set<string>() };

/** Per-message framing overhead of the chat format, and the tokens that prime the reply (OpenAI cookbook). */
const TOKENS_PER_MESSAGE = 3;
const REPLY_PRIMING_TOKENS = 3;

export function countTextTokens(text: string): number {
  return text.length === 0 ? 0 : (tokenizer ?? loadTokenizer()).countTokens(text, PLAIN);
}

const roleTokens = new Map<string, number>();
const tokensOfRole = (role: string): number => {
  let tokens = roleTokens.get(role);
  if (tokens === undefined) {
    tokens = countTextTokens(role);
    if (roleTokens.size < 16) roleTokens.set(role, tokens);
  }
  return tokens;
};

/**
 * Token counts of recent message texts: a chat sends its whole history again on every turn, and a system prompt or
 * server instruction repeats on every call, so most of a call's messages were counted before. Bounded in entries and
 * in the length of a text kept (the tokenizer's cost grows with the text; the map's memory stays small).
 */
const CACHED_TEXTS = 10_000;
const CACHED_TEXT_MAX_CHARS = 32_768;
const textTokens = new Map<string, number>();

function countContentTokens(text: string): number {
  const cached = textTokens.get(text);
  if (cached !== undefined) return cached;
  const tokens = countTextTokens(text);
  if (text.length <= CACHED_TEXT_MAX_CHARS) {
    if (textTokens.size >= CACHED_TEXTS) textTokens.delete(textTokens.keys().next().value!);
    textTokens.set(text, tokens);
  }
  return tokens;
}

export function countMessageTokens(messages: readonly ChatMessage[]): number {
  let total = REPLY_PRIMING_TOKENS;
  for (const message of messages) total += TOKENS_PER_MESSAGE + tokensOfRole(message.role) + countContentTokens(message.content);
  return total;
}

/**
 * An upper bound of `countMessageTokens` summed message by message, without tokenizing: a token of this encoding is at
 * least one UTF-8 byte, so a text has at most as many tokens as bytes. When it fits a budget, so do the real counts.
 */
export function messageTokensAtMost(messages: readonly ChatMessage[]): number {
  let total = 0;
  for (const message of messages) total += REPLY_PRIMING_TOKENS + TOKENS_PER_MESSAGE + tokensOfRole(message.role) + Buffer.byteLength(message.content);
  return total;
}

/** The text cut to at most `maxTokens` tokens (whole tokens, so the cut never splits a multi-byte character badly). */
export function truncateToTokens(text: string, maxTokens: number): { text: string; tokens: number; truncated: boolean } {
  const { encode, decode } = tokenizer ?? loadTokenizer();
  const tokens = encode(text, PLAIN);
  if (tokens.length <= maxTokens) return { text, tokens: tokens.length, truncated: false };
  return { text: decode(tokens.slice(0, maxTokens)), tokens: maxTokens, truncated: true };
}

/** Splits text into its tokens' strings, for streaming token by token (a character split across tokens stays whole). */
export function tokenPieces(text: string): string[] {
  const { encode, decodeGenerator } = tokenizer ?? loadTokenizer();
  return [...decodeGenerator(encode(text, PLAIN))].filter((piece) => piece.length > 0);
}
