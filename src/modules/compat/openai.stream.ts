import type { SseStream } from '../../platform/http/sse.js';
import { heldStream, type TranslatedStream } from './held-stream.js';
import { openAiUsage } from './openai.format.js';

/**
 * Translates the gateway's stream into OpenAI's. The gateway's `end()` is held back, so the closing chunks can carry the
 * billed usage (known once the gateway settled), and a stream that broke midway ends with an `error` chunk instead.
 */
export function openAiChunkStream(target: SseStream, meta: { id: string; created: number; model: string }, includeUsage: boolean): TranslatedStream {
  let roleSent = false;
  let failed = false;
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({ id: meta.id, object: 'chat.completion.chunk', created: meta.created, model: meta.model, choices, ...extra });
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

  const reasoningDelta = (text: string) => {
    const d = roleSent ? {} : { role: 'assistant' };
    roleSent = true;
    return chunk([{ index: 0, delta: { ...d, reasoning_content: text }, finish_reason: null, logprobs: null }]);
  };

  const sse = heldStream(target, async (event) => {
    if (event.type === 'text' && event.delta) await target.send(delta(event.delta, null));
    else if (event.type === 'thinking' && event.delta) await target.send(reasoningDelta(event.delta));
    else if (event.type === 'tool_call' && event.index !== undefined) {
      // OpenAI's shape: the call's first chunk carries its id, type and name; later ones only argument text.
      const first = event.id || event.name ? { id: event.id, type: 'function', function: { name: event.name, arguments: event.argumentsDelta ?? '' } } : null;
      await target.send(toolDelta(event.index, first ?? { function: { arguments: event.argumentsDelta ?? '' } }));
    }
    else if (event.type === 'error' && event.error) {
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
