import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { generations } from '../../db/schema/library.js';
import { usageRecords } from '../../db/schema/usage.js';
import { startFakeAnthropic } from '../gateway/providers/anthropic/anthropic.fake.js';
import { startFakeOpenAi, type Decide, type FakeUpstream } from '../../../test/helpers/fake-upstreams.js';
import { createApiKey, parseSse, providerEnv, setPlan, walletState } from '../../../test/helpers/gateway.js';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { expectUnchargedOpenAiRefusal } from '../../../test/helpers/uncharged-refusal.js';

/** `/openai/v1/responses` with the official `openai` SDK: translation onto the gateway, both ways, streamed and not. */

let fake: FakeUpstream;
let claude: FakeUpstream;
let t: TestApp;
let decide: Decide = () => ({ kind: 'ok' });
let decideClaude: Decide = () => ({ kind: 'ok' });
let openai: OpenAI;
let origin: string;
let apiKey: string;
let userId: string;

beforeAll(async () => {
  fake = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : decide(request)));
  claude = await startFakeAnthropic((request) => (request.method === 'GET' ? { kind: 'ok' } : decideClaude(request)));
  t = await createTestApp({
    env: { ...providerEnv('OPENAI', fake.baseUrl, ['sk-responses-0001']), ...providerEnv('ANTHROPIC', claude.origin, ['sk-ant-responses-0001']) },
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { accessToken, user } = await signUp(t.app);
  userId = user.id;
  await setPlan(t, userId, 'starter');
  apiKey = (await createApiKey(t, accessToken, ['ai:text'])).key;
  origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  openai = new OpenAI({ apiKey, baseURL: `${origin}/openai/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
  await claude?.close();
});

const MODEL = 'openai/gpt-4o-mini';
const weather: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'The current weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  strict: true,
};
const wireWeather = { type: 'function', function: { name: 'get_weather', description: weather.description, parameters: weather.parameters, strict: true } };
const called = { id: 'call_abc123', name: 'get_weather', arguments: '{"city":"Lisbon"}' };
const lastUpstream = () => fake.calls().at(-1)!.body;
const charged = (response: OpenAI.Responses.Response) => (response.usage as unknown as { tokens_charged: number }).tokens_charged;
const priceOf = async (slug: string, usage: { inputTokens: number; outputTokens: number }) =>
  (await t.services.catalog.priceUsage(await t.services.catalog.resolveForGateway(slug), usage)).tokens;

const expectUnchargedRefusal = (run: () => Promise<unknown>, param: string) => expectUnchargedOpenAiRefusal(t, userId, () => fake.calls().length, run, param);

describe('POST /openai/v1/responses', () => {
  it('answers a plain response, metered like a text generation at the price of the reported usage', async () => {
    decide = () => ({ kind: 'ok', text: 'Lighthouses guide ships.', usage: { inputTokens: 40, outputTokens: 6 } });
    const before = await walletState(t, userId);
    const { data: response, response: http } = await openai.responses
      .create({
        model: MODEL,
        instructions: 'Be brief.',
        input: 'Tell me about lighthouses',
        max_output_tokens: 64,
        temperature: 0.3,
        metadata: { ticket: 'T-1' },
      })
      .withResponse();

    expect(lastUpstream()).toMatchObject({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Tell me about lighthouses' },
      ],
      max_completion_tokens: 64,
      temperature: 0.3,
    });
    expect(response).toMatchObject({
      object: 'response',
      status: 'completed',
      model: MODEL,
      instructions: 'Be brief.',
      metadata: { ticket: 'T-1' },
      max_output_tokens: 64,
      temperature: 0.3,
      store: true,
      previous_response_id: null,
      tools: [],
      tool_choice: 'auto',
      text: { format: { type: 'text' } },
      error: null,
      incomplete_details: null,
      output_text: 'Lighthouses guide ships.',
    });
    expect(response.id).toMatch(/^resp_[0-9a-f]{32}$/);
    expect(response.output).toEqual([
      {
        type: 'message',
        id: expect.stringMatching(/^msg_/),
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'Lighthouses guide ships.', annotations: [] }],
      },
    ]);
    const price = await priceOf(MODEL, { inputTokens: 40, outputTokens: 6 });
    expect(response.usage).toEqual({
      input_tokens: 40,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 6,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 46,
      tokens_charged: price,
    });

    const requestId = http.headers.get('x-ai-request-id')!;
    expect(response.id).toBe(`resp_${requestId.replaceAll('-', '')}`);
    const [record] = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, requestId));
    expect(record).toMatchObject({ userId, operation: 'text.generate', status: 'SUCCESS', tokensConsumed: price, inputUnits: 40, outputUnits: 6 });
    const [generation] = await t.platform.db.select().from(generations).where(eq(generations.requestId, requestId));
    expect(generation).toMatchObject({ userId, kind: 'TEXT' });
    const after = await walletState(t, userId);
    expect(after.balance).toBe(before.balance - price);
  });

  it('calls a function, then answers its function_call_output sent back with the earlier output items', async () => {
    decide = () => ({ kind: 'ok', toolCalls: [called] });
    const input: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: 'What is the weather in Lisbon?' }];
    const first = await openai.responses.create({
      model: MODEL,
      input,
      tools: [weather],
      tool_choice: { type: 'function', name: 'get_weather' },
      parallel_tool_calls: false,
    });
    expect(lastUpstream()).toMatchObject({
      tools: [wireWeather],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: false,
    });
    expect(first.status).toBe('completed');
    expect(first.output).toEqual([
      {
        type: 'function_call',
        id: expect.stringMatching(/^fc_/),
        call_id: 'call_abc123',
        name: 'get_weather',
        arguments: '{"city":"Lisbon"}',
        status: 'completed',
      },
    ]);
    expect(first.output_text).toBe('');

    decide = () => ({ kind: 'ok', text: 'It is 21 °C in Lisbon.' });
    const second = await openai.responses.create({
      model: MODEL,
      tools: [weather],
      // The SDK types every output item, built-in tools' included, so TypeScript code casts them back as input.
      input: [
        ...input,
        ...(first.output as OpenAI.Responses.ResponseInputItem[]),
        { type: 'function_call_output', call_id: 'call_abc123', output: '{"celsius":21}' },
      ],
    });
    expect(lastUpstream().messages).toEqual([
      { role: 'user', content: 'What is the weather in Lisbon?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_abc123', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Lisbon"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_abc123', content: '{"celsius":21}' },
    ]);
    expect(second.output_text).toBe('It is 21 °C in Lisbon.');
  });

  it('streams the documented events, which client.responses.stream() assembles into the final response', async () => {
    decide = () => ({ kind: 'ok', text: 'Checking the weather now.', toolCalls: [called] });
    const stream = openai.responses.stream({ model: MODEL, input: 'What is the weather in Lisbon?', tools: [weather] });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const final = await stream.finalResponse();

    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_e, i) => i));
    const types = events.map((e) => e.type).filter((type, i, all) => type !== all[i - 1]);
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(final.status).toBe('completed');
    expect(final.output_text).toBe('Checking the weather now.');
    expect(final.output.map((item) => item.type)).toEqual(['message', 'function_call']);
    expect(final.output[1]).toMatchObject({ type: 'function_call', call_id: 'call_abc123', name: 'get_weather', arguments: '{"city":"Lisbon"}' });
    expect(charged(final)).toBeGreaterThan(0);
    expect(events.at(-1)).toMatchObject({ type: 'response.completed', response: { id: final.id, usage: { tokens_charged: charged(final) } } });
  });

  it('ends a stream that broke midway with an error event and response.failed', async () => {
    decide = () => ({ kind: 'midway', text: 'one two three four five six', afterChunks: 2, how: 'disconnect' });
    const res = await fetch(`${origin}/openai/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, input: 'Count', stream: true }),
    });
    expect(res.status).toBe(200);
    const events = parseSse(await res.text());
    expect(events.slice(0, 2).map((e) => e.type)).toEqual(['response.created', 'response.in_progress']);
    expect(events.some((e) => e.type === 'response.output_text.delta')).toBe(true);
    expect(events.slice(-2).map((e) => e.type)).toEqual(['error', 'response.failed']);
    expect(events.at(-1)!.response).toMatchObject({ status: 'failed', error: { code: 'server_error' } });
  });

  it('answers to a JSON schema in text.format', async () => {
    decide = () => ({ kind: 'ok', text: '{"city":"Lisbon"}' });
    const format = {
      type: 'json_schema' as const,
      name: 'place',
      schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
      strict: true,
    };
    const response = await openai.responses.create({ model: MODEL, input: 'A city in Portugal', text: { format } });
    expect(lastUpstream().response_format).toEqual({ type: 'json_schema', json_schema: { name: 'place', schema: format.schema, strict: true } });
    expect(response.text).toEqual({ format });
    expect(JSON.parse(response.output_text)).toEqual({ city: 'Lisbon' });
  });

  it('marks a response cut by max_output_tokens incomplete', async () => {
    decide = () => ({ kind: 'ok', text: 'A long', finishReason: 'length' });
    const response = await openai.responses.create({ model: MODEL, input: 'Write an essay', max_output_tokens: 2 });
    expect(response).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
    expect(response.output[0]).toMatchObject({ type: 'message', status: 'incomplete' });
  });

  it('carries images as input_image parts', async () => {
    decide = () => ({ kind: 'ok', text: 'A cat.' });
    await openai.responses.create({
      model: MODEL,
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'What is this?' },
            { type: 'input_image', image_url: 'https://93.184.216.34/cat.png', detail: 'low' },
          ],
        },
      ],
    });
    expect(lastUpstream().messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image_url', image_url: { url: 'https://93.184.216.34/cat.png', detail: 'low' } },
        ],
      },
    ]);
  });
});

