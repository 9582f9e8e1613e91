import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { usageRecords } from '../../db/schema/usage.js';
import { encodePng } from '../../platform/media/png.js';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createApiKey, ledgerOf, providerEnv, setPlan, walletState } from '../../../test/helpers/gateway.js';
import { startFakeAnthropic } from '../gateway/providers/anthropic/anthropic.fake.js';
import { startFakeOpenAi, type Decide, type FakeUpstream } from '../../../test/helpers/fake-upstreams.js';
import { startFakeProvider } from '../../../test/helpers/fakes/openai-compatible.js';
import { expectUnchargedOpenAiRefusal } from '../../../test/helpers/uncharged-refusal.js';

let fake: FakeUpstream;
let groq: FakeUpstream;
let claude: FakeUpstream;
let decideClaude: Decide = () => ({ kind: 'ok' });
let t: TestApp;
let decide: Decide = () => ({ kind: 'ok' });
let openai: OpenAI;
let userId: string;

beforeAll(async () => {
  fake = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : decide(request)));
  groq = await startFakeProvider('groq');
  claude = await startFakeAnthropic((request) => (request.method === 'GET' ? { kind: 'ok' } : decideClaude(request)));
  t = await createTestApp({
    env: {
      ...providerEnv('OPENAI', fake.baseUrl, ['sk-tools-0001']),
      ...providerEnv('GROQ', groq.baseUrl, ['gsk-tools-0001']),
      ...providerEnv('ANTHROPIC', claude.origin, ['sk-ant-tools-0001']),
    },
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { accessToken, user } = await signUp(t.app);
  userId = user.id;
  await setPlan(t, userId, 'starter');
  const { key } = await createApiKey(t, accessToken, ['ai:text']);
  openai = new OpenAI({ apiKey: key, baseURL: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/openai/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
  await groq?.close();
  await claude?.close();
});

const MODEL = 'openai/gpt-4o-mini';
const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'The current weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
      required: ['city'],
      additionalProperties: false,
    },
    strict: true,
  },
};
const call = { id: 'call_abc123', name: 'get_weather', arguments: '{"city":"Lisbon","unit":"c"}' };
const question = [{ role: 'user' as const, content: 'What is the weather in Lisbon?' }];
const lastCall = () => fake.calls().at(-1)!;
const png = `data:image/png;base64,${encodePng(4, 3, new Uint8Array(4 * 3 * 3)).toString('base64')}`;

const expectUnchargedRefusal = (run: () => Promise<unknown>, param: string) =>
  expectUnchargedOpenAiRefusal(t, userId, () => fake.calls().length + groq.calls().length, run, param);

