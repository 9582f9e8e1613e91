import type { SseStream } from '../../platform/http/sse.js';
import type { TextAnswerBody } from '../gateway/index.js';
import { openAiUsage } from './openai.format.js';

interface GatewayEvent {
  type: string;
  delta?: string;
  finishReason?: string;
  error?: { code: string; message: string };
}

export interface ChunkStream {
  /** What the gateway writes to: its `text`/`finish`/`error` events become `chat.completion.chunk`s. */
  sse: SseStream;
  /** Closes the answer once the gateway is done: the finish chunk, the usage chunk when asked for, `data: [DONE]`. */
  close(answer: TextAnswerBody | null): Promise<void>;
}

/**
 * Translates the gateway's stream into OpenAI's. The gateway's `end()` is held back, so the closing chunks can carry the
 * billed usage (known once the gateway settled), and a stream that broke midway ends with an `error` chunk instead.
 */
export function openAiChunkStream(target: SseStream, meta: { id: string; created: number; model: string }, includeUsage: boolean): ChunkStream {
  let roleSent = false;
  let failed = false;
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({ id: meta.id, object: 'chat.completion.chunk', created: meta.created, model: meta.model, choices, ...extra });
  const delta = (content: string | null, finishReason: string | null) => {
    const d = roleSent ? {} : { role: 'assistant' };
    roleSent = true;
    return chunk([{ index: 0, delta: content === null ? d : { ...d, content }, finish_reason: finishReason, logprobs: null }]);
  };

  const sse: SseStream = {
    async send(data: unknown) {
      const event = data as GatewayEvent;
      if (event.type === 'text' && event.delta) await target.send(delta(event.delta, null));
      else if (event.type === 'error' && event.error) {
        failed = true;
        await target.send({ error: { message: event.error.message, type: 'server_error', code: event.error.code.toLowerCase(), param: null } });
      }
    },
    sendRaw: (data) => target.sendRaw(data),
    comment: (text) => target.comment(text),
    end: () => undefined,
    get closed() {
      return target.closed;
    },
    get clientGone() {
      return target.clientGone;
    },
    onClientGone: (callback) => target.onClientGone(callback),
  };

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
