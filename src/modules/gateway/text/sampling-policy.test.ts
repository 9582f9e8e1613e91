import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import Anthropic from '@anthropic-ai/sdk';
import { usageRecords } from '../../../db/schema/usage.js';
import { createTestApp, signUp, type TestApp } from '../../../../test/helpers/test-app.js';
import { createApiKey, ledgerOf, providerEnv, setBalance, setPlan, walletState } from '../../../../test/helpers/gateway.js';
import { startFakeOpenAi, type Decide, type FakeUpstream } from '../../../../test/helpers/fake-upstreams.js';
import { startFakeAnthropic } from '../providers/anthropic/anthropic.fake.js';
import { countMessageTokens } from './tokens.js';

/**
 * The policy for request fields a model cannot take (capabilities.ts), through the app against the fakes: a
 * sampling hint is left out and named in x-storefront-ignored, never sent (the Anthropic fake refuses, as Anthropic
 * does, temperature and top_k with thinking, and a forced tool_choice with thinking); what changes the answer is a
 * 400 before any charge; and on Anthropic's surface max_tokens caps the thinking too.
 */

const CLAUDE = 'anthropic/claude-sonnet-4-6';
const GPT = 'openai/gpt-4o-mini';
let openAiFake: FakeUpstream;
let anthropicFake: FakeUpstream;
let t: TestApp;
let decide: Decide = () => ({ kind: 'ok' });
let anthropic: Anthropic;
let apiKey: string;
let baseUrl: string;
let userId: string;

beforeAll(async () => {
  openAiFake = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : decide(request)));
  anthropicFake = await startFakeAnthropic((request) => (request.method === 'GET' ? { kind: 'ok' } : decide(request)));
  t = await createTestApp({
    env: { ...providerEnv('OPENAI', openAiFake.baseUrl, ['sk-sampling-0001']), ...providerEnv('ANTHROPIC', anthropicFake.origin, ['sk-ant-sampling-1']) },
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { accessToken, user } = await signUp(t.app);
  userId = user.id;
  await setPlan(t, userId, 'starter');
  // Thinking budgets are reserved up front on Sonnet's prices.
  await setBalance(t, userId, 5_000_000);
  apiKey = (await createApiKey(t, accessToken, ['ai:text'])).key;
  baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  anthropic = new Anthropic({ apiKey, baseURL: `${baseUrl}/anthropic`, maxRetries: 0 });
});
afterAll(async () => {
  await t?.close();
  await openAiFake?.close();
  await anthropicFake?.close();
});

const text = (body: Record<string, unknown>) =>
  fetch(`${baseUrl}/v1/ai/text`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
const lastBody = (fake: FakeUpstream) => fake.calls().at(-1)!.body as Record<string, any>;
const recordOf = async (requestId: string) => (await t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, requestId)))[0]!;
const reservedFor = async (requestId: string) => -(await ledgerOf(t, requestId))[0]!.amount;
const question = 'Is 91 prime?';
// The SDK's types no longer list the sampling parameters (newer models refuse them), which older clients still send.
const create = (params: Record<string, unknown>) => anthropic.messages.create(params as unknown as Anthropic.MessageCreateParamsNonStreaming);
const createStream = (params: Record<string, unknown>) =>
  anthropic.messages.create({ ...params, stream: true } as unknown as Anthropic.MessageCreateParamsStreaming);
const weather: Anthropic.Tool = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } } },
};

