import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatAnthropic } from '@langchain/anthropic';
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { ChatOpenAI, type ChatOpenAIFields } from '@langchain/openai';
import { z } from 'zod';
import { expectMetered, mark, startFrameworkHarness, type FrameworkHarness } from './harness.js';

/** LangChain JS against the gateway, configured as a user would: a base URL and a key, nothing else. */

let h: FrameworkHarness;
beforeAll(async () => {
  h = await startFrameworkHarness();
});
afterAll(async () => {
  await h?.close();
});

const chat = (fields: ChatOpenAIFields) => new ChatOpenAI({ apiKey: h.key, configuration: { baseURL: `${h.origin}/openai/v1` }, ...fields });

const looked: string[] = [];
const weather = tool(
  async ({ city }) => {
    looked.push(city);
    return JSON.stringify({ city, celsius: 21 });
  },
  { name: 'get_weather', description: 'The current weather in a city', schema: z.object({ city: z.string() }) },
);

const surfaces: [string, ChatOpenAIFields][] = [
  ['chat completions (the default)', {}],
  ['Responses (useResponsesApi)', { useResponsesApi: true }],
];

describe.each(surfaces)('ChatOpenAI offline on local/text through %s', (_name, fields) => {
  it('answers a plain prompt', async () => {
    const before = await mark(h);
    const reply = await chat({ model: 'local/text', ...fields }).invoke('Write a haiku about the sea.');
    expect(reply.text.length).toBeGreaterThan(0);
    expect(reply.usage_metadata?.input_tokens).toBeGreaterThan(0);
    await expectMetered(h, before, 1);
  });

  it('streams an answer', async () => {
    const before = await mark(h);
    let streamed = '';
    let outputTokens = 0;
    for await (const chunk of await chat({ model: 'local/text', ...fields }).stream('Write a haiku about the sea.')) {
      streamed += chunk.text;
      outputTokens += chunk.usage_metadata?.output_tokens ?? 0;
    }
    expect(streamed.length).toBeGreaterThan(0);
    expect(outputTokens).toBeGreaterThan(0);
    await expectMetered(h, before, 1);
  });

  it('runs a tool loop with bindTools and the tool answering its own calls', async () => {
    const before = await mark(h);
    looked.length = 0;
    const model = chat({ model: 'local/text', ...fields }).bindTools([weather]);
    const messages: BaseMessage[] = [new HumanMessage('What is the weather in Lisbon?')];
    for (let turn = 0; turn < 4; turn++) {
      const reply = await model.invoke(messages);
      messages.push(reply);
      if (!reply.tool_calls?.length) break;
      for (const call of reply.tool_calls) messages.push(await weather.invoke(call));
    }
    expect(messages.map((message) => message.type)).toEqual(['human', 'ai', 'tool', 'ai']);
    expect(looked).toHaveLength(1);
    expect(messages.at(-1)!.text).toContain('According to get_weather');
    expect(messages.at(-1)!.text).toContain('21');
    await expectMetered(h, before, 2);
  });
});

describe('reasoning options', () => {
  const thinkingUsage = { kind: 'ok' as const, text: 'No: 7 x 13.', usage: { inputTokens: 20, outputTokens: 90 }, tokenClasses: { reasoning: 80 } };

  it('takes `reasoning` on the bare OpenAI id, which names our openai/gpt-5; the vendor-prefixed id needs modelKwargs', async () => {
    h.decideOpenAi(() => thinkingUsage);
    // LangChain applies `reasoning` / `reasoningEffort` only to ids it knows as reasoning models (o1..., gpt-5...),
    // read from the bare OpenAI id: the gateway takes `gpt-5` for `openai/gpt-5`, so the option reaches the model.
    const bare = await mark(h);
    const byBareId = await chat({ model: 'gpt-5', reasoning: { effort: 'low' } }).invoke('Is 91 prime?');
    expect(h.openai.calls().at(-1)!.body).toMatchObject({ model: 'gpt-5', reasoning_effort: 'low' });
    expect(byBareId.text).toBe('No: 7 x 13.');
    await expectMetered(h, bare, 1);

    // With our vendor prefix it drops the option without a word.
    const before = await mark(h);
    await chat({ model: 'openai/gpt-5', reasoning: { effort: 'low' } }).invoke('Is 91 prime?');
    expect(h.openai.calls().at(-1)!.body).not.toHaveProperty('reasoning_effort');
    await expectMetered(h, before, 1);

    const completions = await mark(h);
    const reply = await chat({ model: 'openai/gpt-5', modelKwargs: { reasoning_effort: 'low' } }).invoke('Is 91 prime?');
    expect(h.openai.calls().at(-1)!.body.reasoning_effort).toBe('low');
    expect(reply.text).toBe('No: 7 x 13.');
    expect(reply.usage_metadata?.output_token_details?.reasoning).toBe(80);
    await expectMetered(h, completions, 1);

    const responses = await mark(h);
    const answered = await chat({ model: 'openai/gpt-5', useResponsesApi: true, modelKwargs: { reasoning: { effort: 'low' } } }).invoke('Is 91 prime?');
    expect(h.openai.calls().at(-1)!.body.reasoning_effort).toBe('low');
    expect(answered.text).toBe('No: 7 x 13.');
    await expectMetered(h, responses, 1);
  });

  it('turns the effort into a 2,048-token thinking budget on an Anthropic model, the thinking as reasoning_content', async () => {
    h.decideAnthropic(() => ({ kind: 'ok', text: 'It is 4.' }));
    const before = await mark(h);
    const reply = await chat({ model: 'anthropic/claude-sonnet-4-6', modelKwargs: { reasoning_effort: 'low' } }).invoke('2 + 2?');
    expect(h.anthropic.calls().at(-1)!.body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(reply.text).toBe('It is 4.');
    expect(reply.additional_kwargs.reasoning_content).toContain('think');
    await expectMetered(h, before, 1);
  });

  it("sends ChatAnthropic's thinking on /anthropic as is and keeps the signed block through a tool turn", async () => {
    h.decideAnthropic((request) =>
      request.body.messages.length === 1
        ? { kind: 'ok', text: '', toolCalls: [{ id: 'toolu_lc_1', name: 'get_weather', arguments: '{"city":"Paris"}' }] }
        : { kind: 'ok', text: 'Sunny, 21 degrees.' },
    );
    const before = await mark(h);
    looked.length = 0;
    const claude = new ChatAnthropic({
      model: 'anthropic/claude-sonnet-4-6',
      apiKey: h.key,
      anthropicApiUrl: `${h.origin}/anthropic`,
      thinking: { type: 'enabled', budget_tokens: 2048 },
    });
    const model = claude.bindTools([weather]);
    const messages: BaseMessage[] = [new HumanMessage('What is the weather in Paris?')];
    const first = await model.invoke(messages);
    expect(first.contentBlocks[0]).toMatchObject({ type: 'reasoning', reasoning: expect.stringContaining('think') });
    messages.push(first);
    for (const call of first.tool_calls ?? []) messages.push(await weather.invoke(call));
    const second = await model.invoke(messages);
    expect(looked).toEqual(['Paris']);
    expect(second).toBeInstanceOf(AIMessage);
    expect(second.text).toBe('Sunny, 21 degrees.');
    const calls = await expectMetered(h, before, 2);
    for (const call of h.anthropic.calls().slice(-2)) expect(call.body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(calls[1]!.body.messages[1].content[0]).toMatchObject({ type: 'thinking', signature: expect.any(String) });
  });
});
