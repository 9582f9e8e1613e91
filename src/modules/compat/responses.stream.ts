import type { SseStream } from '../../platform/http/sse.js';
import type { TextAnswerBody, ThinkingBlock } from '../gateway/index.js';
import { heldStream, type GatewayEvent, type TranslatedStream } from './held-stream.js';
import { callItemId, callName, messageItemId, reasoningItemId, type ToolNames } from './responses.format.js';
import { addThinkingPiece, packedReasoning } from './responses.reasoning.js';
import type { ResponseObjectBody } from './responses.schemas.js';

/** A part of an output message: text, or the model's refusal in its own words (OpenAI's `refusal` part). */
type MessagePart = { type: 'output_text'; text: string; annotations: unknown[] } | { type: 'refusal'; refusal: string };
interface OpenMessage {
  kind: 'message';
  outputIndex: number;
  id: string;
  /** Its parts in order; the last one grows until a piece of the other kind comes or the message closes. */
  parts: MessagePart[];
}
interface OpenReasoning {
  kind: 'reasoning';
  outputIndex: number;
  id: string;
  text: string;
  /** Its blocks as they grow, for the encrypted_content of its output_item.done. */
  blocks: ThinkingBlock[];
}
interface OpenCall {
  kind: 'call';
  outputIndex: number;
  id: string;
  callId: string;
  name: string;
  arguments: string;
}

/**
 * Translates the gateway's text stream into the Responses streaming events, each with its `type` and
 * `sequence_number` (also sent as the SSE event name): response.created and response.in_progress first; per text
 * answer an output message (output_item.added, content_part.added, output_text.delta..., output_text.done,
 * content_part.done, output_item.done; a refusal is a `refusal` part of it, with refusal.delta... and refusal.done, as
 * https://platform.openai.com/docs/api-reference/responses-streaming names them), after the model's thinking as a reasoning item (reasoning_summary_part.added,
 * reasoning_summary_text.delta.../.done, reasoning_summary_part.done, output_item.done, with encrypted_content when
 * `encryptedReasoning`); per tool call a function_call item (output_item.added,
 * function_call_arguments.delta.../.done, output_item.done; a namespace's function named as the caller named it); then response.completed (or response.incomplete) carrying
 * the whole response, usage included. `finish` turns the billed answer into that response (and stores it). A stream
 * that broke midway ends with an `error` event and response.failed instead.
 */