describe('what the Responses surface refuses, before any charge', () => {
  it('refuses a tool_choice that forces a built-in tool, naming it', async () => {
    const err = await expectUnchargedRefusal(
      () =>
        openai.responses.create({
          model: MODEL,
          input: 'News today?',
          tools: [weather, { type: 'web_search_preview' }],
          tool_choice: { type: 'web_search_preview' },
        }),
      'tool_choice.type',
    );
    expect(err.message).toContain('web_search_preview');
    // Streamed, the refusal comes before the stream opens: an ordinary JSON error.
    await expectUnchargedRefusal(
      () =>
        openai.responses.create({
          model: MODEL,
          input: 'News today?',
          tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }],
          tool_choice: { type: 'file_search' },
          stream: true,
        }),
      'tool_choice.type',
    );
  });

  it('refuses fields no provider here carries, by name', async () => {
    const err = await expectUnchargedRefusal(() => openai.responses.create({ model: MODEL, input: 'Later', background: true }), 'background');
    expect(err.message).toContain('background');
  });

  it('refuses items of built-in tools and points at them', async () => {
    const err = await expectUnchargedRefusal(
      () =>
        openai.responses.create({
          model: MODEL,
          input: [
            { role: 'user', content: 'Hi' },
            { type: 'item_reference', id: 'msg_123' },
          ],
        }),
      'input.1.type',
    );
    expect(err.message).toContain('item_reference');
  });

  it('points a gateway refusal at the input item it is about', async () => {
    await expectUnchargedRefusal(
      () =>
        openai.responses.create({
          model: MODEL,
          input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://127.0.0.1/cat.png', detail: 'auto' }] }],
        }),
      'input.0.content',
    );
  });
});

