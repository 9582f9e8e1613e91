import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic } from './anthropic.fake.js';
import { solidPng } from '../../../../../test/helpers/fake-media-upstreams.js';
import type { FakeUpstream } from '../../../../../test/helpers/fake-upstreams.js';
import { rejection } from '../../../../../test/helpers/rejection.js';
import { collect, textOf } from '../../../../../test/helpers/text-streams.js';
import { createAnthropicAdapter } from './text.js';
import { UpstreamError, type ChatMessage, type TextRequest, type TextStreamEvent, type ToolDefinition, type UpstreamCredential } from '../types.js';

// The Anthropic adapter's richer request against the fake Messages API, which records what it receives and refuses
// what the real API refuses. Errors, timeouts and broken streams are covered in providers.test.ts.

const upstreamError = (promise: Promise<unknown>) => rejection(promise, UpstreamError);

const weather: ToolDefinition = {
  name: 'get_weather',
  description: 'The current weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const time: ToolDefinition = { name: 'get_time', parameters: { type: 'object', properties: {} } };
const ask: ChatMessage = { role: 'user', content: 'Weather in Paris and Oslo?' };
const toolCalls = [
  { id: 'toolu_01', name: 'get_weather', arguments: '{"city":"Paris"}' },
  { id: 'toolu_02', name: 'get_weather', arguments: '{"city":"Oslo"}' },
];

let fake: FakeUpstream;
const adapter = createAnthropicAdapter({ streamIdleTimeoutMs: 1000 });
let credential: UpstreamCredential;
const request = (extra: Partial<TextRequest>): TextRequest => ({ model: 'claude-fake', messages: [ask], maxTokens: 200, ...extra });
const lastBody = () => fake.calls().at(-1)!.body;

beforeAll(async () => {
  fake = await startFakeAnthropic();
  credential = { accountId: 'acc-a', providerSlug: 'anthropic', apiKey: 'sk-ant-1', baseUrl: fake.baseUrl, timeoutMs: 2000 };
});
afterAll(async () => fake?.close());
beforeEach(() => fake.decide(() => ({ kind: 'ok' })));

describe('what the adapter declares', () => {
  it('carries tools, tool choice, parallel calls, response format, topP, topK, stop and user; images and JSON schema yes', () => {
    expect([...adapter.parameters].sort()).toEqual(['parallelToolCalls', 'responseFormat', 'stop', 'toolChoice', 'tools', 'topK', 'topP', 'user']);
    expect(adapter.images).toBe(true);
    expect(adapter.jsonSchema).toBe(true);
  });
});

describe('request parameters', () => {
  it('sends tools as input_schema with their cache marker, and the sampling parameters by their Anthropic names', async () => {
    await adapter.generateText(
      credential,
      request({ tools: [weather, { ...time, cacheControl: { type: 'ephemeral' } }], topK: 40, stop: ['END'], user: 'user-7', temperature: 1.6 }),
    );
    expect(lastBody()).toMatchObject({
      tools: [
        { name: 'get_weather', description: 'The current weather in a city', input_schema: weather.parameters },
        { name: 'get_time', input_schema: { type: 'object', properties: {} }, cache_control: { type: 'ephemeral' } },
      ],
      top_k: 40,
      stop_sequences: ['END'],
      metadata: { user_id: 'user-7' },
      temperature: 1,
    });
    expect(lastBody()).not.toHaveProperty('tool_choice');
    await adapter.generateText(credential, request({ topP: 0.9 }));
    expect(lastBody()).toMatchObject({ top_p: 0.9 });
  });

  it.each([
    ['auto', true, { type: 'auto' }],
    ['required', true, { type: 'any' }],
    ['none', true, { type: 'none' }],
    [{ name: 'get_time' }, true, { type: 'tool', name: 'get_time' }],
    ['auto', false, { type: 'auto', disable_parallel_tool_use: true }],
    ['required', false, { type: 'any', disable_parallel_tool_use: true }],
    [{ name: 'get_time' }, false, { type: 'tool', name: 'get_time', disable_parallel_tool_use: true }],
    [undefined, false, { type: 'auto', disable_parallel_tool_use: true }],
  ] as const)('maps toolChoice %j with parallel calls %s', async (toolChoice, parallelToolCalls, expected) => {
    await adapter.generateText(credential, request({ tools: [weather, time], toolChoice, parallelToolCalls }));
    expect(lastBody().tool_choice).toEqual(expected);
  });

  it('sends no tool_choice without tools', async () => {
    await adapter.generateText(credential, request({ toolChoice: 'auto', parallelToolCalls: false }));
    expect(lastBody()).not.toHaveProperty('tool_choice');
    expect(lastBody()).not.toHaveProperty('tools');
  });

  it("passes on the provider's refusal of temperature with top_p as a bad request", async () => {
    const error = await upstreamError(adapter.generateText(credential, request({ temperature: 0.5, topP: 0.9 })));
    expect(error).toMatchObject({ kind: 'bad_request', status: 400, message: expect.stringContaining('`temperature` and `top_p` cannot both be specified') });
  });

  it('answers "stop" when a stop sequence ended the answer', async () => {
    fake.decide(() => ({ kind: 'ok', text: 'one two END three' }));
    expect(await adapter.generateText(credential, request({ stop: ['END'] }))).toMatchObject({ text: 'one two ', finishReason: 'stop' });
  });

  it('maps a refusal to content_filter, streamed or not', async () => {
    fake.decide(() => ({ kind: 'ok', text: 'I cannot help with that.', finishReason: 'refusal' }));
    expect((await adapter.generateText(credential, request({}))).finishReason).toBe('content_filter');
    expect((await collect(await adapter.streamText(credential, request({})))).at(-1)).toEqual({ type: 'finish', finishReason: 'content_filter' });
  });
});

describe('tool calls in answers', () => {
  it('maps tool_use blocks to tool calls with finish reason tool_calls', async () => {
    fake.decide(() => ({ kind: 'ok', text: 'Let me check.', toolCalls }));
    const result = await adapter.generateText(credential, request({ tools: [weather] }));
    expect(result).toMatchObject({ text: 'Let me check.', toolCalls, finishReason: 'tool_calls' });
    expect(result.usage!.outputTokens).toBeGreaterThan(0);
  });

  it('streams each call: index, id and name first, then the pieces of its arguments', async () => {
    fake.decide(() => ({ kind: 'ok', text: 'Checking both.', toolCalls }));
    const events = await collect(await adapter.streamText(credential, request({ tools: [weather] })));
    expect(textOf(events)).toBe('Checking both.');
    const calls = events.filter((e): e is Extract<TextStreamEvent, { type: 'tool_call' }> => e.type === 'tool_call');
    expect(calls[0]).toEqual({ type: 'tool_call', index: 0, id: 'toolu_01', name: 'get_weather', argumentsDelta: '' });
    expect(calls.filter((c) => c.id !== undefined).map((c) => [c.index, c.id, c.name])).toEqual([
      [0, 'toolu_01', 'get_weather'],
      [1, 'toolu_02', 'get_weather'],
    ]);
    expect(calls.filter((c) => c.index === 0 && c.id === undefined).length).toBeGreaterThan(1); // one event per input_json_delta
    for (const [index, call] of toolCalls.entries()) {
      expect(
        calls
          .filter((c) => c.index === index)
          .map((c) => c.argumentsDelta)
          .join(''),
      ).toBe(call.arguments);
    }
    expect(events.at(-2)).toMatchObject({ type: 'usage', usage: { inputTokens: expect.any(Number), outputTokens: expect.any(Number) } });
    expect(events.at(-1)).toEqual({ type: 'finish', finishReason: 'tool_calls' });
  });

  it('streams the arguments of a call without input as {}', async () => {
    fake.decide(() => ({ kind: 'ok', toolCalls: [{ id: 'toolu_09', name: 'get_time', arguments: '' }] }));
    const events = await collect(await adapter.streamText(credential, request({ tools: [time] })));
    expect(events.filter((e) => e.type === 'tool_call').map((e) => (e as { argumentsDelta: string }).argumentsDelta)).toEqual(['', '{}']);
  });
});

describe('tool round trip', () => {
  const followUp: ChatMessage[] = [
    { role: 'system', content: 'Be brief.' },
    ask,
    { role: 'assistant', content: 'Let me check.', toolCalls },
    { role: 'tool', toolCallId: 'toolu_01', content: '18°C, sunny' },
    { role: 'tool', toolCallId: 'toolu_02', content: [{ type: 'text', text: 'station offline' }], isError: true },
    { role: 'user', content: 'Answer in one line.' },
  ];

  it('sends the calls as tool_use blocks and the results first in one user turn', async () => {
    fake.decide(() => ({ kind: 'ok', toolCalls: [toolCalls[0]!] }));
    const first = await adapter.generateText(credential, request({ messages: [followUp[0]!, ask], tools: [weather] }));
    expect(first.toolCalls).toEqual([toolCalls[0]]);

    fake.decide(() => ({ kind: 'ok', text: 'Paris is sunny; Oslo is unknown.' }));
    const second = await adapter.generateText(credential, request({ messages: followUp, tools: [weather] }));
    expect(second).toMatchObject({ text: 'Paris is sunny; Oslo is unknown.', finishReason: 'stop' });
    expect(lastBody().system).toBe('Be brief.');
    expect(lastBody().messages).toEqual([
      { role: 'user', content: 'Weather in Paris and Oslo?' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me check.' },
          { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'toolu_02', name: 'get_weather', input: { city: 'Oslo' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_01', content: '18°C, sunny' },
          { type: 'tool_result', tool_use_id: 'toolu_02', content: [{ type: 'text', text: 'station offline' }], is_error: true },
          { type: 'text', text: 'Answer in one line.' },
        ],
      },
    ]);
  });

  it('puts tool results ahead of user text that came before them, as the API requires', async () => {
    const reordered = [ask, followUp[2]!, { role: 'user' as const, content: 'Quick please.' }, followUp[3]!, followUp[4]!];
    await adapter.generateText(credential, request({ messages: reordered, tools: [weather] }));
    expect(lastBody().messages[2].content.map((b: { type: string }) => b.type)).toEqual(['tool_result', 'tool_result', 'text']);
  });

  it('streams the follow-up too', async () => {
    fake.decide(() => ({ kind: 'ok', text: 'Sunny in Paris.' }));
    expect(textOf(await collect(await adapter.streamText(credential, request({ messages: followUp, tools: [weather] }))))).toBe('Sunny in Paris.');
    expect(lastBody().stream).toBe(true);
  });

  it('refuses a call whose arguments are not JSON, naming it, before any network call', async () => {
    const sent = fake.calls().length;
    const broken: ChatMessage[] = [
      ask,
      { role: 'assistant', content: '', toolCalls: [{ id: 'toolu_07', name: 'get_weather', arguments: '{"city":' }] },
      { role: 'tool', toolCallId: 'toolu_07', content: 'x' },
    ];
    const error = await upstreamError(adapter.generateText(credential, request({ messages: broken, tools: [weather] })));
    expect(error).toMatchObject({ kind: 'bad_request', message: expect.stringContaining('toolu_07 (get_weather)') });
    expect((await upstreamError(adapter.streamText(credential, request({ messages: broken, tools: [weather] })))).kind).toBe('bad_request');
    expect(fake.calls().length).toBe(sent);
  });

  it("passes on the provider's refusal of a result that answers no call", async () => {
    const orphan: ChatMessage[] = [
      ask,
      { role: 'assistant', content: 'Let me check.', toolCalls: [toolCalls[0]!] },
      { role: 'tool', toolCallId: 'toolu_01', content: 'ok' },
      { role: 'tool', toolCallId: 'toolu_99', content: 'stray' },
    ];
    const error = await upstreamError(adapter.generateText(credential, request({ messages: orphan, tools: [weather] })));
    expect(error).toMatchObject({
      kind: 'bad_request',
      status: 400,
      message: expect.stringContaining('unexpected `tool_use_id` found in `tool_result` blocks: toolu_99'),
    });
  });
});

describe('images', () => {
  const png = solidPng(8, 8).toString('base64');

  it('sends base64 and URL images as image blocks, in order with the text', async () => {
    const messages: ChatMessage[] = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Compare these.' },
          { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: png }, width: 8, height: 8 },
          { type: 'image', source: { kind: 'url', url: 'https://images.example.com/cat.jpg' }, detail: 'high' },
        ],
      },
    ];
    await adapter.generateText(credential, request({ messages }));
    expect(lastBody().messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Compare these.' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
          { type: 'image', source: { type: 'url', url: 'https://images.example.com/cat.jpg' } },
        ],
      },
    ]);
  });

  it("passes on the provider's refusal of a mislabelled image", async () => {
    const messages: ChatMessage[] = [
      {
        role: 'user',
        content: [
          { type: 'image', source: { kind: 'base64', mediaType: 'image/jpeg', data: png } },
          { type: 'text', text: 'What is it?' },
        ],
      },
    ];
    const error = await upstreamError(adapter.generateText(credential, request({ messages })));
    expect(error).toMatchObject({ kind: 'bad_request', message: expect.stringContaining('appears to be a image/png image') });
  });

  it('refuses an image in an assistant message before any call', async () => {
    const messages: ChatMessage[] = [
      ask,
      { role: 'assistant', content: [{ type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: png } }] },
      { role: 'user', content: 'and?' },
    ];
    expect((await upstreamError(adapter.generateText(credential, request({ messages })))).kind).toBe('bad_request');
  });
});

