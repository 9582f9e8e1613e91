import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic } from './anthropic.fake.js';
import { solidPng } from '../../../../../test/helpers/fake-media-upstreams.js';
import type { Decide, FakeUpstream } from '../../../../../test/helpers/fake-upstreams.js';
import { parseSse, providerEnv, walletState } from '../../../../../test/helpers/gateway.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../../../test/helpers/test-app.js';

// Tools, tool results and images on POST /v1/ai/text for an Anthropic-backed model, through the real app to the fake
// Messages API: what reaches Anthropic, what the caller gets back, and what the wallet pays.

const MODEL = 'anthropic/claude-haiku-4-5';
let anthropic: FakeUpstream;
let t: TestApp;
let token: string;
let userId: string;
let decide: Decide = () => ({ kind: 'ok' });

beforeAll(async () => {
  anthropic = await startFakeAnthropic((request) => (request.method === 'GET' ? { kind: 'ok' } : decide(request)));
  t = await createTestApp({ env: providerEnv('ANTHROPIC', anthropic.origin, ['sk-ant-routes-1']) });
  const signed = await signUp(t.app);
  token = signed.accessToken;
  userId = signed.user.id;
});
afterAll(async () => {
  await t?.close();
  await anthropic?.close();
});
beforeEach(() => {
  decide = () => ({ kind: 'ok' });
});

const ask = (payload: object) => t.app.inject({ method: 'POST', url: '/v1/ai/text', headers: bearer(token), payload });
const sent = () => anthropic.calls().at(-1)!.body;
const tools = [
  {
    name: 'get_weather',
    description: 'The current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
];
const question = { role: 'user', content: 'Weather in Paris?' };
const call = { id: 'toolu_01A', name: 'get_weather', arguments: '{"city":"Paris"}' };

describe('tools through /v1/ai/text on an Anthropic model', () => {
  it('answers a tool call, then the follow-up with its result, each charged what Anthropic reported', async () => {
    const before = await walletState(t, userId);
    decide = () => ({ kind: 'ok', toolCalls: [call], usage: { inputTokens: 80, outputTokens: 12 } });
    const first = await ask({
      model: MODEL,
      messages: [question],
      tools,
      toolChoice: 'required',
      parallelToolCalls: false,
      topK: 20,
      stop: ['###'],
      user: 'end-user-1',
    });
    expect(first.statusCode).toBe(200);
    expect(json(first)).toMatchObject({ text: '', toolCalls: [call], usage: { inputTokens: 80, outputTokens: 12 } });
    expect(sent()).toMatchObject({
      tools: [{ name: 'get_weather', description: 'The current weather in a city', input_schema: tools[0]!.parameters }],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      top_k: 20,
      stop_sequences: ['###'],
      metadata: { user_id: 'end-user-1' },
    });

    decide = () => ({ kind: 'ok', text: 'Sunny, 18°C in Paris.', usage: { inputTokens: 120, outputTokens: 9 } });
    const second = await ask({
      model: MODEL,
      tools,
      messages: [question, { role: 'assistant', content: '', toolCalls: [call] }, { role: 'tool', toolCallId: call.id, content: '{"temp":18,"sky":"sunny"}' }],
    });
    expect(second.statusCode).toBe(200);
    expect(json(second)).toMatchObject({ text: 'Sunny, 18°C in Paris.' });
    expect(json(second)).not.toHaveProperty('toolCalls');
    expect(sent().messages.slice(-2)).toEqual([
      { role: 'assistant', content: [{ type: 'tool_use', id: call.id, name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '{"temp":18,"sky":"sunny"}' }] },
    ]);

    const after = await walletState(t, userId);
    const charged = json(first).usage.creditsConsumed + json(second).usage.creditsConsumed;
    expect(charged).toBeGreaterThan(0);
    expect(after.balance).toBe(before.balance - charged);
    expect(after.ledgerSum).toBe(after.balance);
  });

  it('streams tool_call events', async () => {
    decide = () => ({ kind: 'ok', text: 'Checking.', toolCalls: [call] });
    const events = parseSse((await ask({ model: MODEL, messages: [question], tools, stream: true })).body);
    const calls = events.filter((e) => e.type === 'tool_call');
    expect(calls[0]).toMatchObject({ index: 0, id: call.id, name: 'get_weather' });
    expect(calls.map((e) => e.argumentsDelta).join('')).toBe(call.arguments);
    expect(events.at(-1)).toMatchObject({ type: 'finish', finishReason: 'tool_calls' });
  });

  it("refunds a follow-up Anthropic refuses (a result for an unknown call), with Anthropic's message", async () => {
    const before = await walletState(t, userId);
    const response = await ask({
      model: MODEL,
      tools,
      messages: [question, { role: 'assistant', content: '', toolCalls: [call] }, { role: 'tool', toolCallId: 'toolu_unknown', content: 'x' }],
    });
    expect(response.statusCode).toBe(400);
    expect(json(response).error.message).toContain('toolu_unknown');
    expect((await walletState(t, userId)).balance).toBe(before.balance);
  });
});

describe('images and refused parameters on an Anthropic model', () => {
  it('sends a data: URL image as a base64 image block', async () => {
    const png = solidPng(16, 16).toString('base64');
    const response = await ask({
      model: MODEL,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What colour is this?' },
            { type: 'image', url: `data:image/png;base64,${png}` },
          ],
        },
      ],
    });
    expect(response.statusCode).toBe(200);
    expect(sent().messages.at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'What colour is this?' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
      ],
    });
  });

  it('refuses a JSON-schema answer format on a Claude model without structured outputs, before calling Anthropic or reserving', async () => {
    const before = { calls: anthropic.calls().length, wallet: await walletState(t, userId) };
    const response = await ask({
      model: 'anthropic/claude-3-5-haiku',
      messages: [question],
      responseFormat: { type: 'json_schema', name: 'weather', schema: { type: 'object' } },
    });
    expect(response.statusCode).toBe(400);
    expect(anthropic.calls().length).toBe(before.calls);
    expect((await walletState(t, userId)).balance).toBe(before.wallet.balance);
  });
});
