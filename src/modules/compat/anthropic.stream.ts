import type { SseStream } from '../../platform/http/sse.js';
import { anthropicUsage, stopReason } from './anthropic.format.js';
import { heldStream, type TranslatedStream } from './held-stream.js';

/**
 * Translates the gateway's stream into Anthropic's named events: message_start and content_block_start before the
 * first text, content_block_delta per piece, then content_block_stop, message_delta (stop reason, billed usage) and
 * message_stop once the gateway settled. A stream that broke midway ends with an `error` event.
 */
export function anthropicEventStream(target: SseStream, meta: { id: string; model: string }): TranslatedStream {
  let started = false;
  let failed = false;
  const send = (type: string, data: Record<string, unknown> = {}) => target.send({ type, ...data }, type);
  async function start(): Promise<void> {
    if (started) return;
    started = true;
    await send('message_start', {
      message: { id: meta.id, type: 'message', role: 'assistant', model: meta.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } },
    });
    await send('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
  }

  const sse = heldStream(target, async (event) => {
    if (event.type === 'text' && event.delta) {
      await start();
      await send('content_block_delta', { index: 0, delta: { type: 'text_delta', text: event.delta } });
    } else if (event.type === 'error' && event.error) {
      failed = true;
      await send('error', { error: { type: event.error.code === 'BAD_REQUEST' ? 'invalid_request_error' : 'api_error', message: event.error.message } });
    }
  });

  return {
    sse,
    async close(answer) {
      if (answer && !failed) {
        await start();
        await send('content_block_stop', { index: 0 });
        await send('message_delta', { delta: { stop_reason: stopReason(answer.finishReason), stop_sequence: null }, usage: anthropicUsage(answer) });
        await send('message_stop');
      }
      target.end();
    },
  };
}
