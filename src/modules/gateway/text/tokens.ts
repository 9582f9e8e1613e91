import { createRequire } from 'node:module';
import type * as GptTokenizer from 'gpt-tokenizer';
import { messageImages, messageText, type ChatMessage, type ImagePart, type ToolDefinition } from '../providers/types.js';
import { TOKEN_SLICE_CHARS, tokenSlices, tokensAtLeast } from './token-bounds.js';

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

/** Long texts are counted slice by slice (token-bounds.ts): the same count, without the tokenizer's quadratic worst case. */
export function countTextTokens(text: string): number {
  return countTextTokensUpTo(text, Number.POSITIVE_INFINITY);
}

/** The count of `text`, or, once the count passes `limit`, a partial count above it (the rest is not tokenized). */
export function countTextTokensUpTo(text: string, limit: number): number {
  if (text.length === 0) return 0;
  const { countTokens } = tokenizer ?? loadTokenizer();
  if (text.length <= TOKEN_SLICE_CHARS) return countTokens(text, PLAIN);
  let total = 0;
  for (const slice of tokenSlices(text)) {
    total += countTokens(slice, PLAIN);
    if (total > limit) break;
  }
  return total;
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

/** Tokens an image costs a provider's model (see `catalog/image-tokens.ts`); the default is OpenAI's, a plugin may have its own. */
export type ImageTokenRule = (image: ImagePart) => number;

/** OpenAI's rule: low detail 85; otherwise fit in 2048x2048, shortest side to 768, then 170 per 512-pixel tile plus 85. */
export function openAiImageTokens(image: ImagePart): number {
  if (image.detail === 'low') return 85;
  let width = image.width ?? 2048;
  let height = image.height ?? 2048;
  const fit = Math.min(1, 2048 / Math.max(width, height));
  width *= fit;
  height *= fit;
  const shortest = Math.min(1, 768 / Math.min(width, height));
  width *= shortest;
  height *= shortest;
  return 170 * Math.ceil(width / 512) * Math.ceil(height / 512) + 85;
}

/** What a message costs besides its text: its images, and its tool calls (name and arguments) or tool-result id. */
function extrasTokens(message: ChatMessage, imageTokens: ImageTokenRule): number {
  let total = 0;
  if (typeof message.content !== 'string') for (const image of messageImages(message)) total += imageTokens(image);
  for (const call of message.toolCalls ?? []) total += TOKENS_PER_MESSAGE + countContentTokens(call.name) + countContentTokens(call.arguments);
  if (message.toolCallId) total += countContentTokens(message.toolCallId);
  return total;
}

export function countMessageTokens(messages: readonly ChatMessage[], imageTokens: ImageTokenRule = openAiImageTokens): number {
  let total = REPLY_PRIMING_TOKENS;
  for (const message of messages)
    total += TOKENS_PER_MESSAGE + tokensOfRole(message.role) + countContentTokens(messageText(message)) + extrasTokens(message, imageTokens);
  return total;
}

/** The tool definitions as the model reads them (names, descriptions and schemas, as JSON). */
export function countToolTokens(tools: readonly ToolDefinition[] | undefined): number {
  if (!tools || tools.length === 0) return 0;
  return countContentTokens(JSON.stringify(tools.map((t) => ({ name: t.name, description: t.description ?? '', parameters: t.parameters }))));
}

/** The output of a call: its text and the tool calls it wrote. */
export function countAnswerTokens(text: string, toolCalls: readonly { name: string; arguments: string }[] | undefined): number {
  let total = countTextTokens(text);
  for (const call of toolCalls ?? []) total += countTextTokens(call.name) + countTextTokens(call.arguments);
  return total;
}

/**
 * An upper bound of `countMessageTokens` summed message by message, without tokenizing: a token of this encoding is at
 * least one UTF-8 byte, so a text has at most as many tokens as bytes. When it fits a budget, so do the real counts.
 * Messages with images or tool calls are counted exactly (they are few; their cost is not their bytes).
 */
export function messageTokensAtMost(messages: readonly ChatMessage[]): number {
  let total = 0;
  for (const message of messages) {
    if (typeof message.content !== 'string' || message.toolCalls || message.toolCallId) total += countMessageTokens([message]);
    else total += REPLY_PRIMING_TOKENS + TOKENS_PER_MESSAGE + tokensOfRole(message.role) + Buffer.byteLength(message.content);
  }
  return total;
}

/**
 * A count the messages' tokens (as `countMessageTokens` counts them) cannot be below, found without the tokenizer:
 * enough to refuse a body that surely cannot fit before spending time on its tokens. Images and tool calls add nothing.
 */
export function messageTokensAtLeast(messages: readonly ChatMessage[]): number {
  let total = REPLY_PRIMING_TOKENS;
  for (const message of messages) total += TOKENS_PER_MESSAGE + tokensAtLeast(messageText(message));
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
