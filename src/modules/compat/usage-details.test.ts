import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { priceUnits, type UsageUnits } from '../catalog/pricing.js';
import { startFakeAnthropic } from '../gateway/providers/anthropic/anthropic.fake.js';
import { startFakeOpenAi, type Decide, type FakeBehavior, type FakeUpstream, type TokenClasses } from '../../../test/helpers/fake-upstreams.js';
import { createApiKey, providerEnv, setBalance, setPlan } from '../../../test/helpers/gateway.js';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';

// The official SDKs see the provider's usage details in their own shapes, whichever provider family served the call:
// OpenAI's prompt_tokens_details / completion_tokens_details, Anthropic's cache_read_input_tokens /
// cache_creation_input_tokens (input_tokens then counting fresh input only) and output_tokens_details; plus
// tokens_charged. And Anthropic's cache_control markers reach the provider unchanged from both surfaces.

let upstreamOpenAi: FakeUpstream;
let upstreamAnthropic: FakeUpstream;
let t: TestApp;
let decideOpenAi: Decide;
let decideAnthropic: Decide;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  upstreamOpenAi = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : decideOpenAi(request)));
  upstreamAnthropic = await startFakeAnthropic((request) => (request.method === 'GET' ? { kind: 'ok' } : decideAnthropic(request)));
  t = await createTestApp({
    env: {
      ...providerEnv('OPENAI', upstreamOpenAi.baseUrl, ['sk-details-0001']),
      ...providerEnv('ANTHROPIC', upstreamAnthropic.origin, ['sk-ant-details-0001']),
    },
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { accessToken, user } = await signUp(t.app);
  await setPlan(t, user.id, 'starter');
  await setBalance(t, user.id, 50_000_000);
  const { key } = await createApiKey(t, accessToken, ['ai:text']);
  const origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  openai = new OpenAI({ apiKey: key, baseURL: `${origin}/openai/v1`, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: key, baseURL: `${origin}/anthropic`, maxRetries: 0 });
});
afterAll(async () => {
  await t?.close();
  await upstreamOpenAi?.close();
  await upstreamAnthropic?.close();
});
beforeEach(() => {
  decideOpenAi = () => ({ kind: 'ok' });
  decideAnthropic = () => ({ kind: 'ok' });
});

const GPT = 'openai/gpt-4o-mini';
const HAIKU = 'anthropic/claude-haiku-4-5';
const ok = (tokenClasses?: TokenClasses): FakeBehavior => ({
  kind: 'ok',
  text: 'The lamp turns all night.',
  usage: { inputTokens: 10_000, outputTokens: 200 },
  tokenClasses,
});
const question = 'Tell me about lighthouses';

async function charge(slug: string, usage: UsageUnits): Promise<number> {
  const result = priceUnits((await t.services.catalog.getBySlug(slug))!.row.pricing, usage, await t.services.catalog.pricingSettings());
  if (!result.ok) throw new Error(result.missing);
  return result.quote.tokens;
}

type Charged = { tokens_charged?: number };