describe('a sampling hint the model cannot take is left out and named', () => {
  it('top_k on an OpenAI model: not sent, named, and charged as the same call without it', async () => {
    decide = () => ({ kind: 'ok', text: 'No: 7 x 13.' });
    const plain = await text({ model: GPT, messages: [{ role: 'user', content: question }] });
    const withTopK = await text({ model: GPT, messages: [{ role: 'user', content: question }], topK: 64 });
    expect(withTopK.status).toBe(200);
    expect(withTopK.headers.get('x-storefront-ignored')).toBe('topK');
    expect(plain.headers.get('x-storefront-ignored')).toBeNull();
    expect(lastBody(openAiFake)).not.toHaveProperty('top_k');
    const [a, b] = (await Promise.all([plain.json(), withTopK.json()])) as { requestId: string; usage: { creditsConsumed: number } }[];
    expect(b!.usage.creditsConsumed).toBe(a!.usage.creditsConsumed);
    expect((await recordOf(b!.requestId)).tokensConsumed).toBe((await recordOf(a!.requestId)).tokensConsumed);
    expect(await reservedFor(b!.requestId)).toBe(await reservedFor(a!.requestId));
  });

  it('names it as the caller sent it on /anthropic/v1/messages, streamed or not', async () => {
    decide = () => ({ kind: 'ok', text: 'No.' });
    const { response } = await create({ model: GPT, max_tokens: 100, messages: [{ role: 'user', content: question }], top_k: 40 }).withResponse();
    expect(response.headers.get('x-storefront-ignored')).toBe('top_k');
    expect(lastBody(openAiFake)).not.toHaveProperty('top_k');

    const streamed = await createStream({ model: GPT, max_tokens: 100, messages: [{ role: 'user', content: question }], top_k: 40 }).withResponse();
    for await (const event of streamed.data) void event;
    expect(streamed.response.headers.get('x-storefront-ignored')).toBe('top_k');
    expect(lastBody(openAiFake)).not.toHaveProperty('top_k');
  });

  it('temperature and top_k with thinking on Claude: left out (the fake would refuse them) and named', async () => {
    decide = () => ({ kind: 'ok', text: 'No.' });
    const thinking = { type: 'enabled' as const, budget_tokens: 1024 };
    const { data: message, response } = await create({
      model: CLAUDE,
      max_tokens: 2000,
      thinking,
      temperature: 0.3,
      top_k: 40,
      messages: [{ role: 'user', content: question }],
    }).withResponse();
    expect(message.content.map((b) => b.type)).toEqual(['thinking', 'text']);
    expect(response.headers.get('x-storefront-ignored')).toBe('temperature, top_k');
    const sent = lastBody(anthropicFake);
    expect(sent).toMatchObject({ thinking, max_tokens: 2000 });
    expect(sent).not.toHaveProperty('temperature');
    expect(sent).not.toHaveProperty('top_k');

    // What Anthropic takes with thinking goes as it is: temperature 1, top_p within 0.95..1.
    await create({ model: CLAUDE, max_tokens: 2000, thinking, temperature: 1, messages: [{ role: 'user', content: question }] });
    expect(lastBody(anthropicFake).temperature).toBe(1);
    const kept = await create({ model: CLAUDE, max_tokens: 2000, thinking, top_p: 0.97, messages: [{ role: 'user', content: question }] }).withResponse();
    expect(lastBody(anthropicFake).top_p).toBe(0.97);
    expect(kept.response.headers.get('x-storefront-ignored')).toBeNull();
    const narrow = await create({ model: CLAUDE, max_tokens: 2000, thinking, top_p: 0.5, messages: [{ role: 'user', content: question }] }).withResponse();
    expect(narrow.response.headers.get('x-storefront-ignored')).toBe('top_p');
    expect(lastBody(anthropicFake)).not.toHaveProperty('top_p');

    // Without thinking they go upstream as before.
    await create({ model: CLAUDE, max_tokens: 200, temperature: 0.3, top_k: 40, messages: [{ role: 'user', content: question }] });
    expect(lastBody(anthropicFake)).toMatchObject({ temperature: 0.3, top_k: 40 });
  });

  it('under the gateway names on POST /v1/ai/text with a reasoning effort', async () => {
    decide = () => ({ kind: 'ok', text: 'No.' });
    const answer = await text({
      model: CLAUDE,
      messages: [{ role: 'user', content: question }],
      maxTokens: 500,
      reasoning: { effort: 'low' },
      temperature: 0.2,
      topK: 5,
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-storefront-ignored')).toBe('temperature, topK');
    // This surface keeps its documented rule: the budget is added to maxTokens.
    expect(lastBody(anthropicFake)).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 2048 }, max_tokens: 2048 + 500 });
  });
});

