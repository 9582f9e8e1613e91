import { badRequest } from '../../../platform/http/errors.js';
import type { ThinkingBlock } from '../providers/types.js';

/**
 * A model's thinking blocks packed into one opaque string, for surfaces whose wire format has a single opaque field
 * for it: the Responses API's `reasoning.encrypted_content` and Gemini's `thoughtSignature`. A stateless client (Codex
 * CLI with `store: false`, Gemini CLI) sends the string back on its next turn and the gateway unpacks the blocks, so
 * an Anthropic model gets its thinking and signatures intact (it refuses a tool-use follow-up without them).
 *
 * The string is `sfth1.` and the blocks as base64url JSON. It is not encrypted: the thinking is the caller's own and
 * comes back to it as the reasoning summary anyway, and the provider checks each signature, so a forged block is
 * refused upstream like any other. Unpacking checks the shape and names the field of a string that is not ours.
 */
const PREFIX = 'sfth1.';

/** The opaque string carrying `blocks` (undefined when there are none). */
export function packThinking(blocks: readonly ThinkingBlock[] | undefined): string | undefined {
  if (!blocks || blocks.length === 0) return undefined;
  const plain = blocks.map((block) =>
    block.type === 'thinking' ? { type: block.type, thinking: block.thinking, signature: block.signature } : { type: block.type, data: block.data },
  );
  return PREFIX + Buffer.from(JSON.stringify(plain), 'utf8').toString('base64url');
}

/** True when `value` looks like a packed string of ours (a provider's own signature does not). */
export const isPackedThinking = (value: unknown): value is string => typeof value === 'string' && value.startsWith(PREFIX);

function isBlock(value: unknown): value is ThinkingBlock {
  if (typeof value !== 'object' || value === null) return false;
  const block = value as Record<string, unknown>;
  if (block.type === 'thinking') return typeof block.thinking === 'string' && typeof block.signature === 'string';
  return block.type === 'redacted_thinking' && typeof block.data === 'string';
}

/**
 * The blocks `packed` carries. `field` names where the caller sent it, for the 400 that refuses a string this gateway
 * did not write (or one that was cut or edited).
 */
export function unpackThinking(packed: string, field: string): ThinkingBlock[] {
  const refuse = () =>
    badRequest(
      `${field} is not reasoning content this gateway returned. Send back the value exactly as it came in the earlier answer, or leave the item out.`,
      [{ field, message: 'must be an unchanged value from an earlier answer' }],
    );
  if (!isPackedThinking(packed)) throw refuse();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(packed.slice(PREFIX.length), 'base64url').toString('utf8'));
  } catch {
    throw refuse();
  }
  if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every(isBlock)) throw refuse();
  return parsed.map((block) =>
    block.type === 'thinking' ? { type: 'thinking', thinking: block.thinking, signature: block.signature } : { type: 'redacted_thinking', data: block.data },
  );
}
