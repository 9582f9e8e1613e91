import { describe, expect, it } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { collect, textOf } from '../../../../../test/helpers/text-streams.js';
import { countAnswerTokens, countMessageTokens, countTextTokens, countToolTokens } from '../../text/tokens.js';
import { createLocalProvider } from './text.js';
import type { ChatMessage, TextRequest, TextStreamEvent, ToolDefinition, UpstreamCredential } from '../types.js';

// The built-in model's tools, vision and JSON answers; its plain answers are pinned to what they were before.

const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv2020) => Ajv2020;
const ajv = addFormats(new Ajv2020({ allErrors: true, strict: false }));
const local = createLocalProvider();
const credential: UpstreamCredential = { accountId: 'local', providerSlug: 'local', apiKey: null, baseUrl: null, timeoutMs: 1000 };
const generate = (request: Partial<TextRequest> & Pick<TextRequest, 'messages'>) =>
  local.generateText(credential, { model: 'local-text', maxTokens: 2048, ...request });
const user = (content: string): ChatMessage => ({ role: 'user', content });

function expectValid(schema: Record<string, unknown>, json: string): unknown {
  const value: unknown = JSON.parse(json);
  const validate = ajv.compile(schema);
  expect(validate(value) ? [] : validate.errors, json).toEqual([]);
  return value;
}

const weather: ToolDefinition = {
  name: 'get_weather',
  description: 'Get the current weather for a city',
  parameters: {
    type: 'object',
    properties: {
      city: { type: 'string', description: 'City name' },
      unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
      days: { type: 'integer', minimum: 1, maximum: 7 },
    },
    required: ['city', 'unit'],
    additionalProperties: false,
  },
};
const search: ToolDefinition = {
  name: 'search_web',
  description: 'Search the web and return the top results',
  parameters: { type: 'object', properties: { query: { type: 'string', minLength: 3 } }, required: ['query'] },
};
const calendar: ToolDefinition = {
  name: 'createEvent',
  description: 'Add an event to the calendar',
  parameters: {
    type: 'object',
    properties: {
      title: { type: 'string', maxLength: 40 },
      start: { type: 'string', format: 'date-time' },
      attendees: { type: 'array', items: { type: 'string', format: 'email' }, minItems: 1 },
      reminder: { type: 'object', properties: { minutes: { type: 'integer', minimum: 5, maximum: 60 } }, required: ['minutes'] },
    },
    required: ['title', 'start', 'attendees', 'reminder'],
  },
};
const tools = [search, weather, calendar];
const weatherQuestion = [user('What is the weather like in Paris for the next 3 days?')];

describe('the built-in model keeps its plain answers', () => {
  // Captured from the model before tools, vision and JSON existed.
  it.each([
    [
      'a first question',
      [user('Tell me about lighthouses and their keepers')],
      'Thanks for the question about lighthouses, keepers. Compare two or three options side by side before choosing one. Keep the first version simple; refine it once it works end to end. For lighthouses, the details decide the outcome. Connect a real provider for a tailored answer; this one is generated offline.',
    ],
    [
      'a conversation',
      [user('Plan a trip to Lisbon'), { role: 'assistant', content: 'Sure.' }, user('What should I pack for rainy weather?')],
      'Here is a short answer about pack, rainy, weather. Write down the assumptions, because they are where surprises come from. Compare two or three options side by side before choosing one. Keep the first version simple; refine it once it works end to end. Ask who will use the result and what they need from it first. For pack, the details decide the outcome. Ask a follow-up question to go deeper into any of these points.',
    ],
    [
      'prompt enhancement',
      [{ role: 'system', content: 'You improve prompts for the target "image". Reply with the prompt only.' }, user('a cat on a windowsill')],
      'A cat on a windowsill, crisp detail, dramatic rim lighting, balanced composition, cinematic still, sharp focus, rich colour palette',
    ],
    [
      'a greeting',
      [user('hi')],
      'A quick take on your message: Keep the first version simple; refine it once it works end to end. Compare two or three options side by side before choosing one. Connect a real provider for a tailored answer; this one is generated offline.',
    ],
  ] as [string, ChatMessage[], string][])('for %s', async (_label, messages, text) => {
    const model = messages[0]!.role === 'system' ? 'local-multimodal' : 'local-text';
    const result = await generate({ model, messages });
    expect(result).toEqual({ text, usage: { inputTokens: countMessageTokens(messages), outputTokens: countTextTokens(text) }, finishReason: 'stop' });
    // Tools with toolChoice none, and the `user` parameter, leave the text as it was.
    expect((await generate({ model, messages, tools, toolChoice: 'none', user: 'u-1' })).text).toBe(text);
  });

  it('declares what it honours', () => {
    expect([...local.parameters].sort()).toEqual(['parallelToolCalls', 'responseFormat', 'seed', 'stop', 'toolChoice', 'tools', 'user']);
    expect(local).toMatchObject({ images: true, jsonSchema: true });
  });
});

