import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, stepCountIs, streamText, tool, type LanguageModel } from 'ai';
import { z } from 'zod';
import { expectMetered, mark, startFrameworkHarness, type FrameworkHarness } from './harness.js';

/** The Vercel AI SDK against the gateway, configured as a user would: a base URL and a key, nothing else. */

let h: FrameworkHarness;
let openai: ReturnType<typeof createOpenAI>;
let anthropic: ReturnType<typeof createAnthropic>;

beforeAll(async () => {
  h = await startFrameworkHarness();
  openai = createOpenAI({ baseURL: `${h.origin}/openai/v1`, apiKey: h.key });
  anthropic = createAnthropic({ baseURL: `${h.origin}/anthropic/v1`, apiKey: h.key });
});
afterAll(async () => {
  await h?.close();
});

const looked: string[] = [];
const weather = tool({
  description: 'The current weather in a city',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => {
    looked.push(city);
    return { city, celsius: 21 };
  },
});

const surfaces: [string, () => LanguageModel][] = [
  ['chat completions (openai.chat)', () => openai.chat('local/text')],
  ['Responses (openai, the default)', () => openai('local/text')],
];

describe.each(surfaces)('offline on local/text through %s', (_name, model) => {
  it('answers a plain prompt', async () => {
    const before = await mark(h);
    const result = await generateText({ model: model(), prompt: 'Write a haiku about the sea.' });
    expect(result.text.length).toBeGreaterThan(0);
    expect(result.finishReason).toBe('stop');
    expect(result.usage.inputTokens).toBeGreaterThan(0);
    await expectMetered(h, before, 1);
  });

  it('streams an answer', async () => {
    const before = await mark(h);
    const result = streamText({ model: model(), prompt: 'Write a haiku about the sea.' });
    let streamed = '';
    for await (const delta of result.textStream) streamed += delta;
    expect(streamed.length).toBeGreaterThan(0);
    expect(streamed).toBe(await result.text);
    expect((await result.usage).outputTokens).toBeGreaterThan(0);
    await expectMetered(h, before, 1);
  });

  it("runs a tool loop with the SDK's own tool machinery", async () => {
    const before = await mark(h);
    looked.length = 0;
    const result = await generateText({ model: model(), tools: { get_weather: weather }, stopWhen: stepCountIs(4), prompt: 'What is the weather in Lisbon?' });
    expect(result.steps.map((step) => step.finishReason)).toEqual(['tool-calls', 'stop']);
    expect(looked).toHaveLength(1);
    expect(result.text).toContain('According to get_weather');
    expect(result.text).toContain('21');
    const calls = await expectMetered(h, before, 2);
    expect(JSON.stringify(calls[1]!.body)).toContain(JSON.stringify(JSON.stringify({ city: looked[0], celsius: 21 })));
  });
});

