import type { SseStream } from '../../platform/http/sse.js';
import type { TextAnswerBody, ToolCall } from '../gateway/index.js';
import { finishReasonOf, functionCallPart, geminiStatus, signedParts, usageMetadataOf } from './gemini.format.js';
import { thoughtSignatureOf } from './gemini.signature.js';
import { heldStream, type GatewayEvent, type TranslatedStream } from './held-stream.js';

/**
 * Translates the gateway's stream into Gemini's `streamGenerateContent` chunks, each a GenerateContentResponse (sent
 * as unnamed `data:` events with `alt=sse`, else as the elements of one JSON array). Text goes out as it comes (and
 * thinking, as `thought: true` parts, with includeThoughts); function calls go out whole in the last chunk (Gemini
 * never splits a call's arguments), with the thought signature, the finish reason and the billed usage once the
 * gateway settled. A stream that broke midway ends with a chunk holding Google's `error` object, which the SDK raises.
 */
export function geminiChunkStream(target: SseStream, meta: { responseId: string; model: string; includeThoughts?: boolean }): TranslatedStream {
  let failed = false;
  const calls = new Map<number, ToolCall>();

  const chunk = (parts: unknown[], candidate: Record<string, unknown> = {}, top: Record<string, unknown> = {}) =>
    target.send({ candidates: [{ content: { role: 'model', parts }, index: 0, ...candidate }], ...top, modelVersion: meta.model, responseId: meta.responseId });

  const sse = heldStream(target, async (event: GatewayEvent) => {
    // A refusal is text here, as on the JSON answer (gemini.format.ts).
    if ((event.type === 'text' || event.type === 'refusal') && event.delta) await chunk([{ text: event.delta }]);
    else if (event.type === 'thinking' && event.delta && meta.includeThoughts) await chunk([{ text: event.delta, thought: true }]);
    else if (event.type === 'tool_call' && event.index !== undefined) {
      const call = calls.get(event.index) ?? { id: event.id ?? `call_${meta.responseId}_${event.index}`, name: event.name ?? '', arguments: '' };
      call.arguments += event.argumentsDelta ?? '';
      calls.set(event.index, call);
    } else if (event.type === 'error' && event.error) {
      failed = true;
      const status = event.error.code === 'BAD_REQUEST' ? 400 : 500;
      await target.send({ error: { code: status, message: event.error.message, status: geminiStatus(status) } });
    }
  });

  return {
    sse,
    async close(answer: TextAnswerBody | null) {
      if (answer && !failed) {
        // The billed answer is the record: its calls win over what the stream carried.
        const finalCalls = answer.toolCalls?.length ? answer.toolCalls : [...calls.values()];
        // Without calls the last chunk holds an empty text part, as Gemini's streams end: it carries the signature,
        // and a chunk with no part at all makes `@google/genai`'s chats drop the whole answer from their history.
        const parts = finalCalls.length ? finalCalls.map(functionCallPart) : [{ text: '' }];
        await chunk(
          signedParts<object>(parts, thoughtSignatureOf(answer.thinking)),
          { finishReason: finishReasonOf(answer.finishReason) },
          { usageMetadata: usageMetadataOf(answer) },
        );
      }
      target.end();
    },
  };
}