describe('a forced tool_choice with thinking on Claude', () => {
  it('is a 400 naming tool_choice, before any charge or upstream call', async () => {
    const before = await walletState(t, userId);
    const records = (await t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId))).length;
    const calls = anthropicFake.calls().length;
    for (const toolChoice of [{ type: 'any' as const }, { type: 'tool' as const, name: 'get_weather' }]) {
      const err = await anthropic.messages
        .create({
          model: CLAUDE,
          max_tokens: 2000,
          thinking: { type: 'enabled', budget_tokens: 1024 },
          tools: [weather],
          tool_choice: toolChoice,
          messages: [{ role: 'user', content: 'Weather in Paris?' }],
        })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Anthropic.BadRequestError);
      expect((err as InstanceType<typeof Anthropic.BadRequestError>).message).toMatch(/tool_choice.*auto.*thinking/);
    }
    const viaText = await text({
      model: CLAUDE,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [{ name: 'get_weather', parameters: weather.input_schema }],
      toolChoice: 'required',
      reasoning: { effort: 'low' },
    });
    expect(viaText.status).toBe(400);
    expect(((await viaText.json()) as { error: { details: { field: string }[] } }).error.details).toEqual([expect.objectContaining({ field: 'toolChoice' })]);
    expect(anthropicFake.calls()).toHaveLength(calls);
    expect(await walletState(t, userId)).toEqual(before);
    expect(await t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId))).toHaveLength(records);
  });

  it('auto is taken with thinking', async () => {
    decide = () => ({ kind: 'ok', text: 'Sunny.' });
    await anthropic.messages.create({
      model: CLAUDE,
      max_tokens: 2000,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      tools: [weather],
      tool_choice: { type: 'auto' },
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    expect(lastBody(anthropicFake).thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
  });
});

describe("adaptive thinking on /anthropic/v1/messages within the caller's max_tokens", () => {
  it('sends max_tokens as asked with the budget under it, and reserves no more than that', async () => {
    decide = () => ({ kind: 'ok', text: 'No.' });
    const messages = [{ role: 'user' as const, content: question }];
    const ask = { model: CLAUDE, max_tokens: 4000, thinking: { type: 'adaptive' }, messages };
    const message = await create(ask);
    // Effort high by default stands for 24,576 tokens: lowered under max_tokens, never added to it.
    expect(lastBody(anthropicFake)).toMatchObject({ max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 3999 } });
    const requestId = message.id.replace(/^msg_/, '');
    expect((await recordOf(requestId)).metadata).toMatchObject({ maxTokens: 4000 });
    const model = await t.services.catalog.resolveForGateway(CLAUDE);
    const estimate = await t.services.catalog.estimateTokens(model, { kind: 'text', inputTokens: countMessageTokens(messages), maxOutputTokens: 4000 });
    expect(await reservedFor(requestId)).toBe(estimate);

    // An effort below max_tokens is sent as it is, max_tokens still the cap.
    await create({ ...ask, output_config: { effort: 'low' } });
    expect(lastBody(anthropicFake)).toMatchObject({ max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 2048 } });
  });

  it('goes without thinking, named in the header, when max_tokens cannot hold the smallest budget', async () => {
    decide = () => ({ kind: 'ok', text: 'No.' });
    const ask = { model: CLAUDE, max_tokens: 1000, thinking: { type: 'adaptive' }, temperature: 0.3, messages: [{ role: 'user', content: question }] };
    const { response } = await create(ask).withResponse();
    expect(response.headers.get('x-storefront-ignored')).toBe('thinking');
    // No thinking: the temperature goes as asked.
    expect(lastBody(anthropicFake)).toMatchObject({ max_tokens: 1000, temperature: 0.3 });
    expect(lastBody(anthropicFake)).not.toHaveProperty('thinking');
  });

  it('keeps an enabled budget as it is, max_tokens unchanged', async () => {
    decide = () => ({ kind: 'ok', text: 'No.' });
    await anthropic.messages.create({
      model: CLAUDE,
      max_tokens: 3000,
      thinking: { type: 'enabled', budget_tokens: 2500 },
      messages: [{ role: 'user', content: question }],
    });
    expect(lastBody(anthropicFake)).toMatchObject({ max_tokens: 3000, thinking: { type: 'enabled', budget_tokens: 2500 } });
  });
});
