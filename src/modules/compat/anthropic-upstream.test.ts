import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import Anthropic from '@anthropic-ai/sdk';
import { usageRecords } from '../../db/schema/usage.js';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createApiKey, providerEnv, setPlan, walletState } from '../../../test/helpers/gateway.js';
import { startFakeOpenAi, type Decide, type FakeUpstream } from '../../../test/helpers/fake-upstreams.js';
import { startFakeProvider } from '../../../test/helpers/fakes/openai-compatible.js';
import { solidPng } from '../../../test/helpers/fake-media-upstreams.js';

/** The Anthropic SDK in front of an OpenAI-backed model: what the upstream receives, and its tool calls as tool_use. */

let fake: FakeUpstream;
let groq: FakeUpstream;
let t: TestApp;
let decide: Decide = () => ({ kind: 'ok' });
let anthropic: Anthropic;
let userId: string;

beforeAll(async () => {
  fake = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : decide(request)));
  // Groq's account: its Llama 3.3 is a model without vision.
  groq = await startFakeProvider('groq');
  t = await createTestApp({
    env: { ...providerEnv('OPENAI', fake.baseUrl, ['sk-anthropic-compat-0001']), ...providerEnv('GROQ', groq.baseUrl, ['gsk-anthropic-compat-0001']) },
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { accessToken, user } = await signUp(t.app);
  userId = user.id;
  await setPlan(t, userId, 'starter');
  const { key } = await createApiKey(t, accessToken, ['ai:text']);
  anthropic = new Anthropic({ apiKey: key, baseURL: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/anthropic`, maxRetries: 0 });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
  await groq?.close();
});

const model = 'openai/gpt-4o-mini';
const weather: Anthropic.Tool = {
  name: 'get_weather',
  description: 'The current weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const png = solidPng(8, 8).toString('base64');
const question: Anthropic.MessageParam = {
  role: 'user',
  content: [
    { type: 'text', text: 'What is the weather where this photo was taken?' },
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
  ],
};
const calledWeather = { id: 'call_up_1', name: 'get_weather', arguments: '{"city":"Paris"}' };
const lastUpstreamBody = () => fake.calls().at(-1)!.body;
const recordsOf = () => t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId));
const errorMessage = (err: unknown) => (err as { error: { error: { message: string } } }).error.error.message;

describe('/anthropic/v1/messages over an OpenAI-backed model', () => {
  it('sends no system prompt of its own, carries tools, the image and the parameters, and answers tool calls as tool_use', async () => {
    decide = () => ({ kind: 'ok', text: '', toolCalls: [calledWeather] });
    // Sampling parameters the SDK's types no longer list, still sent by older clients.
    const sampling = { top_p: 0.5 };
    const message = await anthropic.messages.create({
      model,
      max_tokens: 200,
      tools: [weather],
      tool_choice: { type: 'auto', disable_parallel_tool_use: true },
      stop_sequences: ['END'],
      metadata: { user_id: 'end-user-7' },
      messages: [question],
      ...sampling,
    });

    const upstream = lastUpstreamBody();
    expect(upstream.messages.map((m: { role: string }) => m.role)).toEqual(['user']);
    expect(upstream.messages[0].content).toEqual([
      { type: 'text', text: 'What is the weather where this photo was taken?' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } },
    ]);
    expect(upstream.tools).toEqual([
      { type: 'function', function: { name: 'get_weather', description: weather.description, parameters: weather.input_schema } },
    ]);
    expect(upstream).toMatchObject({ parallel_tool_calls: false, stop: ['END'], top_p: 0.5, user: 'end-user-7' });

    expect(message.stop_reason).toBe('tool_use');
    expect(message.content).toEqual([{ type: 'tool_use', id: 'call_up_1', name: 'get_weather', input: { city: 'Paris' } }]);
  });

  it("puts the caller's system prompt first, as sent", async () => {
    decide = () => ({ kind: 'ok', text: 'Sunny.' });
    await anthropic.messages.create({ model, max_tokens: 50, system: 'Be brief.', messages: [{ role: 'user', content: 'Weather?' }] });
    expect(lastUpstreamBody().messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Weather?' },
    ]);
  });

  it('sends a tool_result follow-up as the assistant tool call and a tool message', async () => {
    decide = () => ({ kind: 'ok', text: 'It is 18°C in Paris.' });
    const message = await anthropic.messages.create({
      model,
      max_tokens: 200,
      tools: [weather],
      messages: [
        question,
        { role: 'assistant', content: [{ type: 'tool_use', id: 'call_up_1', name: 'get_weather', input: { city: 'Paris' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_up_1', content: '18°C' }] },
      ],
    });
    const upstream = lastUpstreamBody();
    expect(upstream.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_up_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_up_1', content: '18°C' },
    ]);
    expect(message).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'It is 18°C in Paris.' }] });
  });

  it("the SDK's stream helper assembles the upstream's streamed tool call, billed once", async () => {
    decide = () => ({ kind: 'ok', text: 'Let me look.', toolCalls: [calledWeather] });
    const before = (await recordsOf()).length;
    const stream = anthropic.messages.stream({ model, max_tokens: 200, tools: [weather], messages: [question] });
    const deltas: string[] = [];
    stream.on('inputJson', (partial) => deltas.push(partial));
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content).toEqual([
      { type: 'text', text: 'Let me look.' },
      { type: 'tool_use', id: 'call_up_1', name: 'get_weather', input: { city: 'Paris' } },
    ]);
    expect(deltas.join('')).toBe('{"city":"Paris"}');
    const records = await recordsOf();
    expect(records).toHaveLength(before + 1);
    expect(records.at(-1)).toMatchObject({ status: 'SUCCESS', requestId: final.id.replace(/^msg_/, '') });
    const state = await walletState(t, userId);
    expect(state.ledgerSum).toBe(state.balance);
  });

  it('leaves out a sampling hint the provider does not take (top_k), naming it in x-storefront-ignored', async () => {
    decide = () => ({ kind: 'ok', text: 'Hello.' });
    const topK = { top_k: 5 };
    const { data: message, response } = await anthropic.messages
      .create({ model, max_tokens: 50, messages: [{ role: 'user', content: 'Hi' }], ...topK })
      .withResponse();
    expect(message.content).toEqual([{ type: 'text', text: 'Hello.' }]);
    expect(response.headers.get('x-storefront-ignored')).toBe('top_k');
    expect(lastUpstreamBody()).not.toHaveProperty('top_k');
  });

  it('a model without vision refuses an image with a 400 before any charge or upstream call', async () => {
    const before = await walletState(t, userId);
    const err = await anthropic.messages.create({ model: 'groq/llama-3.3-70b-versatile', max_tokens: 50, messages: [question] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(errorMessage(err)).toMatch(/images/);
    expect(groq.calls()).toHaveLength(0);
    expect(await walletState(t, userId)).toEqual(before);
  });

  it('an upstream that refuses the request is a 400 in Anthropic shape, refunded', async () => {
    decide = () => ({ kind: 'error', status: 400, message: 'Invalid image.' });
    const before = await walletState(t, userId);
    const err = await anthropic.messages.create({ model, max_tokens: 50, messages: [question] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(await walletState(t, userId)).toEqual(before);
  });
});