describe('tool calls', () => {
  it('calls the tool that best matches the prompt, with arguments valid against its schema', async () => {
    const result = await generate({ messages: weatherQuestion, tools });
    expect(result).toMatchObject({
      text: '',
      finishReason: 'tool_calls',
      toolCalls: [{ id: expect.stringMatching(/^call_[A-Za-z0-9]{16,}$/), name: 'get_weather' }],
    });
    expect(expectValid(weather.parameters, result.toolCalls![0]!.arguments)).toEqual({ city: 'Paris', unit: 'celsius', days: 3 });
    expect(result.usage).toEqual({
      inputTokens: countMessageTokens(weatherQuestion) + countToolTokens(tools),
      outputTokens: countAnswerTokens('', result.toolCalls),
    });
  });

  it('is deterministic, and the call id follows the conversation', async () => {
    const a = await generate({ messages: weatherQuestion, tools });
    expect(await generate({ messages: weatherQuestion, tools })).toEqual(a);
    const other = await generate({ messages: [user('What is the weather like in Rome?')], tools });
    expect(other.toolCalls![0]!.id).not.toBe(a.toolCalls![0]!.id);
    expect(JSON.parse(other.toolCalls![0]!.arguments)).toMatchObject({ city: 'Rome' });
  });

  it('matches names split at camelCase and descriptions; a tie goes to the first tool', async () => {
    const event = await generate({ messages: [user('Create an event with bob@example.com on 2025-03-04 about the launch')], tools });
    expect(event.toolCalls![0]!.name).toBe('createEvent');
    expect(expectValid(calendar.parameters, event.toolCalls![0]!.arguments)).toMatchObject({ start: '2025-03-04T12:00:00Z', attendees: ['bob@example.com'] });
    const web = await generate({ messages: [user('search for reviews of the new phone')], tools });
    expect(web.toolCalls![0]!.name).toBe('search_web');
    const nothingInCommon = await generate({ messages: [user('zzz')], tools: [calendar, weather] });
    expect(nothingInCommon.toolCalls![0]!.name).toBe('createEvent');
  });

  it('follows toolChoice: a named tool, required, auto, none', async () => {
    const named = await generate({ messages: weatherQuestion, tools, toolChoice: { name: 'search_web' } });
    expect(named.toolCalls![0]!.name).toBe('search_web');
    expectValid(search.parameters, named.toolCalls![0]!.arguments);
    expect((await generate({ messages: weatherQuestion, tools, toolChoice: 'required' })).toolCalls![0]!.name).toBe('get_weather');
    expect((await generate({ messages: weatherQuestion, tools, toolChoice: 'auto', parallelToolCalls: false })).toolCalls).toHaveLength(1);
    const none = await generate({ messages: weatherQuestion, tools, toolChoice: 'none' });
    expect(none).toMatchObject({ finishReason: 'stop', text: (await generate({ messages: weatherQuestion })).text });
    expect(none.toolCalls).toBeUndefined();
  });

  it('answers tool results in text, so an agent loop ends', async () => {
    const call = (await generate({ messages: weatherQuestion, tools })).toolCalls![0]!;
    const conversation: ChatMessage[] = [
      ...weatherQuestion,
      { role: 'assistant', content: '', toolCalls: [call] },
      { role: 'tool', toolCallId: call.id, content: '{ "temperature": 21,\n "unit": "C" }' },
    ];
    const answer = await generate({ messages: conversation, tools });
    expect(answer.finishReason).toBe('stop');
    expect(answer.toolCalls).toBeUndefined();
    expect(answer.text).toContain('According to get_weather: {"temperature":21,"unit":"C"}.');
    expect(answer.usage).toEqual({ inputTokens: countMessageTokens(conversation) + countToolTokens(tools), outputTokens: countTextTokens(answer.text) });

    const withText = await generate({ messages: [...conversation, user('Thanks, go on')], tools });
    expect(withText.toolCalls).toBeUndefined();
    expect(withText.text).toContain('According to get_weather');
    const nextQuestion = await generate({ messages: [...conversation, { role: 'assistant', content: answer.text }, user('And the weather in Rome?')], tools });
    expect(nextQuestion.toolCalls![0]!.name).toBe('get_weather');

    const failed = await generate({
      messages: [...conversation.slice(0, 2), { role: 'tool', toolCallId: call.id, content: 'city not found', isError: true }],
      tools,
    });
    expect(failed.text).toContain('get_weather failed: city not found.');
    const long = await generate({ messages: [...conversation.slice(0, 2), { role: 'tool', toolCallId: call.id, content: 'x'.repeat(5000) }] });
    expect(long.text.length).toBeLessThan(400);
  });

  it('cuts the arguments at maxTokens with finish reason length, as a real model does', async () => {
    const result = await generate({ messages: weatherQuestion, tools, maxTokens: 4 });
    expect(result.finishReason).toBe('length');
    expect(result.usage!.outputTokens).toBeLessThanOrEqual(4);
  });
});