describe('reasoning options', () => {
  // The SDK knows reasoning models by their bare OpenAI ids (gpt-5, o4-mini): on Responses it drops reasoningEffort,
  // with a warning, for an id it does not know, such as ours with its vendor prefix, unless forceReasoning says so.
  const reasoningOptions = { openai: { reasoningEffort: 'low', forceReasoning: true } };

  it('sends providerOptions.openai.reasoningEffort to an OpenAI reasoning model as reasoning_effort', async () => {
    h.decideOpenAi(() => ({ kind: 'ok', text: 'No: 7 x 13.', usage: { inputTokens: 20, outputTokens: 90 }, tokenClasses: { reasoning: 80 } }));
    for (const model of [openai.chat('openai/gpt-5'), openai('openai/gpt-5')]) {
      const before = await mark(h);
      const result = await generateText({ model, system: 'Be brief.', prompt: 'Is 91 prime?', providerOptions: reasoningOptions });
      expect(result.warnings).toEqual([]);
      expect(h.openai.calls().at(-1)!.body).toMatchObject({ reasoning_effort: 'low', messages: [{ content: 'Be brief.' }, { role: 'user' }] });
      expect(result.text).toBe('No: 7 x 13.');
      expect(result.usage.outputTokenDetails.reasoningTokens).toBe(80);
      await expectMetered(h, before, 1);
    }
  });

  it('needs no forceReasoning on the bare OpenAI id, which names our openai/gpt-5', async () => {
    h.decideOpenAi(() => ({ kind: 'ok', text: 'No: 7 x 13.', usage: { inputTokens: 20, outputTokens: 90 }, tokenClasses: { reasoning: 80 } }));
    const before = await mark(h);
    const result = await generateText({ model: openai('gpt-5'), prompt: 'Is 91 prime?', providerOptions: { openai: { reasoningEffort: 'low' } } });
    expect(result.warnings).toEqual([]);
    expect(h.openai.calls().at(-1)!.body).toMatchObject({ model: 'gpt-5', reasoning_effort: 'low' });
    expect(result.text).toBe('No: 7 x 13.');
    await expectMetered(h, before, 1);
  });

  it('turns reasoningEffort low into a 2,048-token thinking budget on an Anthropic model', async () => {
    h.decideAnthropic(() => ({ kind: 'ok', text: 'It is 4.' }));
    const before = await mark(h);
    const result = await generateText({ model: openai.chat('anthropic/claude-sonnet-4-6'), prompt: '2 + 2?', providerOptions: reasoningOptions });
    expect(h.anthropic.calls().at(-1)!.body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(result.text).toBe('It is 4.');
    await expectMetered(h, before, 1);

    // On Responses the thinking comes back as a reasoning item's summary, which the SDK shows as reasoningText.
    const again = await mark(h);
    const responses = await generateText({
      model: openai('anthropic/claude-sonnet-4-6'),
      prompt: '2 + 2?',
      providerOptions: { openai: { ...reasoningOptions.openai, reasoningSummary: 'auto' } },
    });
    expect(h.anthropic.calls().at(-1)!.body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(responses.text).toBe('It is 4.');
    expect(responses.reasoningText).toContain('think');
    await expectMetered(h, again, 1);
  });

  it("surfaces Anthropic's thinking as reasoningText with @ai-sdk/anthropic on /anthropic, through a tool turn", async () => {
    h.decideAnthropic((request) =>
      request.body.messages.length === 1
        ? { kind: 'ok', text: '', toolCalls: [{ id: 'toolu_sdk_1', name: 'get_weather', arguments: '{"city":"Paris"}' }] }
        : { kind: 'ok', text: 'Sunny, 21 degrees.' },
    );
    const before = await mark(h);
    looked.length = 0;
    const result = await generateText({
      model: anthropic('anthropic/claude-sonnet-4-6'),
      // Without it the SDK asks for the model's whole output limit (64,000 on Sonnet 4.5), all reserved up front.
      maxOutputTokens: 1024,
      tools: { get_weather: weather },
      stopWhen: stepCountIs(4),
      prompt: 'What is the weather in Paris?',
      providerOptions: { anthropic: { thinking: { type: 'enabled', budgetTokens: 2048 } } },
    });
    expect(looked).toEqual(['Paris']);
    expect(result.text).toBe('Sunny, 21 degrees.');
    expect(result.steps[0]!.reasoningText).toContain('think');
    expect(result.reasoningText).toContain('think');
    const calls = await expectMetered(h, before, 2);
    // The SDK adds the budget to maxOutputTokens, as Anthropic counts it.
    for (const call of calls) expect(call.body).toMatchObject({ max_tokens: 1024 + 2048, thinking: { type: 'enabled', budget_tokens: 2048 } });
    for (const call of h.anthropic.calls().slice(-2)) expect(call.body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    // The signed thinking block went back intact with the tool result, as Anthropic requires.
    expect(calls[1]!.body.messages[1].content[0]).toMatchObject({ type: 'thinking', signature: expect.any(String) });
  });
});
