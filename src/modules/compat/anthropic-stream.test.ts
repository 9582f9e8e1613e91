import { describe, expect, it } from 'vitest';
import { MessageStream } from '@anthropic-ai/sdk/lib/MessageStream';
import type { SseStream } from '../../platform/http/sse.js';
import type { TextAnswerBody } from '../gateway/index.js';
import { anthropicEventStream } from './anthropic.stream.js';

/** An SSE target that records the named events it was sent. */
function recorder() {
  const events: Record<string, any>[] = [];
  let ended = false;
  const target: SseStream = {
    send: async (data, event) => {
      expect((data as { type: string }).type).toBe(event);
      events.push(data as Record<string, any>);
    },
    sendRaw: async () => undefined,
    comment: () => undefined,
    end: () => {
      ended = true;
    },
    get closed() {
      return ended;
    },
    clientGone: false,
    onClientGone: () => undefined,
  };
  return { target, events, ended: () => ended };
}

/** What the official SDK's stream helper assembles from these events. */
function sdkMessage(events: Record<string, unknown>[]) {
  const lines = new TextEncoder().encode(events.map((event) => JSON.stringify(event)).join('\n') + '\n');
  const readable = new ReadableStream({
    start(controller) {
      controller.enqueue(lines);
      controller.close();
    },
  });
  return MessageStream.fromReadableStream(readable).finalMessage();
}

const answer = (extra: Partial<TextAnswerBody> = {}): TextAnswerBody => ({
  text: 'Let me check.',
  usage: { inputTokens: 20, outputTokens: 12, creditsConsumed: 9 },
  model: 'local/text',
  requestId: 'r1',
  finishReason: 'tool_calls',
  ...extra,
});

describe("anthropicEventStream: the gateway's stream as Anthropic's events", () => {
  it('streams text then tool_use blocks with input_json_delta, and the SDK helper assembles the input', async () => {
    const { target, events, ended } = recorder();
    const stream = anthropicEventStream(target, { id: 'msg_r1', model: 'local/text' });
    await stream.sse.send({ type: 'text', delta: 'Let me ' });
    await stream.sse.send({ type: 'text', delta: 'check.' });
    await stream.sse.send({ type: 'tool_call', index: 0, id: 'call_a', name: 'get_weather', argumentsDelta: '' });
    await stream.sse.send({ type: 'tool_call', index: 0, argumentsDelta: '{"city":' });
    await stream.sse.send({ type: 'tool_call', index: 0, argumentsDelta: '"Paris"}' });
    await stream.sse.send({ type: 'tool_call', index: 1, id: 'call_b', name: 'get_time', argumentsDelta: '{"zone":"CET"}' });
    await stream.sse.send({ type: 'usage' });
    await stream.sse.send({ type: 'finish', finishReason: 'tool_calls' });
    stream.sse.end();
    expect(ended()).toBe(false);
    await stream.close(
      answer({
        toolCalls: [
          { id: 'call_a', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { id: 'call_b', name: 'get_time', arguments: '{"zone":"CET"}' },
        ],
      }),
    );
    expect(ended()).toBe(true);

    expect(events.map((e) => [e.type, e.index ?? null, e.delta?.type ?? e.content_block?.type ?? null])).toEqual([
      ['message_start', null, null],
      ['content_block_start', 0, 'text'],
      ['content_block_delta', 0, 'text_delta'],
      ['content_block_delta', 0, 'text_delta'],
      ['content_block_stop', 0, null],
      ['content_block_start', 1, 'tool_use'],
      ['content_block_delta', 1, 'input_json_delta'],
      ['content_block_delta', 1, 'input_json_delta'],
      ['content_block_stop', 1, null],
      ['content_block_start', 2, 'tool_use'],
      ['content_block_delta', 2, 'input_json_delta'],
      ['content_block_stop', 2, null],
      ['message_delta', null, null],
      ['message_stop', null, null],
    ]);
    expect(events[5]!.content_block).toEqual({ type: 'tool_use', id: 'call_a', name: 'get_weather', input: {} });
    expect(events.at(-2)).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: { input_tokens: 20, output_tokens: 12, tokens_charged: 9 },
    });

    const final = await sdkMessage(events);
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content).toEqual([
      { type: 'text', text: 'Let me check.' },
      { type: 'tool_use', id: 'call_a', name: 'get_weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: 'call_b', name: 'get_time', input: { zone: 'CET' } },
    ]);
    expect(final.usage).toMatchObject({ input_tokens: 20, output_tokens: 12 });
  });

  it('a tool call with no text starts at block 0', async () => {
    const { target, events } = recorder();
    const stream = anthropicEventStream(target, { id: 'msg_r2', model: 'm' });
    await stream.sse.send({ type: 'tool_call', index: 0, id: 'call_x', name: 'lookup', argumentsDelta: '{"q":"a"}' });
    await stream.close(answer({ text: '', toolCalls: [{ id: 'call_x', name: 'lookup', arguments: '{"q":"a"}' }] }));
    expect(events[1]).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'call_x', name: 'lookup', input: {} } });
    expect((await sdkMessage(events)).content).toEqual([{ type: 'tool_use', id: 'call_x', name: 'lookup', input: { q: 'a' } }]);
  });

  it('tool calls the answer holds but the stream did not carry still end up as blocks', async () => {
    const { target, events } = recorder();
    const stream = anthropicEventStream(target, { id: 'msg_r3', model: 'm' });
    await stream.sse.send({ type: 'text', delta: 'Let me check.' });
    await stream.close(answer({ toolCalls: [{ id: 'call_z', name: 'lookup', arguments: '{"q":"b"}' }] }));
    expect((await sdkMessage(events)).content).toEqual([
      { type: 'text', text: 'Let me check.' },
      { type: 'tool_use', id: 'call_z', name: 'lookup', input: { q: 'b' } },
    ]);
  });

  it('an empty answer still has one text block; a broken stream ends with an error event and no message_stop', async () => {
    const empty = recorder();
    const quiet = anthropicEventStream(empty.target, { id: 'msg_r4', model: 'm' });
    await quiet.close(answer({ text: '', finishReason: 'stop' }));
    expect(empty.events.map((e) => e.type)).toEqual(['message_start', 'content_block_start', 'content_block_stop', 'message_delta', 'message_stop']);
    expect(empty.events[3]!.delta.stop_reason).toBe('end_turn');

    const broken = recorder();
    const stream = anthropicEventStream(broken.target, { id: 'msg_r5', model: 'm' });
    await stream.sse.send({ type: 'text', delta: 'Half' });
    await stream.sse.send({ type: 'error', error: { code: 'UPSTREAM_ERROR', message: 'The provider stopped answering.' } });
    await stream.close(null);
    expect(broken.events.map((e) => e.type)).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'error']);
    expect(broken.events.at(-1)).toEqual({ type: 'error', error: { type: 'api_error', message: 'The provider stopped answering.' } });
    expect(broken.ended()).toBe(true);
  });
});