describe('JSON answers', () => {
  const schema = {
    type: 'object',
    properties: {
      destination: { type: 'string' },
      nights: { type: 'integer', minimum: 1, maximum: 14 },
      highlights: { type: 'array', items: { type: 'string' }, minItems: 2 },
    },
    required: ['destination', 'nights', 'highlights'],
    additionalProperties: false,
  };
  const ask = [user('Plan 4 nights in Kyoto with temples and gardens')];

  it('writes an instance of the json_schema, with values from the prompt', async () => {
    const result = await generate({ messages: ask, responseFormat: { type: 'json_schema', name: 'trip', schema, strict: true } });
    expect(expectValid(schema, result.text)).toMatchObject({ destination: 'Kyoto', nights: 4 });
    expect(result.usage!.inputTokens).toBe(countMessageTokens(ask) + countTextTokens(JSON.stringify(schema)));
  });

  it('wraps the usual answer for json_object', async () => {
    const result = await generate({ messages: ask, responseFormat: { type: 'json_object' } });
    expect(JSON.parse(result.text)).toEqual({ answer: (await generate({ messages: ask })).text });
    expect((await generate({ messages: ask, responseFormat: { type: 'text' } })).text).toBe((await generate({ messages: ask })).text);
  });
});

describe('images', () => {
  const png = { type: 'image' as const, source: { kind: 'base64' as const, mediaType: 'image/png', data: 'iVBORw0KGgo=' }, width: 640, height: 480 };
  const remote = { type: 'image' as const, source: { kind: 'url' as const, url: 'https://cdn.example.com/photos/cat.jpg?token=secret' } };

  it('describes each image of the message it answers', async () => {
    const one: ChatMessage[] = [{ role: 'user', content: [{ type: 'text', text: 'What is in this picture?' }, png] }];
    const result = await generate({ messages: one });
    expect(result.text).toMatch(/^The image is a 640×480 PNG image\. \S/);
    expect(result.usage!.inputTokens).toBe(countMessageTokens(one));
    expect(result.usage!.inputTokens).toBeGreaterThan(countMessageTokens([user('What is in this picture?')]) + 200);

    const two = await generate({
      messages: [{ role: 'user', content: [png, { ...png, source: { ...png.source, mediaType: 'image/webp' }, width: 32, height: 16 }, remote] }],
    });
    expect(two.text).toBe(
      'Image 1 is a 640×480 PNG image. Image 2 is a 32×16 WebP image. Image 3 is an image at cdn.example.com (the offline model does not download it).',
    );
  });
});

describe('stop and seed', () => {
  it('cuts the text at the first stop string', async () => {
    const full = (await generate({ messages: weatherQuestion })).text;
    const result = await generate({ messages: weatherQuestion, stop: ['zzz', ' step', '.'] });
    expect(result.text).toBe(full.slice(0, Math.min(full.indexOf('.'), full.includes(' step') ? full.indexOf(' step') : Infinity)));
    expect(result).toMatchObject({ finishReason: 'stop', usage: { outputTokens: countTextTokens(result.text) } });
  });

  it('changes the answer deterministically with the seed', async () => {
    const texts = await Promise.all([1, 2, 3, 4, 5].map(async (seed) => (await generate({ messages: weatherQuestion, seed })).text));
    expect(new Set(texts).size).toBeGreaterThan(1);
    expect((await generate({ messages: weatherQuestion, seed: 3 })).text).toBe(texts[2]);
  });
});

describe('streaming', () => {
  const stream = async (request: Partial<TextRequest> & Pick<TextRequest, 'messages'>) =>
    collect(await local.streamText(credential, { model: 'local-text', maxTokens: 2048, ...request }));

  it('streams a tool call: id and name first, then the arguments in pieces, then usage and finish', async () => {
    const sync = await generate({ messages: weatherQuestion, tools });
    const events = await stream({ messages: weatherQuestion, tools });
    const calls = events.filter((e): e is Extract<TextStreamEvent, { type: 'tool_call' }> => e.type === 'tool_call');
    expect(events.filter((e) => e.type === 'text')).toEqual([]);
    expect(calls[0]).toEqual({ type: 'tool_call', index: 0, id: sync.toolCalls![0]!.id, name: 'get_weather', argumentsDelta: '' });
    expect(calls.length).toBeGreaterThan(2);
    expect(calls.slice(1).every((e) => e.index === 0 && e.id === undefined && e.name === undefined)).toBe(true);
    expect(calls.map((e) => e.argumentsDelta).join('')).toBe(sync.toolCalls![0]!.arguments);
    expect(events.slice(-2)).toEqual([
      { type: 'usage', usage: sync.usage },
      { type: 'finish', finishReason: 'tool_calls' },
    ]);
  });

  it('streams text answers as before, JSON and tool-result answers included', async () => {
    for (const request of [
      { messages: weatherQuestion },
      { messages: weatherQuestion, responseFormat: { type: 'json_object' as const } },
      { messages: weatherQuestion, stop: ['.'] },
    ]) {
      const events = await stream(request);
      expect(textOf(events)).toBe((await generate(request)).text);
      expect(events.at(-1)).toEqual({ type: 'finish', finishReason: 'stop' });
    }
  });
});