describe('/openai/v1: OpenAI usage details', () => {
  it('passes cached and reasoning tokens through from an OpenAI-backed model, streamed and not', async () => {
    decideOpenAi = () => ok({ cached: 9_000, reasoning: 150 });
    const expected = {
      prompt_tokens: 10_000,
      completion_tokens: 200,
      total_tokens: 10_200,
      prompt_tokens_details: { cached_tokens: 9_000 },
      completion_tokens_details: { reasoning_tokens: 150 },
      tokens_charged: await charge(GPT, { inputTokens: 10_000, cachedInputTokens: 9_000, outputTokens: 200, reasoningTokens: 150 }),
    };
    const completion = await openai.chat.completions.create({ model: GPT, messages: [{ role: 'user', content: question }] });
    expect(completion.usage).toEqual(expected);
    expect(completion.usage!.prompt_tokens_details!.cached_tokens).toBe(9_000);

    const stream = await openai.chat.completions.create({
      model: GPT,
      messages: [{ role: 'user', content: question }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.at(-1)!.usage).toEqual(expected);
  });

  it("shows an Anthropic-backed model's cache reads and writes in OpenAI's shape (writes in OpenRouter's field)", async () => {
    decideAnthropic = () => ok({ cached: 9_000, cacheWrite: 500 });
    const completion = await openai.chat.completions.create({ model: HAIKU, messages: [{ role: 'user', content: question }] });
    expect(completion.usage).toEqual({
      prompt_tokens: 10_000,
      completion_tokens: 200,
      total_tokens: 10_200,
      prompt_tokens_details: { cached_tokens: 9_000, cache_write_tokens: 500 },
      tokens_charged: await charge(HAIKU, { inputTokens: 10_000, cachedInputTokens: 9_000, cacheWriteTokens: 500, outputTokens: 200 }),
    });
  });

  it('keeps the usage as before when the provider reports no classes', async () => {
    decideOpenAi = () => ok();
    const completion = await openai.chat.completions.create({ model: GPT, messages: [{ role: 'user', content: question }] });
    expect(completion.usage).toEqual({
      prompt_tokens: 10_000,
      completion_tokens: 200,
      total_tokens: 10_200,
      tokens_charged: await charge(GPT, { inputTokens: 10_000, outputTokens: 200 }),
    });
  });
});

describe('/anthropic/v1: Anthropic usage fields', () => {
  const ask: Anthropic.MessageCreateParamsNonStreaming = { model: HAIKU, max_tokens: 400, messages: [{ role: 'user', content: question }] };

  it('counts fresh input in input_tokens with the cache reads, writes and thinking beside it, streamed and not', async () => {
    decideAnthropic = () => ok({ cached: 9_000, cacheWrite: 500, reasoning: 80 });
    const charged = await charge(HAIKU, { inputTokens: 10_000, cachedInputTokens: 9_000, cacheWriteTokens: 500, outputTokens: 200, reasoningTokens: 80 });
    const expected = {
      input_tokens: 500,
      cache_creation_input_tokens: 500,
      cache_read_input_tokens: 9_000,
      output_tokens: 200,
      output_tokens_details: { thinking_tokens: 80 },
    };
    const message = await anthropic.messages.create(ask);
    expect(message.usage).toEqual({ ...expected, tokens_charged: charged });

    const stream = anthropic.messages.stream(ask);
    const deltas: Anthropic.MessageDeltaUsage[] = [];
    stream.on('streamEvent', (event) => {
      if (event.type === 'message_delta') deltas.push(event.usage);
    });
    const final = await stream.finalMessage();
    expect(deltas).toEqual([{ ...expected, tokens_charged: charged }]);
    expect(final.usage).toMatchObject(expected);
  });

  it("shows an OpenAI-backed model's cache hits as cache reads", async () => {
    decideOpenAi = () => ok({ cached: 9_000 });
    const message = await anthropic.messages.create({ ...ask, model: GPT });
    expect(message.usage as Anthropic.Usage & Charged).toEqual({
      input_tokens: 1_000,
      cache_read_input_tokens: 9_000,
      output_tokens: 200,
      tokens_charged: await charge(GPT, { inputTokens: 10_000, cachedInputTokens: 9_000, outputTokens: 200 }),
    });
  });
});

describe('prompt caching markers from both surfaces', () => {
  const instructions = 'You are a meticulous lighthouse historian. '.repeat(40);
  const weather = {
    name: 'get_weather',
    description: 'The weather at a lighthouse',
    parameters: { type: 'object', properties: { place: { type: 'string' } } },
  };

  it('/openai/v1: cache_control on system and user parts and on tools reaches Anthropic unchanged, and the cache is read back', async () => {
    // cache_control is not in the openai SDK's types: OpenRouter and LiteLLM accept it in OpenAI requests, so do we.
    const request = {
      model: HAIKU,
      messages: [
        { role: 'system', content: [{ type: 'text', text: instructions, cache_control: { type: 'ephemeral' } }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Keeper logs: '.repeat(30), cache_control: { type: 'ephemeral', ttl: '1h' } },
            { type: 'text', text: question },
          ],
        },
      ],
      tools: [{ type: 'function', function: weather, cache_control: { type: 'ephemeral' } }],
    } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
    const first = await openai.chat.completions.create(request);
    const sent = upstreamAnthropic.calls().at(-1)!.body;
    expect(sent.system).toEqual([{ type: 'text', text: instructions, cache_control: { type: 'ephemeral' } }]);
    expect(sent.messages[0].content).toEqual([
      { type: 'text', text: 'Keeper logs: '.repeat(30), cache_control: { type: 'ephemeral', ttl: '1h' } },
      { type: 'text', text: question },
    ]);
    expect(sent.tools).toEqual([
      { name: 'get_weather', description: weather.description, input_schema: weather.parameters, cache_control: { type: 'ephemeral' } },
    ]);

    const written = (first.usage as OpenAI.CompletionUsage & { prompt_tokens_details: { cache_write_tokens: number } }).prompt_tokens_details
      .cache_write_tokens;
    expect(written).toBeGreaterThan(0);
    const again = await openai.chat.completions.create(request);
    expect(again.usage!.prompt_tokens_details).toEqual({ cached_tokens: written });
    expect(again.usage!.prompt_tokens).toBe(first.usage!.prompt_tokens);
    expect((again.usage as Charged).tokens_charged).toBeLessThan((first.usage as Charged).tokens_charged!);
  });

  it('/anthropic/v1: cache_control on system, tools and message blocks reaches Anthropic unchanged', async () => {
    const system: Anthropic.TextBlockParam[] = [{ type: 'text', text: instructions, cache_control: { type: 'ephemeral', ttl: '1h' } }];
    const tools: Anthropic.Tool[] = [
      {
        name: 'get_weather',
        description: weather.description,
        input_schema: { type: 'object', properties: { place: { type: 'string' } } },
        cache_control: { type: 'ephemeral' },
      },
    ];
    const content: Anthropic.TextBlockParam[] = [
      { type: 'text', text: 'Keeper logs: '.repeat(30), cache_control: { type: 'ephemeral' } },
      { type: 'text', text: question },
    ];
    const message = await anthropic.messages.create({ model: HAIKU, max_tokens: 400, system, tools, messages: [{ role: 'user', content }] });
    const sent = upstreamAnthropic.calls().at(-1)!.body;
    expect(sent.system).toEqual(system);
    expect(sent.tools).toEqual(tools);
    expect(sent.messages[0].content).toEqual(content);
    expect(message.usage.cache_creation_input_tokens).toBeGreaterThan(0);
  });
});
