import type { SseStream } from '../../platform/http/sse.js';
import type { TextAnswerBody } from '../gateway/index.js';
import { anthropicUsage, answerStopReason } from './anthropic.format.js';
import { heldStream, type GatewayEvent, type TranslatedStream } from './held-stream.js';

/**
 * Translates the gateway's stream into Anthropic's named events
 * (https://docs.claude.com/en/docs/build-with-claude/streaming): message_start, then one content block at a time with
 * increasing indexes: thinking as `thinking_delta`s and its `signature_delta`, text as `text_delta`s, each tool call as a `tool_use` block (id, name, input {}) whose arguments
 * follow as `input_json_delta`s; then message_delta (stop reason, billed usage) and message_stop once the gateway
 * settled. A stream that broke midway ends with an `error` event.
 *
 * Tool arguments are passed on as the model writes them, so the client's partial-JSON parser sees the model's text.
 */
export function anthropicEventStream(target: SseStream, meta: { id: string; model: string }): TranslatedStream {
  let started = false;
  let failed = false;
  let blocks = 0;
  /** The open block: its index and, for a tool call, the gateway's index of that call. */
  let open: { index: number; call: number | null } | null = null;
  /** The block index of each tool call (by the gateway's index). */
  const callBlocks = new Map<number, number>();
  /** The block index of each thinking block (by the gateway's index). */
  const thinkingBlocks = new Map<number, number>();

  const send = (type: string, data: Record<string, unknown> = {}) => target.send({ type, ...data }, type);
  async function start(): Promise<void> {
    if (started) return;
    started = true;
    await send('message_start', {
      message: {
        id: meta.id,
        type: 'message',
        role: 'assistant',
        model: meta.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 0, output_tokens: 0 },
      },
    });
  }
  async function closeBlock(): Promise<void> {
    if (!open) return;
    await send('content_block_stop', { index: open.index });
    open = null;
  }
  async function openBlock(contentBlock: Record<string, unknown>, call: number | null): Promise<number> {
    await start();
    await closeBlock();
    const index = blocks++;
    open = { index, call };
    await send('content_block_start', { index, content_block: contentBlock });
    return index;
  }

  async function text(delta: string): Promise<void> {
    const index = open?.call === null ? open.index : await openBlock({ type: 'text', text: '' }, null);
    await send('content_block_delta', { index, delta: { type: 'text_delta', text: delta } });
  }

  async function toolCall(call: number, piece: { id?: string; name?: string; argumentsDelta?: string }): Promise<void> {
    let index = callBlocks.get(call);
    if (index === undefined) {
      index = await openBlock({ type: 'tool_use', id: piece.id ?? `toolu_${meta.id}_${call}`, name: piece.name ?? '', input: {} }, call);
      callBlocks.set(call, index);
    }
    // A piece for an earlier call (providers that interleave) goes to that call's block, where the SDK appends it.
    if (piece.argumentsDelta) await send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece.argumentsDelta } });
  }

  /** Thinking comes first, as Anthropic streams it: `thinking_delta`s, then its `signature_delta`; a redacted block whole. */
  async function thinking(index: number, piece: GatewayEvent): Promise<void> {
    let block = thinkingBlocks.get(index);
    if (block === undefined) {
      const start =
        piece.redactedData !== undefined ? { type: 'redacted_thinking', data: piece.redactedData } : { type: 'thinking', thinking: '', signature: '' };
      block = await openBlock(start, null);
      thinkingBlocks.set(index, block);
      open = { index: block, call: -1 - index }; // never taken for a text or a tool call's block
    }
    if (piece.delta) await send('content_block_delta', { index: block, delta: { type: 'thinking_delta', thinking: piece.delta } });
    if (piece.signature) await send('content_block_delta', { index: block, delta: { type: 'signature_delta', signature: piece.signature } });
  }

  const sse = heldStream(target, async (event: GatewayEvent) => {
    // A refusal's words are text on this wire, and the message stops with `refusal` (anthropic.format.ts).
    if ((event.type === 'text' || event.type === 'refusal') && event.delta) await text(event.delta);
    else if (event.type === 'thinking' && event.index !== undefined) await thinking(event.index, event);
    else if (event.type === 'tool_call' && event.index !== undefined) await toolCall(event.index, event);
    else if (event.type === 'error' && event.error) {
      failed = true;
      await send('error', { error: { type: event.error.code === 'BAD_REQUEST' ? 'invalid_request_error' : 'api_error', message: event.error.message } });
    }
  });

  /** Tool calls the billed answer holds that the stream did not carry: the message must still end with all of them. */
  async function missingToolCalls(answer: TextAnswerBody): Promise<void> {
    for (const [call, { id, name, arguments: args }] of (answer.toolCalls ?? []).entries()) {
      if (!callBlocks.has(call)) await toolCall(call, { id, name, argumentsDelta: args });
    }
  }

  return {
    sse,
    async close(answer) {
      if (answer && !failed) {
        await start();
        await missingToolCalls(answer);
        if (blocks === 0) await openBlock({ type: 'text', text: '' }, null);
        await closeBlock();
        await send('message_delta', { delta: { stop_reason: answerStopReason(answer), stop_sequence: null }, usage: anthropicUsage(answer) });
        await send('message_stop');
      }
      target.end();
    },
  };
}