describe('/openai/v1/chat/completions with tools', () => {
  it('forwards tools and tool_choice unchanged, answers the tool call in OpenAI shape, and charges the reported usage', async () => {
    decide = () => ({ kind: 'ok', toolCalls: [call], usage: { inputTokens: 120, outputTokens: 18 } });
    const completion = await openai.chat.completions.create({
      model: MODEL,
      messages: question,
      tools: [weatherTool],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    const sent = lastCall().body;
    expect(sent.tools).toEqual([weatherTool]);
    expect(sent.tool_choice).toEqual({ type: 'function', function: { name: 'get_weather' } });
    // The caller's messages go as they are: no server instruction in front.
    expect(sent.messages).toEqual(question);
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toEqual([{ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }]);
    const model = await t.services.catalog.resolveForGateway(MODEL);
    const price = await t.services.catalog.priceUsage(model, { inputTokens: 120, outputTokens: 18 });
    expect((completion.usage as unknown as { tokens_charged: number }).tokens_charged).toBe(price.tokens);
    const [record] = await t.platform.db
      .select()
      .from(usageRecords)
      .where(eq(usageRecords.requestId, completion.id.replace('chatcmpl-', '')));
    expect(record).toMatchObject({ status: 'SUCCESS', tokensConsumed: price.tokens, inputUnits: 120, outputUnits: 18 });
    expect(record!.metadata).toMatchObject({ finishReason: 'tool_calls', toolCalls: ['get_weather'] });
  });

  it('streams tool-call deltas by index, which the SDK stream helper assembles', async () => {
    decide = () => ({ kind: 'ok', toolCalls: [call, { id: 'call_def456', name: 'get_weather', arguments: '{"city":"Porto"}' }] });
    const stream = openai.chat.completions.stream({ model: MODEL, messages: question, tools: [weatherTool], stream_options: { include_usage: true } });
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    expect(final.choices[0]!.message.tool_calls?.map((c) => [c.id, c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ['call_abc123', 'get_weather', { city: 'Lisbon', unit: 'c' }],
      ['call_def456', 'get_weather', { city: 'Porto' }],
    ]);
    expect((final.usage as unknown as { tokens_charged: number }).tokens_charged).toBeGreaterThan(0);
  });

  it('carries a tool-result follow-up as OpenAI expects it, and answers with text', async () => {
    decide = () => ({ kind: 'ok', text: 'It is 21 °C in Lisbon.' });
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      ...question,
      { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }] },
      { role: 'tool', tool_call_id: call.id, content: '{"temperature":21}' },
    ];
    const completion = await openai.chat.completions.create({ model: MODEL, messages, tools: [weatherTool] });
    expect(completion.choices[0]!.message.content).toBe('It is 21 °C in Lisbon.');
    expect(lastCall().body.messages).toEqual(messages);
  });

  it('replays a tool call for the same Idempotency-Key and charges it once', async () => {
    decide = () => ({ kind: 'ok', toolCalls: [call] });
    const body = { model: MODEL, messages: question, tools: [weatherTool] };
    const first = await openai.chat.completions.create(body, { headers: { 'Idempotency-Key': 'tool-call-once' } });
    const calls = fake.calls().length;
    const charged = await walletState(t, userId);
    const replay = await openai.chat.completions.create(body, { headers: { 'Idempotency-Key': 'tool-call-once' } }).withResponse();
    expect(replay.response.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.data.choices[0]!.message.tool_calls).toEqual(first.choices[0]!.message.tool_calls);
    expect(fake.calls().length).toBe(calls);
    expect(await walletState(t, userId)).toEqual(charged);
    const ledger = await ledgerOf(t, first.id.replace('chatcmpl-', ''));
    expect(-ledger.reduce((sum, row) => sum + row.amount, 0)).toBe((first.usage as unknown as { tokens_charged: number }).tokens_charged);
  });
});

describe('/openai/v1/chat/completions parameters and images', () => {
  it('forwards the sampling parameters and a JSON-schema response format', async () => {
    decide = () => ({ kind: 'ok', text: '{"city":"Lisbon"}' });
    const response_format = {
      type: 'json_schema' as const,
      json_schema: { name: 'place', schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: true },
    };
    await openai.chat.completions.create({
      model: MODEL,
      messages: question,
      top_p: 0.5,
      stop: ['END'],
      seed: 7,
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
      user: 'user-42',
      response_format,
    });
    expect(lastCall().body).toMatchObject({
      top_p: 0.5,
      stop: ['END'],
      seed: 7,
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
      user: 'user-42',
      response_format,
    });
  });

  it('forwards image parts (data: and https URLs) to a vision model', async () => {
    decide = () => ({ kind: 'ok', text: 'A tiny black picture.' });
    const content: OpenAI.ChatCompletionContentPart[] = [
      { type: 'text', text: 'What is in these pictures?' },
      { type: 'image_url', image_url: { url: png, detail: 'low' } },
      { type: 'image_url', image_url: { url: 'https://93.184.216.34/cat.png' } },
    ];
    await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content }] });
    expect(lastCall().body.messages).toEqual([{ role: 'user', content }]);
  });

  it('refuses an image for a model without VISION before any charge', async () => {
    const err = await expectUnchargedRefusal(
      () =>
        openai.chat.completions.create({
          model: 'groq/llama-3.1-8b-instant',
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'What is this?' },
                { type: 'image_url', image_url: { url: png } },
              ],
            },
          ],
        }),
      'messages',
    );
    expect(err.message).toContain('does not read images');
  });

  it('refuses an image URL on a private or metadata address before any charge', async () => {
    for (const url of ['https://127.0.0.1/cat.png', 'https://169.254.169.254/latest/meta-data']) {
      await expectUnchargedRefusal(
        () => openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }] }] }),
        'messages.0.content',
      );
    }
  });

  it('refuses what it cannot carry with a 400 naming it', async () => {
    await expectUnchargedRefusal(() => openai.chat.completions.create({ model: MODEL, messages: question, logit_bias: { '50256': -100 } }), 'logit_bias');
  });

  it('answers 503 model_unavailable when the upstream does not know the model', async () => {
    decide = () => ({ kind: 'error', status: 404 });
    const err = await openai.chat.completions.create({ model: MODEL, messages: question }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err).toMatchObject({ status: 503, code: 'model_unavailable' });
  });
});

