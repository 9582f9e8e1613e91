import { describe, expect, it } from 'vitest';
import { AppError } from '../../platform/http/errors.js';
import { solidPng } from '../../../test/helpers/fake-media-upstreams.js';
import type { TextAnswerBody } from '../gateway/index.js';
import { stopReason, toCountedBody, toMessage, toTextBody, type MessagesRequest } from './anthropic.format.js';

const png = solidPng(4, 3).toString('base64');
const weather = {
  name: 'get_weather',
  description: 'Weather in a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};
const request = (extra: Partial<MessagesRequest> = {}): MessagesRequest => ({
  model: 'local/text',
  max_tokens: 100,
  messages: [{ role: 'user', content: 'Hi' }],
  ...extra,
});

/** The 400 a request gets, or a failure when it passes. */
function refusal(body: MessagesRequest): AppError {
  try {
    toTextBody(body);
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected a 400');
}

const answer = (extra: Partial<TextAnswerBody> = {}): TextAnswerBody => ({
  text: 'Hello',
  usage: { inputTokens: 10, outputTokens: 5, creditsConsumed: 7 },
  model: 'local/text',
  requestId: 'req1',
  finishReason: 'stop',
  ...extra,
});

describe('toTextBody: an Anthropic request as the gateway text call', () => {
  it('sends the conversation as it is: no server instruction, no system message unless the caller sent one', () => {
    const body = toTextBody(request());
    expect(body).toEqual({
      model: 'local/text',
      messages: [{ role: 'user', content: 'Hi' }],
      maxTokens: 100,
      serverInstruction: false,
      fieldNames: expect.any(Object),
    });
    expect(toTextBody(request({ system: [{ type: 'text', text: 'Be brief.' }] })).messages[0]).toEqual({ role: 'system', content: 'Be brief.' });
    expect(toTextBody(request({ system: '' })).messages).toHaveLength(1);
  });

  it('carries the parameters under the gateway names', () => {
    const body = toTextBody(request({ temperature: 0.2, top_p: 0.9, top_k: 40, stop_sequences: ['END'], metadata: { user_id: 'u-42' } }));
    expect(body).toMatchObject({ temperature: 0.2, topP: 0.9, topK: 40, stop: ['END'], user: 'u-42' });
    // Its own names for the sampling hints, so a header that says one was left out names what the caller sent.
    expect(body.fieldNames).toEqual({ temperature: 'temperature', topP: 'top_p', topK: 'top_k' });
  });

  it('keeps cache markers on system, text blocks and tools, and puts the top-level one on the last text', () => {
    const ephemeral = { type: 'ephemeral' as const };
    const body = toTextBody(
      request({
        system: [{ type: 'text', text: 'Long context', cache_control: ephemeral }],
        messages: [{ role: 'user', content: 'Question' }],
        tools: [{ ...weather, cache_control: ephemeral }],
        cache_control: { type: 'ephemeral', ttl: '1h' },
      }),
    );
    expect(body.messages).toEqual([
      { role: 'system', content: [{ type: 'text', text: 'Long context', cacheControl: ephemeral }] },
      { role: 'user', content: [{ type: 'text', text: 'Question', cacheControl: { type: 'ephemeral', ttl: '1h' } }] },
    ]);
    expect(body.tools).toEqual([{ name: 'get_weather', description: 'Weather in a city', parameters: weather.input_schema, cacheControl: ephemeral }]);
  });

  it('maps images (base64 and url) to image parts in order with the text', () => {
    const body = toTextBody(
      request({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Compare' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
              { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
            ],
          },
        ],
      }),
    );
    expect(body.messages[0]!.content).toEqual([
      { type: 'text', text: 'Compare' },
      { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: png }, width: 4, height: 3 },
      { type: 'image', source: { kind: 'url', url: 'https://example.com/cat.jpg' } },
    ]);
  });

  it('turns tool_use into the assistant tool calls and tool_result blocks into tool messages, in order', () => {
    const body = toTextBody(
      request({
        tools: [weather],
        messages: [
          { role: 'user', content: 'Weather in Paris and Oslo?' },
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'Checking.' },
              { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
              { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: { city: 'Oslo' } },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_1', content: '18°C' },
              { type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: 'unknown city' }], is_error: true },
              { type: 'text', text: 'Summarise.' },
            ],
          },
        ],
      }),
    );
    expect(body.messages).toEqual([
      { role: 'user', content: 'Weather in Paris and Oslo?' },
      {
        role: 'assistant',
        content: 'Checking.',
        toolCalls: [
          { id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { id: 'toolu_2', name: 'get_weather', arguments: '{"city":"Oslo"}' },
        ],
      },
      { role: 'tool', toolCallId: 'toolu_1', content: '18°C' },
      { role: 'tool', toolCallId: 'toolu_2', content: 'unknown city', isError: true },
      { role: 'user', content: 'Summarise.' },
    ]);
  });

  it('maps tool_choice: auto is the default, any is required, tool names one, disable_parallel_tool_use turns parallel calls off', () => {
    const tools = [weather];
    expect(toTextBody(request({ tools, tool_choice: { type: 'auto' } })).toolChoice).toBeUndefined();
    expect(toTextBody(request({ tools, tool_choice: { type: 'auto', disable_parallel_tool_use: true } }))).toMatchObject({ parallelToolCalls: false });
    expect(toTextBody(request({ tools, tool_choice: { type: 'any' } }))).toMatchObject({ toolChoice: 'required' });
    expect(toTextBody(request({ tools, tool_choice: { type: 'none' } }))).toMatchObject({ toolChoice: 'none' });
    expect(toTextBody(request({ tools, tool_choice: { type: 'tool', name: 'get_weather' } }))).toMatchObject({ toolChoice: { name: 'get_weather' } });
    expect(refusal(request({ tools, tool_choice: { type: 'tool', name: 'nope' } })).message).toContain('tool_choice.name');
    expect(refusal(request({ tool_choice: { type: 'any' } })).message).toContain('defines no tools');
  });

  it('maps output_config.format to a JSON-schema answer', () => {
    const schema = { type: 'object', properties: { ok: { type: 'boolean' } } };
    expect(toTextBody(request({ output_config: { format: { type: 'json_schema', schema } } })).responseFormat).toEqual({
      type: 'json_schema',
      name: 'output',
      schema,
    });
  });

  it("takes Claude Code's adaptive thinking as an effort, and the context edit that changes nothing", () => {
    const adaptive = toTextBody(request({ max_tokens: 4096, thinking: { type: 'adaptive' }, output_config: { effort: 'low' } }));
    expect(adaptive).toMatchObject({ maxTokens: 4096, reasoning: { effort: 'low', withinMaxTokens: true }, reasoningField: 'thinking' });
    expect(toTextBody(request({ thinking: { type: 'adaptive' } })).reasoning).toEqual({ effort: 'high', withinMaxTokens: true });
    expect(toTextBody(request({ thinking: { type: 'adaptive' }, output_config: { effort: 'max' } })).reasoning).toEqual({
      effort: 'high',
      withinMaxTokens: true,
    });
    expect(toTextBody(request({ context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] } })).reasoning).toBeUndefined();
    expect(refusal(request({ context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] } })).message).toContain('context_management');
    expect(
      refusal(request({ context_management: { edits: [{ type: 'clear_thinking_20251015', keep: { type: 'thinking_turns', value: 1 } }] } })).message,
    ).toContain('context_management');
  });

  it('counts a count_tokens request as the message it describes, whatever its thinking budget', () => {
    const counted = toCountedBody({
      model: 'local/text',
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Hi' }],
      thinking: { type: 'enabled', budget_tokens: 50_000 },
    });
    expect(counted.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
    ]);
  });

  it('refuses what it cannot honour with a 400 naming it', () => {
    const cases: [Partial<MessagesRequest>, string][] = [
      [{ max_tokens: 1024, thinking: { type: 'enabled', budget_tokens: 1024 } }, 'thinking.budget_tokens'],
      [{ thinking: { type: 'enabled' } }, 'thinking.budget_tokens'],
      [{ tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, 'web_search_20250305'],
      [{ tools: [{ name: 'no_schema' }] }, 'tools.0.input_schema'],
      [{ tools: [weather, weather] }, 'tools.1.name'],
      [{ container: 'container_1' }, 'container'],
      [{ output_config: { effort: 'high' } }, 'output_config.effort'],
      [{ messages: [{ role: 'user', content: [{ type: 'document', source: {} } as never] }] }, '"document" block'],
      [{ messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'file_1' } as never }] }] }, 'Files API'],
      [
        { messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/bmp', data: png } }] }] },
        'PNG, JPEG, GIF or WebP',
      ],
      [{ messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'http://example.com/a.png' } }] }] }, 'https'],
      [{ messages: [{ role: 'user', content: [{ type: 'tool_use', id: 'x', name: 'y', input: {} }] }] }, 'assistant messages'],
      [{ messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 'x', name: 'y', input: [1] }] }] }, 'messages.0.content.0.input'],
    ];
    for (const [extra, named] of cases) {
      const err = refusal(request(extra));
      expect(err.statusCode).toBe(400);
      expect(err.message).toContain(named);
    }
    expect(toTextBody(request({ thinking: { type: 'disabled' } })).messages).toHaveLength(1);
  });

  it("carries thinking as the gateway's reasoning budget, max_tokens staying the cap of the whole output", () => {
    const body = toTextBody(request({ max_tokens: 5000, thinking: { type: 'enabled', budget_tokens: 2048 } }));
    expect(body).toMatchObject({ maxTokens: 5000, reasoning: { budgetTokens: 2048, withinMaxTokens: true }, reasoningField: 'thinking' });
    expect(toTextBody(request({ thinking: { type: 'disabled' } }))).not.toHaveProperty('reasoning');
  });

  it('refuses more images than a request may carry, counting tool results too', () => {
    const image = { type: 'image' as const, source: { type: 'base64', media_type: 'image/png', data: png } };
    const messages: MessagesRequest['messages'] = [
      { role: 'user', content: Array.from({ length: 19 }, () => image) },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'shot', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [image] }] },
    ];
    expect(toTextBody(request({ messages })).messages).toHaveLength(3);
    const err = refusal(request({ messages: [...messages, { role: 'user', content: [image] }] }));
    expect(err.message).toBe('messages.3.content.0 is image number 21; a request may carry at most 20 images.');
  });
});

