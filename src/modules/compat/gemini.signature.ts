import { isPackedThinking, packThinking, unpackThinking, type ThinkingBlock } from '../gateway/index.js';

/**
 * A model's thinking as Gemini's `thoughtSignature`, so that a client keeping the history (Gemini CLI,
 * `@google/genai`'s chats) hands it back and an Anthropic model gets its signed blocks on the next turn.
 *
 * The packed string (`thinking-envelope.ts`) goes out base64-encoded: Google's typed SDKs hold the field as bytes
 * (Python's `Optional[bytes]`, Go's `[]byte`) and decode it as base64 when they read an answer, which a bare
 * `sfth1.` string would fail. They send the bytes back re-encoded, perhaps in the URL-safe alphabet; Node's decoder
 * reads both. A bare packed string is read too, for a client that writes one itself.
 */

/** The packed prefix `sfth1.` is six bytes, so every base64 form of a packed string starts with these characters. */
const ENCODED_PREFIX = Buffer.from('sfth1.', 'utf8').toString('base64');

/**
 * The signature for an answer's thinking (undefined when there is none to give back). Unsigned thinking (another
 * provider's plain reasoning text) is left out: no provider takes it back.
 */
export function thoughtSignatureOf(thinking: readonly ThinkingBlock[] | undefined): string | undefined {
  const packed = packThinking(thinking?.filter((block) => block.type === 'redacted_thinking' || block.signature));
  return packed === undefined ? undefined : Buffer.from(packed, 'utf8').toString('base64');
}

/**
 * The thinking blocks a signature of ours carries, or null for a signature made elsewhere (a real Gemini one, Gemini
 * CLI's placeholder): nothing here can use those. One of ours that was cut or edited is a 400 naming `field`.
 */
export function thinkingOfSignature(signature: string | undefined, field: string): ThinkingBlock[] | null {
  if (signature === undefined) return null;
  if (signature.startsWith(ENCODED_PREFIX)) return unpackThinking(Buffer.from(signature, 'base64').toString('utf8'), field);
  return isPackedThinking(signature) ? unpackThinking(signature, field) : null;
}