describe('prompt caching', () => {
  const cachedRequest = (question: string, notes = 'Reference notes: '): TextRequest =>
    request({
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'You are a meticulous travel assistant. '.repeat(20), cacheControl: { type: 'ephemeral' } }] },
        { role: 'system', content: 'Answer briefly.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: notes.repeat(30), cacheControl: { type: 'ephemeral', ttl: '1h' } },
            { type: 'text', text: question },
          ],
        },
      ],
    });

  it('passes cache markers through unchanged: system as text blocks, user parts with cache_control', async () => {
    await adapter.generateText(credential, cachedRequest('First question?'));
    expect(lastBody().system).toEqual([
      { type: 'text', text: 'You are a meticulous travel assistant. '.repeat(20), cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'Answer briefly.' },
    ]);
    expect(lastBody().messages[0].content).toEqual([
      { type: 'text', text: 'Reference notes: '.repeat(30), cache_control: { type: 'ephemeral', ttl: '1h' } },
      { type: 'text', text: 'First question?' },
    ]);
  });

  it('counts cache writes and reads in the input tokens, and as its classes, streamed or not', async () => {
    fake.decide(() => ({ kind: 'ok', text: 'Fine.', usage: { inputTokens: 700, outputTokens: 2 } }));
    const first = await adapter.generateText(credential, cachedRequest('Cache me?', 'Other notes: ')); // written to the cache
    const again = await adapter.generateText(credential, cachedRequest('Cache me?', 'Other notes: ')); // read from it
    const streamed = await collect(await adapter.streamText(credential, cachedRequest('Cache me?', 'Other notes: ')));
    const prefix = first.usage!.cacheWriteTokens!;
    expect(prefix).toBeGreaterThan(0);
    // The last marker is a 1-hour one, so the whole write is a 1-hour write.
    expect([first.usage, again.usage]).toEqual([
      { inputTokens: 700, outputTokens: 2, cacheWriteTokens: prefix, cacheWrite1hTokens: prefix },
      { inputTokens: 700, outputTokens: 2, cachedInputTokens: prefix },
    ]);
    expect(streamed.at(-2)).toEqual({ type: 'usage', usage: { inputTokens: 700, outputTokens: 2, cachedInputTokens: prefix } });
  });

  it('has the fake report cache_creation_input_tokens, then cache_read_input_tokens, as Anthropic does', async () => {
    const body = {
      model: 'claude-fake',
      max_tokens: 50,
      system: [{ type: 'text', text: 'Long instructions. '.repeat(40), cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'Hi' }],
    };
    const send = async () => {
      const response = await fetch(`${fake.origin}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': 'sk-ant-1', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return ((await response.json()) as { usage: Record<string, number> }).usage;
    };
    const written = await send();
    const read = await send();
    expect(written.cache_creation_input_tokens).toBeGreaterThan(0);
    expect(written.cache_read_input_tokens).toBe(0);
    expect(read).toMatchObject({
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: written.cache_creation_input_tokens,
      input_tokens: written.input_tokens,
    });
  });
});
