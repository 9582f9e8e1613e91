import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { usageRecords } from '../../db/schema/usage.js';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createApiKey, providerEnv, setBalance, setPlan } from '../../../test/helpers/gateway.js';
import { startFakeAnthropic } from '../gateway/providers/anthropic/anthropic.fake.js';
import { signatureOf } from '../gateway/providers/anthropic/anthropic-thinking.fake.js';
import type { Decide, FakeUpstream } from '../../../test/helpers/fake-upstreams.js';

/** Extended thinking on an Anthropic model: Anthropic's `thinking`, and the other surfaces' controls in its terms. */

const MODEL = 'anthropic/claude-sonnet-4-6';
let fake: FakeUpstream;
let t: TestApp;
let decide: Decide = () => ({ kind: 'ok' });
let anthropic: Anthropic;
let openai: OpenAI;
let apiKey: string;
let baseUrl: string;
let userId: string;

beforeAll(async () => {
  fake = await startFakeAnthropic((request) => (request.method === 'GET' ? { kind: 'ok' } : decide(request)));
  t = await createTestApp({ env: providerEnv('ANTHROPIC', fake.origin, ['sk-ant-thinking-1']) });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { accessToken, user } = await signUp(t.app);
  userId = user.id;
  await setPlan(t, userId, 'starter');
  // Thinking budgets are reserved up front: room for a few high-effort calls on Sonnet's prices.
  await setBalance(t, userId, 5_000_000);
  apiKey = (await createApiKey(t, accessToken, ['ai:text'])).key;
  baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  anthropic = new Anthropic({ apiKey, baseURL: `${baseUrl}/anthropic`, maxRetries: 0 });
  openai = new OpenAI({ apiKey, baseURL: `${baseUrl}/openai/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const sent = () => fake.calls().at(-1)!.body as Record<string, any>;
const recordsOf = () => t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId));
const weather: Anthropic.Tool = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const question: Anthropic.MessageParam = { role: 'user', content: 'What is the weather in Paris?' };
const calledWeather = { id: 'toolu_think_1', name: 'get_weather', arguments: '{"city":"Paris"}' };
const thinkingOf = (message: Anthropic.Message) => message.content.find((b): b is Anthropic.ThinkingBlock => b.type === 'thinking');

describe('thinking on /anthropic/v1/messages', () => {
  it('sends thinking with its budget, returns the signed block, and takes it back through a tool turn', async () => {
    decide = (request) =>
      (request.body as { messages: unknown[] }).messages.length === 1
        ? { kind: 'ok', text: '', toolCalls: [calledWeather] }
        : { kind: 'ok', text: 'Sunny, 18°C.' };
    const before = (await recordsOf()).length;
    const ask = { model: MODEL, max_tokens: 4096, thinking: { type: 'enabled' as const, budget_tokens: 2048 }, tools: [weather] };
    const first = await anthropic.messages.create({ ...ask, messages: [question] });
    expect(sent()).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 2048 }, max_tokens: 4096 });
    const thought = thinkingOf(first);
    expect(first.content[0]).toEqual({ type: 'thinking', thinking: expect.any(String), signature: signatureOf(thought!.thinking) });
    expect(first.content.some((b) => b.type === 'text' && b.text.includes(thought!.thinking))).toBe(false);
    expect(first.usage).toMatchObject({ output_tokens_details: { thinking_tokens: expect.any(Number) } });

    const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
    const result: Anthropic.MessageParam = { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '18°C and sunny' }] };
    const second = await anthropic.messages.create({ ...ask, messages: [question, { role: 'assistant', content: first.content }, result] });
    expect(sent().messages[1].content[0]).toEqual({ type: 'thinking', thinking: thought!.thinking, signature: thought!.signature });
    expect(second.content.at(-1)).toEqual({ type: 'text', text: 'Sunny, 18°C.' });

    // Anthropic refuses the follow-up once the thinking block is lost; so does the fake, and the caller hears why.
    const withoutThinking = first.content.filter((b) => b.type !== 'thinking') as Anthropic.ContentBlockParam[];
    const refused = await anthropic.messages
      .create({ ...ask, messages: [question, { role: 'assistant', content: withoutThinking }, result] })
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    expect(String((refused as Error).message)).toContain('must start with a thinking block');

    const records = (await recordsOf()).slice(before);
    expect(records.map((r) => r.status).sort()).toEqual(['FAILED', 'SUCCESS', 'SUCCESS']);
  });

  it('streams thinking_delta and signature_delta, the block intact at the end', async () => {
    decide = () => ({ kind: 'ok', text: 'Hello there.' });
    const stream = anthropic.messages.stream({
      model: MODEL,
      max_tokens: 3000,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [{ role: 'user', content: 'Hi' }],
    });
    const message = await stream.finalMessage();
    const thought = thinkingOf(message);
    expect(thought).toEqual({ type: 'thinking', thinking: expect.stringContaining('think'), signature: signatureOf(thought!.thinking) });
    expect(message.content.at(-1)).toEqual({ type: 'text', text: 'Hello there.' });
    expect(sent()).toMatchObject({ stream: true, thinking: { type: 'enabled', budget_tokens: 1024 }, max_tokens: 3000 });
  });

  it("takes Claude Code's adaptive thinking at its effort, with the context edit that changes nothing", async () => {
    decide = () => ({ kind: 'ok', text: 'Hello there.' });
    const ask = {
      model: MODEL,
      max_tokens: 16_000,
      messages: [question],
      thinking: { type: 'adaptive' },
      output_config: { effort: 'low' },
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    };
    const message = await anthropic.messages.create(ask as unknown as Anthropic.MessageCreateParamsNonStreaming);
    // max_tokens caps the whole output on this surface: the budget goes under it, never on top.
    expect(sent()).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 2048 }, max_tokens: 16_000 });
    expect(sent().context_management).toBeUndefined();
    expect(thinkingOf(message)).toEqual({ type: 'thinking', thinking: expect.any(String), signature: expect.any(String) });
    await anthropic.messages.create({ ...ask, output_config: undefined } as unknown as Anthropic.MessageCreateParamsNonStreaming);
    // Effort high (24,576 tokens) is lowered to fit under max_tokens.
    expect(sent()).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 15_999 }, max_tokens: 16_000 });
  });

  it('refuses a budget at or above max_tokens, as Anthropic does', async () => {
    const refused = await anthropic.messages
      .create({ model: MODEL, max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 2000 }, messages: [question] })
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
  });
});

describe('the other surfaces on an Anthropic model', () => {
  it('turns reasoning_effort into a thinking budget and shows the thinking as reasoning_content, never in content', async () => {
    decide = () => ({ kind: 'ok', text: 'It is 4.' });
    const completion = await openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: '2 + 2?' }],
      max_tokens: 1000,
      reasoning_effort: 'low',
    });
    expect(sent()).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 2048 }, max_tokens: 2048 + 1000 });
    const message = completion.choices[0]!.message as OpenAI.ChatCompletionMessage & { reasoning_content?: string };
    expect(message.content).toBe('It is 4.');
    expect(message.reasoning_content).toContain('think');

    const stream = await openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: '2 + 2?' }],
      reasoning_effort: 'minimal',
      stream: true,
    });
    let content = '';
    let reasoning = '';
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { content?: string; reasoning_content?: string } | undefined;
      content += delta?.content ?? '';
      reasoning += delta?.reasoning_content ?? '';
    }
    expect(content).toBe('It is 4.');
    expect(reasoning).toContain('think');
    expect(sent().thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
  });

  it('answers a Responses reasoning effort with a reasoning item', async () => {
    decide = () => ({ kind: 'ok', text: 'Four.' });
    const response = await openai.responses.create({ model: MODEL, input: '2 + 2?', reasoning: { effort: 'medium', summary: 'auto' }, store: false });
    expect(sent().thinking).toEqual({ type: 'enabled', budget_tokens: 8192 });
    expect(response.output[0]).toMatchObject({ type: 'reasoning', summary: [{ type: 'summary_text', text: expect.stringContaining('think') }] });
    expect(response.output_text).toBe('Four.');

    const stream = await openai.responses.create({ model: MODEL, input: '2 + 2?', reasoning: { effort: 'low' }, store: false, stream: true });
    let summary = '';
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      if (event.type === 'response.reasoning_summary_text.delta') summary += event.delta;
      if (event.type === 'response.completed') completed = event.response;
    }
    expect(summary).toContain('think');
    expect(completed?.output.map((item) => item.type)).toEqual(['reasoning', 'message']);
    expect(sent().thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
  });

  it('sizes the reservation of a /v1/ai/text call for the budget and the answer', async () => {
    decide = () => ({ kind: 'ok', text: 'Four.' });
    const answer = await fetch(`${baseUrl}/v1/ai/text`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: '2 + 2?' }], maxTokens: 500, reasoning: { effort: 'high' } }),
    });
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as { text: string; thinking?: unknown[]; requestId: string; usage: { reasoningTokens?: number } };
    expect(body.text).toBe('Four.');
    expect(body.thinking).toEqual([expect.objectContaining({ type: 'thinking' })]);
    expect(body.usage.reasoningTokens).toBeGreaterThan(0);
    expect(sent()).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 24_576 }, max_tokens: 24_576 + 500 });
    const [record] = (await recordsOf()).filter((r) => r.requestId === body.requestId);
    expect(record?.metadata).toMatchObject({ maxTokens: 24_576 + 500 });
  });
});
