import { packThinking, type ThinkingBlock } from '../gateway/index.js';
import type { ResponseObjectBody } from './responses.schemas.js';

/**
 * Reasoning a stateless client can send back. An Anthropic model refuses a tool-use follow-up whose assistant turn
 * does not start with its signed thinking blocks, and a client with `store: false` (Codex CLI) keeps nothing but the
 * items it was answered. So a reasoning item carries the blocks packed (thinking-envelope.ts) as its
 * `encrypted_content` when the caller asks for it with `include`, as OpenAI does; a stored response always keeps them,
 * so that `previous_response_id` carries them back whatever the first call included.
 */

export const ENCRYPTED_REASONING = 'reasoning.encrypted_content';

/** True when the request's (or a retrieval's) `include` asks for the reasoning items' encrypted_content. */
export const wantsEncryptedReasoning = (include: readonly string[] | null | undefined): boolean => include?.includes(ENCRYPTED_REASONING) ?? false;

/**
 * The blocks worth sending back, packed: signed thinking and redacted blocks. An unsigned block (another provider's
 * plain reasoning text) is never sent to a provider (no provider can verify it), so it would only grow every turn.
 */
export function packedReasoning(thinking: readonly ThinkingBlock[] | undefined): string | undefined {
  return packThinking((thinking ?? []).filter((block) => block.type === 'redacted_thinking' || block.signature));
}

type WithEncrypted = { type: string; encrypted_content?: string };

/** An item as shown to a caller who did not ask for encrypted_content: without it. */
export function shownItem<T extends WithEncrypted>(item: T, encrypted: boolean): T {
  if (encrypted || item.type !== 'reasoning' || item.encrypted_content === undefined) return item;
  const { encrypted_content: _omitted, ...rest } = item;
  return rest as T;
}

/** A response as shown to the caller: its reasoning items' encrypted_content only when `include` asked for it. */
export function shownResponse(response: ResponseObjectBody, encrypted: boolean): ResponseObjectBody {
  if (encrypted || !response.output.some((item) => item.type === 'reasoning' && item.encrypted_content !== undefined)) return response;
  return { ...response, output: response.output.map((item) => shownItem(item, false)) };
}

/**
 * A streamed answer's thinking blocks as they grow (the gateway's own accumulation, text-stream.ts, does the same):
 * text pieces, then the signature at the block's end, or a redacted block's data at once.
 */
export function addThinkingPiece(blocks: ThinkingBlock[], event: { index?: number; delta?: string; signature?: string; redactedData?: string }): void {
  const index = event.index ?? 0;
  if (event.redactedData !== undefined) {
    blocks[index] = { type: 'redacted_thinking', data: event.redactedData };
    return;
  }
  const block = (blocks[index] ??= { type: 'thinking', thinking: '', signature: '' });
  if (block.type !== 'thinking') return;
  if (event.delta) block.thinking += event.delta;
  if (event.signature) block.signature += event.signature;
}