describe('the README examples, offline on the built-in models', () => {
  it('runs the agent loop with tools to a final text answer', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'The weather in a city',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      },
    ];
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Lisbon?' }];
    const cities: string[] = [];
    for (let turn = 0; ; turn++) {
      expect(turn).toBeLessThan(3);
      const { choices } = await openai.chat.completions.create({ model: 'local/text', messages, tools });
      const choice = choices[0]!;
      messages.push(choice.message);
      if (!choice.message.tool_calls) {
        expect(choice.finish_reason).toBe('stop');
        expect(choice.message.content).toContain('get_weather');
        break;
      }
      expect(choice.finish_reason).toBe('tool_calls');
      for (const call of choice.message.tool_calls) {
        if (call.type !== 'function') continue;
        const { city } = JSON.parse(call.function.arguments) as { city: string };
        cities.push(city);
        messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify({ city, celsius: 21 }) });
      }
    }
    expect(cities).toEqual(['Lisbon']);
  });

  it('answers an image question and a JSON schema', async () => {
    const described = await openai.chat.completions.create({
      model: 'local/vision',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in this picture?' },
            { type: 'image_url', image_url: { url: png } },
          ],
        },
      ],
    });
    expect(described.choices[0]!.message.content).toContain('4×3 PNG');
    const structured = await openai.chat.completions.create({
      model: 'local/text',
      messages: [{ role: 'user', content: 'A city to visit in Portugal' }],
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'place', schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
      },
    });
    expect(JSON.parse(structured.choices[0]!.message.content!)).toEqual({ city: expect.any(String) });
  });
});

describe('the OpenAI client against an Anthropic-backed model', () => {
  it('sends tools and an image in Anthropic’s shape and answers the tool_use as OpenAI tool_calls', async () => {
    decideClaude = () => ({
      kind: 'ok',
      toolCalls: [{ id: 'toolu_01', name: 'get_weather', arguments: '{"city":"Lisbon"}' }],
      usage: { inputTokens: 300, outputTokens: 20 },
    });
    const completion = await openai.chat.completions.create({
      model: 'anthropic/claude-haiku-4-5',
      max_tokens: 300,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather where this photo was taken?' },
            { type: 'image_url', image_url: { url: png } },
          ],
        },
      ],
      tools: [weatherTool],
      tool_choice: 'required',
    });
    const sent = claude.calls().at(-1)!.body;
    expect(sent.system).toBeUndefined();
    expect(sent.tools).toEqual([{ name: 'get_weather', description: weatherTool.function.description, input_schema: weatherTool.function.parameters }]);
    expect(sent.tool_choice).toEqual({ type: 'any' });
    expect(sent.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Weather where this photo was taken?' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png.split(',')[1] } },
        ],
      },
    ]);
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.tool_calls).toEqual([{ id: 'toolu_01', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Lisbon"}' } }]);
    const model = await t.services.catalog.resolveForGateway('anthropic/claude-haiku-4-5');
    expect((completion.usage as unknown as { tokens_charged: number }).tokens_charged).toBe(
      (await t.services.catalog.priceUsage(model, { inputTokens: 300, outputTokens: 20 })).tokens,
    );
  });

  it('refuses a parameter Anthropic cannot honour (seed) with a 400 naming it, before any charge', async () => {
    await expectUnchargedRefusal(() => openai.chat.completions.create({ model: 'anthropic/claude-haiku-4-5', messages: question, seed: 3 }), 'seed');
  });
});