export function responseEventStream(
  target: SseStream,
  pending: ResponseObjectBody,
  finish: (answer: TextAnswerBody) => Promise<ResponseObjectBody>,
  { names, encryptedReasoning = false }: { names?: ToolNames; encryptedReasoning?: boolean } = {},
): TranslatedStream {
  const requestId = pending.id.slice('resp_'.length);
  let sequence = 0;
  let started = false;
  let failed = false;
  let outputs = 0;
  let open: OpenMessage | OpenCall | OpenReasoning | null = null;
  const calls = new Map<number, OpenCall>();

  const emit = (event: Record<string, unknown> & { type: string }) => target.send({ ...event, sequence_number: sequence++ }, event.type);

  async function start(): Promise<void> {
    if (started) return;
    started = true;
    await emit({ type: 'response.created', response: pending });
    await emit({ type: 'response.in_progress', response: pending });
  }

  const messageItem = (m: OpenMessage, status: 'in_progress' | 'completed') => ({
    type: 'message',
    id: m.id,
    role: 'assistant',
    status,
    content: status === 'in_progress' ? [] : m.parts,
  });
  const callItem = (c: OpenCall, status: 'in_progress' | 'completed') => ({
    type: 'function_call',
    id: c.id,
    call_id: c.callId,
    ...callName(names, c.name),
    arguments: status === 'in_progress' ? '' : c.arguments,
    status,
  });

  async function closeOpen(): Promise<void> {
    const item = open;
    open = null;
    if (!item) return;
    const at = { item_id: item.id, output_index: item.outputIndex };
    if (item.kind === 'reasoning') {
      const part = { type: 'summary_text', text: item.text };
      // A redacted block alone has no text: no summary part was opened for it.
      if (item.text) {
        await emit({ type: 'response.reasoning_summary_text.done', ...at, summary_index: 0, text: item.text });
        await emit({ type: 'response.reasoning_summary_part.done', ...at, summary_index: 0, part });
      }
      const packed = encryptedReasoning ? packedReasoning(item.blocks.filter(Boolean)) : undefined;
      const done = { type: 'reasoning', id: item.id, summary: item.text ? [part] : [], ...(packed ? { encrypted_content: packed } : {}) };
      await emit({ type: 'response.output_item.done', output_index: item.outputIndex, item: done });
    } else if (item.kind === 'message') {
      await closePart(item);
      await emit({ type: 'response.output_item.done', output_index: item.outputIndex, item: messageItem(item, 'completed') });
    } else {
      await emit({ type: 'response.function_call_arguments.done', ...at, ...callName(names, item.name), arguments: item.arguments });
      await emit({ type: 'response.output_item.done', output_index: item.outputIndex, item: callItem(item, 'completed') });
    }
  }

  /** The done events of a message's last part. */
  async function closePart(message: OpenMessage): Promise<void> {
    const part = message.parts.at(-1);
    if (!part) return;
    const at = { item_id: message.id, output_index: message.outputIndex, content_index: message.parts.length - 1 };
    if (part.type === 'output_text') await emit({ type: 'response.output_text.done', ...at, text: part.text, logprobs: [] });
    else await emit({ type: 'response.refusal.done', ...at, refusal: part.refusal });
    await emit({ type: 'response.content_part.done', ...at, part });
  }

  /** A piece of text or of a refusal: into the open message's part of that kind (a new part when the kind changes). */
  async function onMessagePiece(kind: MessagePart['type'], delta: string): Promise<void> {
    if (open?.kind !== 'message') {
      await closeOpen();
      const message: OpenMessage = { kind: 'message', outputIndex: outputs++, id: messageItemId(requestId), parts: [] };
      open = message;
      await emit({ type: 'response.output_item.added', output_index: message.outputIndex, item: messageItem(message, 'in_progress') });
    }
    const message = open;
    let part = message.parts.at(-1);
    if (part?.type !== kind) {
      await closePart(message);
      part = kind === 'output_text' ? { type: kind, text: '', annotations: [] } : { type: kind, refusal: '' };
      message.parts.push(part);
      await emit({
        type: 'response.content_part.added',
        item_id: message.id,
        output_index: message.outputIndex,
        content_index: message.parts.length - 1,
        part: { ...part },
      });
    }
    const at = { item_id: message.id, output_index: message.outputIndex, content_index: message.parts.length - 1 };
    if (part.type === 'output_text') {
      part.text += delta;
      await emit({ type: 'response.output_text.delta', ...at, delta, logprobs: [] });
    } else {
      part.refusal += delta;
      await emit({ type: 'response.refusal.delta', ...at, delta });
    }
  }

  /**
   * Every thinking block goes to one reasoning item: its text as the summary, the blocks themselves (signatures and
   * redacted blocks included) as its encrypted_content (the final response holds the same).
   */
  async function onThinking(event: GatewayEvent): Promise<void> {
    if (!event.delta && !event.signature && event.redactedData === undefined) return;
    if (open?.kind !== 'reasoning') {
      await closeOpen();
      const item: OpenReasoning = { kind: 'reasoning', outputIndex: outputs++, id: reasoningItemId(requestId), text: '', blocks: [] };
      open = item;
      await emit({ type: 'response.output_item.added', output_index: item.outputIndex, item: { type: 'reasoning', id: item.id, summary: [] } });
    }
    const item = open;
    addThinkingPiece(item.blocks, event);
    if (!event.delta) return;
    if (!item.text)
      await emit({
        type: 'response.reasoning_summary_part.added',
        item_id: item.id,
        output_index: item.outputIndex,
        summary_index: 0,
        part: { type: 'summary_text', text: '' },
      });
    item.text += event.delta;
    await emit({ type: 'response.reasoning_summary_text.delta', item_id: item.id, output_index: item.outputIndex, summary_index: 0, delta: event.delta });
  }

  async function onToolCall(event: GatewayEvent): Promise<void> {
    const index = event.index ?? 0;
    let call = calls.get(index);
    if (!call) {
      await closeOpen();
      call = { kind: 'call', outputIndex: outputs++, id: callItemId(requestId, index), callId: event.id ?? '', name: event.name ?? '', arguments: '' };
      calls.set(index, call);
      open = call;
      await emit({ type: 'response.output_item.added', output_index: call.outputIndex, item: callItem(call, 'in_progress') });
    }
    if (event.argumentsDelta) {
      call.arguments += event.argumentsDelta;
      await emit({ type: 'response.function_call_arguments.delta', item_id: call.id, output_index: call.outputIndex, delta: event.argumentsDelta });
    }
  }

  const sse = heldStream(target, async (event) => {
    await start();
    if (event.type === 'text' && event.delta) await onMessagePiece('output_text', event.delta);
    else if (event.type === 'refusal' && event.delta) await onMessagePiece('refusal', event.delta);
    else if (event.type === 'thinking') await onThinking(event);
    else if (event.type === 'tool_call') await onToolCall(event);
    else if (event.type === 'error' && event.error) {
      failed = true;
      await emit({ type: 'error', code: event.error.code.toLowerCase(), message: event.error.message, param: null });
    }
  });

  return {
    sse,
    async close(answer) {
      try {
        await start();
        if (answer && !failed) {
          await closeOpen();
          const response = await finish(answer);
          await emit({ type: response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', response });
          return;
        }
        if (!failed) await emit({ type: 'error', code: 'server_error', message: 'The answer did not complete.', param: null });
        await emit({
          type: 'response.failed',
          response: { ...pending, status: 'failed', error: { code: 'server_error', message: 'The answer did not complete; retry the request.' } },
        });
      } catch {
        // `finish` failed (it logs why): the answer was billed but could not be kept.
        await emit({
          type: 'error',
          code: 'server_error',
          message:
            'The answer was delivered but could not be stored, so it cannot be retrieved or continued. Retry; with the same Idempotency-Key the retry is not charged again.',
          param: null,
        });
        await emit({
          type: 'response.failed',
          response: { ...pending, status: 'failed', error: { code: 'server_error', message: 'The answer could not be stored.' } },
        });
      } finally {
        target.end();
      }
    },
  };
}
