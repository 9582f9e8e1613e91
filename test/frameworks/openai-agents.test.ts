import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, OpenAIProvider, Runner, run, setDefaultOpenAIClient, setTracingDisabled, tool, type ModelSettings } from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';
import { expectMetered, mark, startFrameworkHarness, type FrameworkHarness } from './harness.js';

/**
 * OpenAI's Agents SDK against the gateway, configured as a user would: its default client given a base URL and a
 * key (the Responses API, its default), or an OpenAIProvider on chat completions; tracing off, as it would otherwise
 * export each run to OpenAI.
 */

let h: FrameworkHarness;
let chatCompletions: Runner;

beforeAll(async () => {
  h = await startFrameworkHarness();
  setDefaultOpenAIClient(new OpenAI({ apiKey: h.key, baseURL: `${h.origin}/openai/v1` }));
  setTracingDisabled(true);
  chatCompletions = new Runner({ modelProvider: new OpenAIProvider({ apiKey: h.key, baseURL: `${h.origin}/openai/v1`, useResponses: false }) });
});
afterAll(async () => {
  await h?.close();
});

const looked: string[] = [];
const weather = tool({
  name: 'get_weather',
  description: 'The current weather in a city',
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => {
    looked.push(city);
    return { city, celsius: 21 };
  },
});

const agentOn = (model: string, extra: { tools?: (typeof weather)[]; modelSettings?: ModelSettings } = {}) =>
  new Agent({ name: 'Assistant', instructions: 'Be brief.', model, ...extra });

// The default: `run` on the client given to setDefaultOpenAIClient; or a Runner whose provider is on chat completions.
const surfaces: [string, () => Pick<Runner, 'run'>][] = [
  ['Responses (the default client)', () => ({ run })],
  ['chat completions (OpenAIProvider useResponses: false)', () => chatCompletions],
];

describe.each(surfaces)('offline on local/text through %s', (_name, surface) => {
  it('answers a plain prompt', async () => {
    const before = await mark(h);
    const result = await surface().run(agentOn('local/text'), 'Write a haiku about the sea.');
    expect(String(result.finalOutput).length).toBeGreaterThan(0);
    await expectMetered(h, before, 1);
  });

  it('streams an answer', async () => {
    const before = await mark(h);
    const stream = await surface().run(agentOn('local/text'), 'Write a haiku about the sea.', { stream: true });
    let streamed = '';
    for await (const delta of stream.toTextStream()) streamed += delta;
    await stream.completed;
    expect(streamed.length).toBeGreaterThan(0);
    expect(streamed).toBe(stream.finalOutput);
    await expectMetered(h, before, 1);
  });

  it("runs a tool loop with the SDK's own tool machinery", async () => {
    const before = await mark(h);
    looked.length = 0;
    const result = await surface().run(agentOn('local/text', { tools: [weather] }), 'What is the weather in Lisbon?');
    expect(result.newItems.map((item) => item.type)).toEqual(['tool_call_item', 'tool_call_output_item', 'message_output_item']);
    expect(looked).toHaveLength(1);
    expect(result.finalOutput).toContain('According to get_weather');
    expect(result.finalOutput).toContain('21');
    await expectMetered(h, before, 2);
  });
});

describe('reasoning options', () => {
  it('sends modelSettings.reasoning.effort to an OpenAI reasoning model as reasoning_effort, on both APIs', async () => {
    h.decideOpenAi(() => ({ kind: 'ok', text: 'No: 7 x 13.', usage: { inputTokens: 20, outputTokens: 90 }, tokenClasses: { reasoning: 80 } }));
    const agent = agentOn('openai/gpt-5', { modelSettings: { reasoning: { effort: 'low' } } });
    for (const [, surface] of surfaces) {
      const before = await mark(h);
      const result = await surface().run(agent, 'Is 91 prime?');
      expect(h.openai.calls().at(-1)!.body.reasoning_effort).toBe('low');
      expect(result.finalOutput).toBe('No: 7 x 13.');
      expect(result.state.usage.outputTokensDetails).toContainEqual({ reasoning_tokens: 80 });
      await expectMetered(h, before, 1);
    }
  });

  it('turns effort low into a 2,048-token thinking budget on an Anthropic model, the thinking as a reasoning item', async () => {
    h.decideAnthropic(() => ({ kind: 'ok', text: 'It is 4.' }));
    const before = await mark(h);
    const result = await run(agentOn('anthropic/claude-sonnet-4-6', { modelSettings: { reasoning: { effort: 'low', summary: 'auto' } } }), '2 + 2?');
    expect(h.anthropic.calls().at(-1)!.body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(result.finalOutput).toBe('It is 4.');
    const reasoning = result.newItems.find((item) => item.type === 'reasoning_item');
    expect(JSON.stringify(reasoning?.rawItem)).toContain('think');
    await expectMetered(h, before, 1);
  });
});
