import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { storedResponses } from '../../db/schema/responses.js';
import { usageRecords } from '../../db/schema/usage.js';
import { unpackThinking } from '../gateway/index.js';
import { outputItems } from './responses.format.js';
import { keptInput, toChatMessages } from './responses.input.js';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createApiKey, providerEnv, setBalance, setPlan, walletState } from '../../../test/helpers/gateway.js';
import { startFakeAnthropic } from '../gateway/providers/anthropic/anthropic.fake.js';
import { signatureOf } from '../gateway/providers/anthropic/anthropic-thinking.fake.js';
import type { Decide, FakeUpstream } from '../../../test/helpers/fake-upstreams.js';
import { expectUnchargedOpenAiRefusal } from '../../../test/helpers/uncharged-refusal.js';

/**
 * Reasoning a stateless client sends back on `/openai/v1/responses`: an Anthropic model with thinking, a tool call, and
 * the follow-up that the provider refuses unless the assistant turn starts with its signed thinking block.
 */

const MODEL = 'anthropic/claude-sonnet-4-6';
const INCLUDE: OpenAI.Responses.ResponseIncludable[] = ['reasoning.encrypted_content'];
let fake: FakeUpstream;
let t: TestApp;
let decide: Decide = () => ({ kind: 'ok' });
let openai: OpenAI;
let userId: string;

