import type { SseStream } from '../../platform/http/sse.js';
import { heldStream, type TranslatedStream } from './held-stream.js';
import { openAiUsage, reasoningFormat } from './openai.format.js';

type ThinkingPiece = { index: number; delta?: string; signature?: string; redactedData?: string };

/**
 * A piece of a thinking block as one of OpenRouter's streamed `reasoning_details` entries: its text, its signature
 * (with empty text, so a client that joins pieces by index never reads `undefined`) or a redacted block's data.
 */
function reasoningPiece(piece: ThinkingPiece, model: string) {
  if (piece.redactedData !== undefined)
    return { type: 'reasoning.encrypted', data: piece.redactedData, format: reasoningFormat(model, true), index: piece.index };
  const signature = piece.signature ? { signature: piece.signature } : {};
  return { type: 'reasoning.text', text: piece.delta ?? '', ...signature, format: reasoningFormat(model, Boolean(piece.signature)), index: piece.index };
}

/**
 * Translates the gateway's stream into OpenAI's. The gateway's `end()` is held back, so the closing chunks can carry the
 * billed usage (known once the gateway settled), and a stream that broke midway ends with an `error` chunk instead.
 */
export function openAiChunkStream(target: SseStream, meta: { id: string; created: number; model: string }, includeUsage: boolean): TranslatedStream {
  let roleSent = false;
  let failed = false;
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({
    id: meta.id,
    object: 'chat.completion.chunk',
    created: meta.created,
    model: meta.model,
    choices,
    ...extra,
  });
  const delta = (content: string | null, finishReason: string | null) => {
    const d = roleSent ? {} : { role: 'assistant' };
    roleSent = true;
    return chunk([{ index: 0, delta: content === null ? d : { ...d, content }, finish_reason: finishReason, logprobs: null }]);
  };

  const toolDelta = (index: number, call: Record<string, unknown>) => {
    const d = roleSent ? {} : { role: 'assistant', content: null };
    roleSent = true;
    return chunk([{ index: 0, delta: { ...d, tool_calls: [{ index, ...call }] }, finish_reason: null, logprobs: null }]);
  };

  // OpenAI streams a refusal as `delta.refusal` pieces, apart from the content (null on the first chunk).
  const refusalDelta = (piece: string) => {
    const d = roleSent ? {} : { role: 'assistant', content: null };
    roleSent = true;
    return chunk([{ index: 0, delta: { ...d, refusal: piece }, finish_reason: null, logprobs: null }]);
  };

  // The text goes in `reasoning_content` too (DeepSeek-style clients read it); the details carry signatures as well.
  const reasoningDelta = (piece: ThinkingPiece) => {
    const d = roleSent ? {} : { role: 'assistant' };
    roleSent = true;
    const text = piece.delta ? { reasoning_content: piece.delta } : {};
    return chunk([{ index: 0, delta: { ...d, ...text, reasoning_details: [reasoningPiece(piece, meta.model)] }, finish_reason: null, logprobs: null }]);
  };

  const sse = heldStream(target, async (event) => {
    if (event.type === 'text' && event.delta) await target.send(delta(event.delta, null));
    else if (event.type === 'refusal' && event.delta) await target.send(refusalDelta(event.delta));
    else if (event.type === 'thinking' && event.index !== undefined && (event.delta || event.signature || event.redactedData !== undefined))
      await target.send(reasoningDelta({ ...event, index: event.index }));
    else if (event.type === 'tool_call' && event.index !== undefined) {
      // OpenAI's shape: the call's first chunk carries its id, type and name; later ones only argument text.
      const first = event.id || event.name ? { id: event.id, type: 'function', function: { name: event.name, arguments: event.argumentsDelta ?? '' } } : null;
      await target.send(toolDelta(event.index, first ?? { function: { arguments: event.argumentsDelta ?? '' } }));
    } else if (event.type === 'error' && event.error) {
      failed = true;
      await target.send({ error: { message: event.error.message, type: 'server_error', code: event.error.code.toLowerCase(), param: null } });
    }
  });

  return {
    sse,
    async close(answer) {
      if (answer && !failed) {
        await target.send(delta(null, answer.finishReason ?? 'stop'));
        if (includeUsage) await target.send(chunk([], { usage: openAiUsage(answer) }));
        await target.sendRaw('[DONE]');
      }
      target.end();
    },
  };
}