describe('what Codex CLI sends', () => {
  /** The request Codex CLI 0.171 makes (`wire_api = "responses"`), trimmed, plus a field from a client newer than this gateway. */
  const codexBody = (input: unknown[], extra: Record<string, unknown> = {}) => ({
    model: MODEL,
    input,
    tools: [
      {
        type: 'function',
        name: 'exec_command',
        description: 'Runs a command in a PTY',
        strict: false,
        parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'], additionalProperties: false },
      },
      {
        type: 'namespace',
        name: 'mcp__docs',
        description: 'The docs server',
        tools: [
          {
            type: 'function',
            name: 'search',
            description: 'Searches the docs',
            strict: false,
            parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
          },
        ],
      },
      { type: 'web_search', external_web_access: false },
    ],
    tool_choice: 'auto',
    parallel_tool_calls: true,
    reasoning: { summary: 'auto' },
    store: false,
    include: ['reasoning.encrypted_content'],
    prompt_cache_key: '019a-session',
    client_metadata: { 'x-codex-turn-metadata': '{"turn":1}' },
    future_hint: { level: 2 },
    ...extra,
  });
  const developer = { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'You are Codex.' }] };
  const user = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Search the docs for lighthouses' }] };
  const post = (body: unknown) =>
    fetch(`${origin}/openai/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'accept-encoding': 'zstd,gzip' },
      body: JSON.stringify(body),
    });
  const recordsOf = (requestId: string) => t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, requestId));

  it('streams an answer: namespace functions flattened and their calls named back, built-in tools and unknown fields left out and named, metered once', async () => {
    decide = () => ({
      kind: 'ok',
      toolCalls: [{ id: 'call_ns1', name: 'mcp__docs__search', arguments: '{"query":"lighthouses"}' }],
      usage: { inputTokens: 90, outputTokens: 12 },
    });
    const http = await post(codexBody([developer, user], { stream: true }));
    expect(http.status).toBe(200);
    expect(http.headers.get('content-encoding')).toBeNull();
    expect(http.headers.get('x-storefront-ignored')?.split(', ').sort()).toEqual(['future_hint', 'tools.web_search']);
    const events = parseSse(await http.text()) as { type: string; item?: Record<string, unknown>; response?: OpenAI.Responses.Response }[];
    const sent = lastUpstream();
    expect(sent.tools.map((tool: { function: { name: string } }) => tool.function.name)).toEqual(['exec_command', 'mcp__docs__search']);
    expect(sent.tools[1].function.description).toBe('Searches the docs\n\n(mcp__docs: The docs server)');
    expect(sent).toMatchObject({
      tool_choice: 'auto',
      parallel_tool_calls: true,
      messages: [
        { role: 'system', content: 'You are Codex.' },
        { role: 'user', content: 'Search the docs for lighthouses' },
      ],
    });
    for (const key of ['prompt_cache_key', 'client_metadata', 'include', 'future_hint', 'store']) expect(sent).not.toHaveProperty(key);
    const done = events.find((event) => event.type === 'response.output_item.done')!;
    expect(done.item).toMatchObject({
      type: 'function_call',
      call_id: 'call_ns1',
      name: 'search',
      namespace: 'mcp__docs',
      arguments: '{"query":"lighthouses"}',
    });
    const completed = events.at(-1)!;
    expect(completed.type).toBe('response.completed');
    expect(completed.response!.output).toEqual([expect.objectContaining({ type: 'function_call', name: 'search', namespace: 'mcp__docs' })]);
    const records = await recordsOf(http.headers.get('x-ai-request-id')!);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ status: 'SUCCESS', inputUnits: 90, outputUnits: 12 });
  });

  it('takes a namespaced function_call and its output back, and answers without streaming too', async () => {
    decide = () => ({ kind: 'ok', text: 'Lighthouses guide ships.' });
    const call = { type: 'function_call', call_id: 'call_ns1', name: 'search', namespace: 'mcp__docs', arguments: '{"query":"lighthouses"}' };
    const reasoning = { type: 'reasoning', id: 'rs_1', summary: [], content: null, encrypted_content: null };
    const http = await post(
      // Codex's `model_reasoning_effort = "xhigh"` goes out as the highest level the gateway has.
      codexBody([developer, user, reasoning, call, { type: 'function_call_output', call_id: 'call_ns1', output: 'Lighthouses: towers with a light.' }], {
        model: 'openai/o4-mini',
        reasoning: { effort: 'xhigh', summary: 'auto' },
      }),
    );
    expect(http.status).toBe(200);
    expect(http.headers.get('content-encoding')).toBeNull();
    // o4-mini has no parallel_tool_calls; Codex's `true` allows what the model does anyway, so it is left out and named.
    expect(http.headers.get('x-storefront-ignored')).toBe('future_hint, tools.web_search, parallel_tool_calls');
    expect(lastUpstream()).not.toHaveProperty('parallel_tool_calls');
    const response = (await http.json()) as OpenAI.Responses.Response;
    expect(response.output_text).toBe('Lighthouses guide ships.');
    expect(response.tools.map((tool) => (tool as { name: string }).name)).toEqual(['exec_command', 'mcp__docs__search']);
    expect(lastUpstream().reasoning_effort).toBe('high');
    expect(lastUpstream().messages.slice(2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_ns1', type: 'function', function: { name: 'mcp__docs__search', arguments: '{"query":"lighthouses"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_ns1', content: 'Lighthouses: towers with a light.' },
    ]);
    expect(await recordsOf(http.headers.get('x-ai-request-id')!)).toHaveLength(1);
  });

  it('names only plain unknown field names in the header, counting the others', async () => {
    decide = () => ({ kind: 'ok', text: 'Hi.' });
    const http = await post({ model: MODEL, input: 'Hi', 'new\nline': 1, é: 2, ok_field: 3 });
    expect(http.status).toBe(200);
    expect(http.headers.get('x-storefront-ignored')).toBe('ok_field, (2 more)');
  });

  it('still refuses a known field that would change the answer, whatever else is unknown', async () => {
    const http = await post(codexBody([user], { background: true }));
    expect(http.status).toBe(400);
    expect(((await http.json()) as { error: { param: string } }).error.param).toBe('background');
  });
});

describe('an Anthropic-backed model through the Responses surface', () => {
  it('sends the function tool in Anthropic’s shape and answers its tool_use as a function_call', async () => {
    decideClaude = () => ({
      kind: 'ok',
      toolCalls: [{ id: 'toolu_01', name: 'get_weather', arguments: '{"city":"Porto"}' }],
      usage: { inputTokens: 300, outputTokens: 20 },
    });
    const response = await openai.responses.create({
      model: 'anthropic/claude-haiku-4-5',
      instructions: 'Use tools.',
      input: 'Weather in Porto?',
      tools: [weather],
      tool_choice: 'required',
      max_output_tokens: 300,
    });
    const sent = claude.calls().at(-1)!.body;
    expect(sent).toMatchObject({ system: 'Use tools.', tool_choice: { type: 'any' }, messages: [{ role: 'user', content: 'Weather in Porto?' }] });
    expect(sent.tools).toEqual([{ name: 'get_weather', description: weather.description, input_schema: weather.parameters }]);
    expect(response.output).toEqual([
      {
        type: 'function_call',
        id: expect.stringMatching(/^fc_/),
        call_id: 'toolu_01',
        name: 'get_weather',
        arguments: '{"city":"Porto"}',
        status: 'completed',
      },
    ]);
    expect(charged(response)).toBe(await priceOf('anthropic/claude-haiku-4-5', { inputTokens: 300, outputTokens: 20 }));
  });

  it('refuses a JSON schema for a Claude model without structured outputs, naming text.format', async () => {
    const err = await openai.responses
      .create({ model: 'anthropic/claude-3-5-haiku', input: 'A city', text: { format: { type: 'json_schema', name: 'place', schema: { type: 'object' } } } })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 400, param: 'text.format' });
  });
});

describe("the README's Responses example, offline on the built-in model", () => {
  it('runs the agent loop with function calls and previous_response_id to a final text answer', async () => {
    // From README.md, "Responses API".
    const tools: OpenAI.Responses.Tool[] = [
      {
        type: 'function',
        name: 'get_weather',
        description: 'The weather in a city',
        strict: false,
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    ];
    const cities: string[] = [];
    let response = await openai.responses.create({ model: 'local/text', input: 'What is the weather in Lisbon?', tools });
    for (let turn = 0; ; turn++) {
      expect(turn).toBeLessThan(3);
      const calls = response.output.filter((item) => item.type === 'function_call');
      if (calls.length === 0) break;
      const outputs = calls.map((call) => {
        const { city } = JSON.parse(call.arguments) as { city: string };
        cities.push(city);
        return { type: 'function_call_output' as const, call_id: call.call_id, output: JSON.stringify({ city, celsius: 21 }) };
      });
      response = await openai.responses.create({ model: 'local/text', previous_response_id: response.id, input: outputs, tools });
    }
    expect(cities).toEqual(['Lisbon']);
    expect(response.status).toBe('completed');
    expect(response.output_text).toContain('get_weather');
    const streamed = await openai.responses.stream({ model: 'local/text', input: 'Write a haiku about the sea.' }).finalResponse();
    expect(streamed.output_text.length).toBeGreaterThan(0);
  });
});