beforeAll(async () => {
  fake = await startFakeAnthropic((request) => (request.method === 'GET' ? { kind: 'ok' } : decide(request)));
  t = await createTestApp({ env: providerEnv('ANTHROPIC', fake.origin, ['sk-ant-responses-reasoning-1']) });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { accessToken, user } = await signUp(t.app);
  userId = user.id;
  await setPlan(t, userId, 'starter');
  // Thinking budgets are reserved up front: room for several calls on Sonnet's prices.
  await setBalance(t, userId, 5_000_000);
  const { key } = await createApiKey(t, accessToken, ['ai:text']);
  openai = new OpenAI({ apiKey: key, baseURL: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/openai/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const sent = () => fake.calls().at(-1)!.body as Record<string, any>;
const recordsOf = (requestId: string) => t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, requestId));
const storedRows = (id: string) => t.platform.db.select().from(storedResponses).where(eq(storedResponses.id, id));
const expectMeteredOnce = async (requestId: string | null) => expect((await recordsOf(requestId!)).map((r) => r.status)).toEqual(['SUCCESS']);

const weather: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};
const question: OpenAI.Responses.ResponseInputItem = { role: 'user', content: 'What is the weather in Paris?' };
const calledWeather = { id: 'toolu_rs_1', name: 'get_weather', arguments: '{"city":"Paris"}' };
/** The model calls the tool on the question, and answers once the result is back. */
const toolThenAnswer: Decide = (request) =>
  (request.body as { messages: unknown[] }).messages.length === 1 ? { kind: 'ok', text: '', toolCalls: [calledWeather] } : { kind: 'ok', text: 'Sunny, 18 C.' };
const ask = { model: MODEL, tools: [weather], reasoning: { effort: 'low' as const }, max_output_tokens: 1000 };
const result: OpenAI.Responses.ResponseInputItem = { type: 'function_call_output', call_id: calledWeather.id, output: '18 C and sunny' };
const asInput = (output: OpenAI.Responses.ResponseOutputItem[]) => output as OpenAI.Responses.ResponseInputItem[];
const reasoningOf = (output: OpenAI.Responses.ResponseOutputItem[]) =>
  output.find((item): item is OpenAI.Responses.ResponseReasoningItem => item.type === 'reasoning');

/** The follow-up reached the provider with the first answer's thinking block, signed, first in the assistant turn. */
function expectThinkingSentBack(thought: string) {
  expect(sent().messages[1]).toEqual({
    role: 'assistant',
    content: [
      { type: 'thinking', thinking: thought, signature: signatureOf(thought) },
      { type: 'tool_use', id: calledWeather.id, name: 'get_weather', input: { city: 'Paris' } },
    ],
  });
}

describe('reasoning sent back by a stateless client', () => {
  it('returns encrypted_content when included, and takes it back before the function call (store: false)', async () => {
    decide = toolThenAnswer;
    const { data: first, response: firstHttp } = await openai.responses.create({ ...ask, input: [question], include: INCLUDE, store: false }).withResponse();
    expect(sent().thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(first.output.map((item) => item.type)).toEqual(['reasoning', 'function_call']);
    const reasoning = reasoningOf(first.output)!;
    const thought = reasoning.summary[0]!.text;
    expect(thought).toContain('think');
    expect(reasoning.encrypted_content).toMatch(/^sfth1\./);
    expect(unpackThinking(reasoning.encrypted_content!, 'test')).toEqual([{ type: 'thinking', thinking: thought, signature: signatureOf(thought) }]);

    const { data: second, response: secondHttp } = await openai.responses
      .create({ ...ask, input: [question, ...asInput(first.output), result], include: INCLUDE, store: false })
      .withResponse();
    expectThinkingSentBack(thought);
    expect(second.output_text).toBe('Sunny, 18 C.');
    for (const http of [firstHttp, secondHttp]) await expectMeteredOnce(http.headers.get('x-ai-request-id'));
    // store: false keeps nothing.
    expect([...(await storedRows(first.id)), ...(await storedRows(second.id))]).toEqual([]);
  });

  it('streams encrypted_content on the reasoning item and in the completed response, and takes it back streamed', async () => {
    decide = toolThenAnswer;
    const { data: stream, response: firstHttp } = await openai.responses
      .create({ ...ask, input: [question], include: INCLUDE, store: false, stream: true })
      .withResponse();
    let done: OpenAI.Responses.ResponseReasoningItem | undefined;
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      if (event.type === 'response.output_item.done' && event.item.type === 'reasoning') done = event.item;
      if (event.type === 'response.completed') completed = event.response;
    }
    const thought = done!.summary[0]!.text;
    expect(done!.encrypted_content).toMatch(/^sfth1\./);
    expect(unpackThinking(done!.encrypted_content!, 'test')).toEqual([{ type: 'thinking', thinking: thought, signature: signatureOf(thought) }]);
    expect(reasoningOf(completed!.output)).toEqual(done);

    const { data: again, response: secondHttp } = await openai.responses
      .create({ ...ask, input: [question, ...asInput(completed!.output), result], include: INCLUDE, store: false, stream: true })
      .withResponse();
    let text = '';
    for await (const event of again) if (event.type === 'response.output_text.delta') text += event.delta;
    expectThinkingSentBack(thought);
    expect(text).toBe('Sunny, 18 C.');
    for (const http of [firstHttp, secondHttp]) await expectMeteredOnce(http.headers.get('x-ai-request-id'));
  });

  it('refuses an encrypted_content it did not write, or one that was cut, before any charge', async () => {
    decide = toolThenAnswer;
    const first = await openai.responses.create({ ...ask, input: [question], include: INCLUDE, store: false });
    const reasoning = reasoningOf(first.output)!;
    const call = first.output.find((item) => item.type === 'function_call')!;
    const withContent = (encrypted: string) => [question, { ...reasoning, encrypted_content: encrypted }, call, result] as OpenAI.Responses.ResponseInputItem[];
    const refuse = (encrypted: string) =>
      expectUnchargedOpenAiRefusal(
        t,
        userId,
        () => fake.calls().length,
        () => openai.responses.create({ ...ask, input: withContent(encrypted), store: false }),
        'input.1.encrypted_content',
      );

    // OpenAI's own encrypted reasoning (a client that switched gateways), then ours cut short.
    const foreign = await refuse('gAAAAABpF_eXampleOfOpenAiEncryptedReasoning==');
    expect(foreign.message).toContain('input.1.encrypted_content');
    expect(foreign.message).toContain('exactly as it came');
    await refuse(reasoning.encrypted_content!.slice(0, -12));
  });

  it('leaves encrypted_content out without the include, and reads a summary-only reasoning item past', async () => {
    decide = toolThenAnswer;
    const first = await openai.responses.create({ ...ask, input: [question], store: false });
    expect(reasoningOf(first.output)).toEqual({
      type: 'reasoning',
      id: expect.stringMatching(/^rs_/),
      summary: [{ type: 'summary_text', text: expect.stringContaining('think') }],
    });

    const stream = await openai.responses.create({ ...ask, input: [question], store: false, stream: true });
    const items: Record<string, unknown>[] = [];
    for await (const event of stream) {
      if (event.type === 'response.output_item.done') items.push(event.item as unknown as Record<string, unknown>);
      if (event.type === 'response.completed') items.push(...(event.response.output as unknown as Record<string, unknown>[]));
    }
    expect(items.filter((item) => item.type === 'reasoning')).toHaveLength(2);
    for (const item of items) expect(item).not.toHaveProperty('encrypted_content');

    // Without the thinking the provider refuses the follow-up, and the caller hears why.
    const refused = await openai.responses.create({ ...ask, input: [question, ...asInput(first.output), result], store: false }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect(String((refused as Error).message)).toContain('must start with a thinking block');
  });
});

describe('reasoning kept with a stored response', () => {
  it('carries the thinking into a previous_response_id continuation, and shows encrypted_content only when included', async () => {
    decide = toolThenAnswer;
    const first = await openai.responses.create({ ...ask, input: [question] });
    expect(reasoningOf(first.output)).not.toHaveProperty('encrypted_content');
    const thought = reasoningOf(first.output)!.summary[0]!.text;

    const { data: second, response: http } = await openai.responses.create({ ...ask, previous_response_id: first.id, input: [result] }).withResponse();
    expectThinkingSentBack(thought);
    expect(second.output_text).toBe('Sunny, 18 C.');
    await expectMeteredOnce(http.headers.get('x-ai-request-id'));

    expect(await openai.responses.retrieve(first.id)).toEqual(first);
    const included = await openai.responses.retrieve(first.id, { include: INCLUDE });
    expect(unpackThinking(reasoningOf(included.output)!.encrypted_content!, 'test')).toEqual([
      { type: 'thinking', thinking: thought, signature: signatureOf(thought) },
    ]);
  });

  it('keeps a reasoning item sent as input, listed with its encrypted_content only when included', async () => {
    decide = toolThenAnswer;
    const first = await openai.responses.create({ ...ask, input: [question], include: INCLUDE, store: false });
    const created = await openai.responses.create({ ...ask, input: [question, ...asInput(first.output), result] });
    const listed = await openai.responses.inputItems.list(created.id, { order: 'asc' });
    expect(listed.data.map((item) => item.type)).toEqual(['message', 'reasoning', 'function_call', 'function_call_output']);
    expect(listed.data[1]).not.toHaveProperty('encrypted_content');
    const withContent = await openai.responses.inputItems.list(created.id, { order: 'asc', include: INCLUDE });
    expect(withContent.data[1]).toMatchObject({
      type: 'reasoning',
      id: reasoningOf(first.output)!.id,
      encrypted_content: reasoningOf(first.output)!.encrypted_content,
    });
  });
});

describe('built-in tools the providers here cannot run', () => {
  it('refuses a tool_choice that forces one, naming it, before any charge', async () => {
    for (const type of ['web_search', 'web_search_preview'] as const) {
      const err = await expectUnchargedOpenAiRefusal(
        t,
        userId,
        () => fake.calls().length,
        () =>
          openai.responses.create({
            ...ask,
            input: 'News today?',
            tools: [weather, { type }],
            tool_choice: { type } as OpenAI.Responses.ToolChoiceTypes,
            include: INCLUDE,
          }),
        'tool_choice.type',
      );
      expect(err.message).toContain(`"${type}"`);
    }
  });
});

describe('redacted thinking', () => {
  const redacted = { type: 'redacted_thinking' as const, data: 'EuYBCkQYAiJA-opaque' };
  const signed = { type: 'thinking' as const, thinking: 'Check the tool.', signature: signatureOf('Check the tool.') };

  it('rides in encrypted_content though it has no summary text, and an unsigned block stays out', () => {
    const answer = { requestId: '0000-aaaa', text: '', finishReason: 'tool_calls', toolCalls: [calledWeather] };
    const [item] = outputItems({ ...answer, thinking: [redacted, { type: 'thinking', thinking: '', signature: '' }] });
    expect(item).toMatchObject({ type: 'reasoning', summary: [] });
    expect(unpackThinking((item as { encrypted_content: string }).encrypted_content, 'test')).toEqual([redacted]);
    // Another provider's plain reasoning text cannot be verified by any provider: shown, never packed.
    expect(outputItems({ ...answer, thinking: [{ type: 'thinking', thinking: 'Plain.', signature: '' }] })[0]).not.toHaveProperty('encrypted_content');
  });

  it('goes back to the assistant turn it preceded, and is dropped when no assistant turn follows', () => {
    const [item] = outputItems({ requestId: '0000-bbbb', text: '', finishReason: 'tool_calls', toolCalls: [calledWeather], thinking: [signed, redacted] });
    const reasoning = { type: 'reasoning', summary: [], encrypted_content: (item as { encrypted_content: string }).encrypted_content };
    const call = { type: 'function_call', call_id: calledWeather.id, name: 'get_weather', arguments: calledWeather.arguments };
    const items = keptInput([
      { role: 'user', content: 'Weather?' },
      reasoning,
      call,
      { type: 'function_call_output', call_id: calledWeather.id, output: 'Sunny' },
      reasoning,
      { role: 'user', content: 'Thanks' },
    ]);
    const { messages } = toChatMessages(items.map((kept, i) => ({ item: kept, path: `input.${i}` })));
    expect(messages.map((m) => [m.role, m.thinking])).toEqual([
      ['user', undefined],
      ['assistant', [signed, redacted]],
      ['tool', undefined],
      ['user', undefined],
    ]);
  });
});

it('leaves the wallet consistent with what was metered', async () => {
  const { balance, ledgerSum } = await walletState(t, userId);
  expect(balance).toBe(ledgerSum);
});
