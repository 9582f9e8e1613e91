import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { usageRecords } from '../../db/schema/usage.js';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createApiKey, providerEnv, setBalance, setPlan } from '../../../test/helpers/gateway.js';
import { startFakeAnthropic } from '../gateway/providers/anthropic/anthropic.fake.js';
import { signatureOf } from '../gateway/providers/anthropic/anthropic-thinking.fake.js';
import { expectUnchargedOpenAiRefusal } from '../../../test/helpers/uncharged-refusal.js';
import type { Decide, FakeUpstream } from '../../../test/helpers/fake-upstreams.js';
import { toChatCompletion, toTextBody, type ChatCompletionRequest } from './openai.format.js';

/**
 * Thinking blocks through chat completions, in OpenRouter's `reasoning_details`: the signed block comes back to the
 * caller (whole, or piece by piece when streamed) and, sent back on the assistant message, reaches Anthropic first in
 * that turn, as it requires before a tool result.
 */

const MODEL = 'anthropic/claude-sonnet-4-6';
let fake: FakeUpstream;
let t: TestApp;
let decide: Decide = () => ({ kind: 'ok' });
let openai: OpenAI;
let userId: string;

beforeAll(async () => {
  fake = await startFakeAnthropic((request) => (request.method === 'GET' ? { kind: 'ok' } : decide(request)));
  t = await createTestApp({ env: providerEnv('ANTHROPIC', fake.origin, ['sk-ant-openai-thinking']) });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { accessToken, user } = await signUp(t.app);
  userId = user.id;
  await setPlan(t, userId, 'starter');
  // Thinking budgets are reserved up front: room for several calls on Sonnet's prices.
  await setBalance(t, userId, 5_000_000);
  const apiKey = (await createApiKey(t, accessToken, ['ai:text'])).key;
  openai = new OpenAI({ apiKey, baseURL: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/openai/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

type Detail = { type: string; text?: string; signature?: string; data?: string; format?: string; index?: number };
type Message = OpenAI.ChatCompletionMessage & { reasoning_details?: Detail[] };
type Delta = OpenAI.ChatCompletionChunk.Choice.Delta & { reasoning_details?: Detail[]; reasoning_content?: string };

const sent = () => fake.calls().at(-1)!.body as Record<string, any>;
const upstreamCalls = () => fake.calls().length;
const recordsOf = () => t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId));
const weather: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const question: OpenAI.ChatCompletionMessageParam = { role: 'user', content: 'What is the weather in Paris?' };
const ask = { model: MODEL, max_tokens: 1000, reasoning_effort: 'low' as const, tools: [weather] };
const toolTurn = () => {
  decide = (request) =>
    (request.body as { messages: unknown[] }).messages.length === 1
      ? { kind: 'ok', text: '', toolCalls: [{ id: 'toolu_or_1', name: 'get_weather', arguments: '{"city":"Paris"}' }] }
      : { kind: 'ok', text: 'Sunny, 18°C.' };
};
const resultOf = (callId: string): OpenAI.ChatCompletionMessageParam => ({ role: 'tool', tool_call_id: callId, content: '18°C and sunny' });
const requestIdOf = (completionId: string) => completionId.replace(/^chatcmpl-/, '');
/** The assistant message sent back, with fields the SDK's types do not list. */
const assistant = (fields: Record<string, unknown>) => ({ role: 'assistant', ...fields }) as unknown as OpenAI.ChatCompletionMessageParam;

async function expectMeteredOnce(requestIds: string[]) {
  const records = await recordsOf();
  for (const requestId of requestIds) expect(records.filter((r) => r.requestId === requestId)).toHaveLength(1);
}

describe('reasoning_details on chat completions (Anthropic thinking)', () => {
  it('returns the signed block and takes it back through a tool turn; without it the provider refuses', async () => {
    toolTurn();
    const before = (await recordsOf()).length;
    const first = await openai.chat.completions.create({ ...ask, messages: [question] });
    const message = first.choices[0]!.message as Message;
    const thought = (message as { reasoning_content?: string }).reasoning_content!;
    expect(thought).toContain('think');
    expect(message.reasoning_details).toEqual([
      { type: 'reasoning.text', text: thought, signature: signatureOf(thought), format: 'anthropic-claude-v1', index: 0 },
    ]);
    expect(message.content).toBeNull();
    const call = message.tool_calls![0]!;

    // The SDK's message, sent back as it came (reasoning_details included).
    const second = await openai.chat.completions.create({ ...ask, messages: [question, message, resultOf(call.id)] });
    expect(sent().messages[1].content[0]).toEqual({ type: 'thinking', thinking: thought, signature: signatureOf(thought) });
    expect(sent().messages[1].content.filter((b: { type: string }) => b.type === 'thinking')).toHaveLength(1);
    expect(second.choices[0]!.message.content).toBe('Sunny, 18°C.');

    // Without the details Anthropic refuses the follow-up; so does the fake, and the caller hears why.
    const { reasoning_details: _dropped, ...bare } = message;
    const refused = await openai.chat.completions
      .create({ ...ask, messages: [question, bare as OpenAI.ChatCompletionMessageParam, resultOf(call.id)] })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as Error).message).toContain('must start with a thinking block');

    const records = (await recordsOf()).slice(before);
    expect(records.map((r) => r.status).sort()).toEqual(['FAILED', 'SUCCESS', 'SUCCESS']);
    await expectMeteredOnce([requestIdOf(first.id), requestIdOf(second.id)]);
  });

  it('streams the block in pieces (text, then the signature) that, sent back, make the same block', async () => {
    toolTurn();
    const runner = openai.chat.completions.stream({ ...ask, messages: [question] });
    const details: Detail[] = [];
    let reasoning = '';
    for await (const chunk of runner) {
      const delta: Delta | undefined = chunk.choices[0]?.delta;
      details.push(...(delta?.reasoning_details ?? []));
      reasoning += delta?.reasoning_content ?? '';
    }
    // The SDK's own accumulator reads the chunks, those with only reasoning_details among them.
    const final = await runner.finalChatCompletion();
    const call = final.choices[0]!.message.tool_calls![0]!;
    expect(call.type === 'function' && call.function.name).toBe('get_weather');

    expect(details.length).toBeGreaterThan(1);
    expect(details.every((d) => d.type === 'reasoning.text' && d.index === 0 && d.format === 'anthropic-claude-v1')).toBe(true);
    expect(details.map((d) => d.text).join('')).toBe(reasoning);
    const signed = details.filter((d) => d.signature);
    expect(signed).toEqual([{ type: 'reasoning.text', text: '', signature: signatureOf(reasoning), format: 'anthropic-claude-v1', index: 0 }]);
    expect(details.at(-1)).toBe(signed[0]);

    // Sent back piece by piece as they came (the gateway joins pieces of one index), the follow-up streamed too.
    const back = assistant({ content: null, tool_calls: final.choices[0]!.message.tool_calls, reasoning_details: details });
    const stream = await openai.chat.completions.create({
      ...ask,
      messages: [question, back, resultOf(call.id)],
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = '';
    let id = '';
    for await (const chunk of stream) {
      content += chunk.choices[0]?.delta?.content ?? '';
      id = chunk.id;
    }
    expect(sent().messages[1].content[0]).toEqual({ type: 'thinking', thinking: reasoning, signature: signatureOf(reasoning) });
    expect(content).toBe('Sunny, 18°C.');

    // Without them the refusal comes before the stream opens, as an error the SDK throws.
    const bare = assistant({ content: null, tool_calls: final.choices[0]!.message.tool_calls });
    const refused = await openai.chat.completions.create({ ...ask, messages: [question, bare, resultOf(call.id)], stream: true }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as Error).message).toContain('must start with a thinking block');
    await expectMeteredOnce([requestIdOf(final.id), requestIdOf(id)]);
  });

  it('sends a redacted block as it came, and leaves out what no provider takes back', async () => {
    decide = () => ({ kind: 'ok', text: 'Sunny.' });
    const back = assistant({
      content: null,
      tool_calls: [{ id: 'toolu_or_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      reasoning_details: [
        { type: 'reasoning.summary', summary: 'Looked up the weather.', format: 'openai-responses-v1', index: 0 },
        { type: 'reasoning.text', text: 'Unsigned reasoning text.', format: 'unknown', index: 1 },
        { type: 'reasoning.text', text: 'Another provider thought this.', signature: 'gemini-sig', format: 'google-gemini-v1', index: 2 },
        { type: 'reasoning.encrypted', data: 'EncryptedByAnthropic==', format: 'anthropic-claude-v1', index: 3 },
      ],
    });
    const answer = await openai.chat.completions.create({ ...ask, messages: [question, back, resultOf('toolu_or_2')] });
    expect(answer.choices[0]!.message.content).toBe('Sunny.');
    const blocks = sent().messages[1].content as { type: string }[];
    expect(blocks[0]).toEqual({ type: 'redacted_thinking', data: 'EncryptedByAnthropic==' });
    expect(blocks.filter((b) => b.type === 'thinking' || b.type === 'redacted_thinking')).toHaveLength(1);
  });

  it('refuses a malformed entry with a 400 naming it, before any charge or upstream call', async () => {
    const call = { id: 'toolu_or_3', type: 'function', function: { name: 'get_weather', arguments: '{}' } };
    const signed = { type: 'reasoning.text', text: 'A thought.', signature: signatureOf('A thought.'), format: 'anthropic-claude-v1', index: 0 };
    const cases: [unknown[], string][] = [
      [[{ type: 'reasoning.text', format: 'anthropic-claude-v1', index: 0 }], 'messages.1.reasoning_details.0'],
      [[signed, { type: 'reasoning.encrypted', format: 'anthropic-claude-v1', index: 1 }], 'messages.1.reasoning_details.1'],
      [[signed, { type: 'reasoning.thought', text: 'x', index: 1 }], 'messages.1.reasoning_details.1'],
      [['not an entry'], 'messages.1.reasoning_details.0'],
    ];
    for (const [details, param] of cases) {
      const messages = [question, assistant({ content: null, tool_calls: [call], reasoning_details: details }), resultOf(call.id)];
      const err = await expectUnchargedOpenAiRefusal(t, userId, upstreamCalls, () => openai.chat.completions.create({ ...ask, messages }), param);
      expect(err.message).toContain('reasoning_details');
    }
    const onUser = { role: 'user', content: 'Hi', reasoning_details: [signed] } as unknown as OpenAI.ChatCompletionMessageParam;
    const err = await expectUnchargedOpenAiRefusal(
      t,
      userId,
      upstreamCalls,
      () => openai.chat.completions.create({ ...ask, messages: [onUser] }),
      'messages.0.reasoning_details',
    );
    expect(err.message).toContain('only an assistant message');
  });
});

describe('reasoning_details of a provider that does not sign its reasoning', () => {
  it('names the text unknown, without a signature, and leaves it out when it comes back', () => {
    const usage = { inputTokens: 10, outputTokens: 20, creditsConsumed: 30 };
    const answer = {
      text: 'Four.',
      usage,
      model: 'deepseek/deepseek-reasoner',
      requestId: 'req_unsigned',
      finishReason: 'stop',
      thinking: [{ type: 'thinking' as const, thinking: 'Two and two.', signature: '' }],
    };
    const message = toChatCompletion(answer, 0).choices[0]!.message;
    expect(message.reasoning_details).toEqual([{ type: 'reasoning.text', text: 'Two and two.', format: 'unknown', index: 0 }]);

    const body = {
      model: answer.model,
      messages: [
        { role: 'user', content: '2 + 2?' },
        { ...message, role: 'assistant' },
        { role: 'user', content: 'And 3 + 3?' },
      ],
    } as ChatCompletionRequest;
    expect(toTextBody(body).messages[1]).toEqual({ role: 'assistant', content: 'Four.' });
  });
});