describe('toMessage: the gateway answer as an Anthropic message', () => {
  it('gives one text block for a plain answer, with the stop reason and usage', () => {
    expect(toMessage(answer())).toEqual({
      id: 'msg_req1',
      type: 'message',
      role: 'assistant',
      model: 'local/text',
      content: [{ type: 'text', text: 'Hello' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 5, tokens_charged: 7 },
    });
  });

  it('gives text then tool_use blocks with parsed input; arguments that are not a JSON object keep their text in raw_input', () => {
    const message = toMessage(
      answer({
        text: '',
        finishReason: 'tool_calls',
        toolCalls: [
          { id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { id: 'call_2', name: 'get_time', arguments: '' },
          { id: 'call_3', name: 'broken', arguments: '{"city": "Par' },
        ],
      }),
    );
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content).toEqual([
      { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: 'call_2', name: 'get_time', input: {} },
      { type: 'tool_use', id: 'call_3', name: 'broken', input: {}, raw_input: '{"city": "Par' },
    ]);
    expect(toMessage(answer({ finishReason: 'tool_calls', toolCalls: [{ id: 'c', name: 'n', arguments: '{}' }] })).content[0]).toEqual({
      type: 'text',
      text: 'Hello',
    });
  });

  it('maps the finish reasons', () => {
    expect(['stop', 'length', 'tool_calls', 'content_filter', 'stop_sequence', 'error'].map(stopReason)).toEqual([
      'end_turn',
      'max_tokens',
      'tool_use',
      'refusal',
      'stop_sequence',
      'end_turn',
    ]);
  });
});
