import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic } from './anthropic/anthropic.fake.js';
import { startFakeOpenAi, type FakeUpstream, type TokenClasses } from '../../../../test/helpers/fake-upstreams.js';
import { collect, messages } from '../../../../test/helpers/text-streams.js';
import { createAnthropicAdapter } from './anthropic/text.js';
import { usageOf } from './anthropic/messages.js';
import { createOpenAiAdapter } from './openai-compatible/adapter.js';
import { toUsage } from './openai-compatible/chat.js';
import type { ProviderAdapter, TextStreamEvent, TokenUsage, UpstreamCredential } from './types.js';

// Every token class a provider reports, read by the adapters into the gateway's usage (the classes are parts of the
// totals): from each provider's own wire fields, and end to end against the fakes, streamed and not.

describe("OpenAI-compatible usage (toUsage), in each provider's fields", () => {
  it('reads OpenAI cache hits and reasoning as parts of the totals; audio tokens stay in the totals', () => {
    const usage = {
      prompt_tokens: 2_006,
      completion_tokens: 300,
      total_tokens: 2_306,
      prompt_tokens_details: { cached_tokens: 1_920, audio_tokens: 40 },
      completion_tokens_details: { reasoning_tokens: 192, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    };
    expect(toUsage(usage)).toEqual({ inputTokens: 2_006, outputTokens: 300, cachedInputTokens: 1_920, reasoningTokens: 192 });
  });

  it('leaves the classes out when the details are zero or absent (as before)', () => {
    expect(
      toUsage({ prompt_tokens: 9, completion_tokens: 4, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } }),
    ).toEqual({
      inputTokens: 9,
      outputTokens: 4,
    });
    expect(toUsage({ prompt_tokens: 9, completion_tokens: 4, prompt_tokens_details: null, completion_tokens_details: null })).toEqual({
      inputTokens: 9,
      outputTokens: 4,
    });
    expect(toUsage({ prompt_tokens: 9 })).toBeNull();
  });

  it("reads DeepSeek's prompt_cache_hit_tokens, alone or beside OpenAI's field", () => {
    const chat = { prompt_tokens: 1_000, completion_tokens: 50, total_tokens: 1_050, prompt_cache_hit_tokens: 896, prompt_cache_miss_tokens: 104 };
    expect(toUsage(chat)).toEqual({ inputTokens: 1_000, outputTokens: 50, cachedInputTokens: 896 });
    // deepseek-reasoner, as DeepSeek answers today: both cache fields, and the reasoning in OpenAI's details
    const reasoner = {
      prompt_tokens: 10,
      completion_tokens: 11,
      prompt_tokens_details: { cached_tokens: 0 },
      prompt_cache_hit_tokens: 0,
      prompt_cache_miss_tokens: 10,
      completion_tokens_details: { reasoning_tokens: 7 },
    };
    expect(toUsage(reasoner)).toEqual({ inputTokens: 10, outputTokens: 11, reasoningTokens: 7 });
  });

  it("reads OpenRouter's cache writes beside its cache reads", () => {
    const usage = {
      prompt_tokens: 194,
      completion_tokens: 2,
      prompt_tokens_details: { cached_tokens: 60, cache_write_tokens: 100, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
      cost: 0.95,
    };
    expect(toUsage(usage)).toEqual({ inputTokens: 194, outputTokens: 2, cachedInputTokens: 60, cacheWriteTokens: 100 });
  });

  it("adds Perplexity's separately billed reasoning and citation tokens to the totals", () => {
    // Sonar Deep Research's pricing example: 500 input + 200 output + 50 citation + 100 reasoning tokens
    const deepResearch = { prompt_tokens: 500, completion_tokens: 200, total_tokens: 700, citation_tokens: 50, reasoning_tokens: 100, num_search_queries: 30 };
    expect(toUsage(deepResearch)).toEqual({
      inputTokens: 550,
      outputTokens: 300,
      reasoningTokens: 100,
    });
  });

  it("adds the thoughts Google's OpenAI compatibility counts only in total_tokens to the output, as reasoning", () => {
    // gemini-2.5-flash as answered through generativelanguage.googleapis.com/v1beta/openai: 283 thought tokens
    expect(toUsage({ prompt_tokens: 1_469, completion_tokens: 744, total_tokens: 2_496 })).toEqual({
      inputTokens: 1_469,
      outputTokens: 1_027,
      reasoningTokens: 283,
    });
    // the same, with the thoughts also named in the details: not counted twice
    expect(toUsage({ prompt_tokens: 1_469, completion_tokens: 744, total_tokens: 2_496, completion_tokens_details: { reasoning_tokens: 283 } })).toEqual({
      inputTokens: 1_469,
      outputTokens: 1_027,
      reasoningTokens: 283,
    });
    // a total that is the sum (OpenAI and the others) changes nothing
    expect(toUsage({ prompt_tokens: 1_469, completion_tokens: 744, total_tokens: 2_213 })).toEqual({ inputTokens: 1_469, outputTokens: 744 });
  });

  it('never lets a class exceed its total, and ignores what is not a count', () => {
    expect(
      toUsage({
        prompt_tokens: 100,
        completion_tokens: 5,
        prompt_tokens_details: { cached_tokens: 5_000, cache_write_tokens: 50 },
        completion_tokens_details: { reasoning_tokens: 9 },
      }),
    ).toEqual({
      inputTokens: 100,
      outputTokens: 5,
      cachedInputTokens: 100,
      reasoningTokens: 5,
    });
    expect(toUsage({ prompt_tokens: 100, completion_tokens: 5, prompt_tokens_details: { cached_tokens: '60' }, prompt_cache_hit_tokens: -3 })).toEqual({
      inputTokens: 100,
      outputTokens: 5,
    });
  });
});

describe('Anthropic usage (usageOf): cache reads and writes beside input_tokens, thinking inside output_tokens', () => {
  it('counts the prompt as all three and keeps the cache reads and writes as its classes', () => {
    const usage = {
      input_tokens: 500,
      cache_read_input_tokens: 9_000,
      cache_creation_input_tokens: 1_500,
      output_tokens: 200,
      output_tokens_details: { thinking_tokens: 120 },
    };
    expect(usageOf(usage)).toEqual({ inputTokens: 11_000, outputTokens: 200, cachedInputTokens: 9_000, cacheWriteTokens: 1_500, reasoningTokens: 120 });
  });

  it('reports no classes when the cache was not used', () => {
    expect(usageOf({ input_tokens: 21, output_tokens: 6, cache_creation_input_tokens: null, cache_read_input_tokens: 0, output_tokens_details: null })).toEqual(
      { inputTokens: 21, outputTokens: 6 },
    );
  });
});

const lastUsage = (events: TextStreamEvent[]): TokenUsage | undefined => events.flatMap((e) => (e.type === 'usage' ? [e.usage] : [])).at(-1);
const request = { model: 'fake-model', messages, maxTokens: 400 };

describe('the OpenAI-compatible adapter against the fake, streamed and not', () => {
  let fake: FakeUpstream;
  let adapter: ProviderAdapter;
  let credential: UpstreamCredential;
  beforeAll(async () => {
    fake = await startFakeOpenAi();
    adapter = createOpenAiAdapter({ defaultBaseUrl: 'http://unused.invalid/v1', streamIdleTimeoutMs: 1000 });
    credential = { accountId: 'acc-1', providerSlug: 'openai', apiKey: 'sk-test-1', baseUrl: fake.baseUrl, timeoutMs: 2000 };
  });
  afterAll(async () => fake?.close());

  it.each<[string, TokenClasses, TokenUsage]>([
    ['openai', { cached: 1_800, reasoning: 150 }, { inputTokens: 2_000, outputTokens: 300, cachedInputTokens: 1_800, reasoningTokens: 150 }],
    [
      'deepseek',
      { cached: 1_792, reasoning: 90, dialect: 'deepseek' },
      { inputTokens: 2_000, outputTokens: 300, cachedInputTokens: 1_792, reasoningTokens: 90 },
    ],
    [
      'openrouter',
      { cached: 1_000, cacheWrite: 600, reasoning: 10, dialect: 'openrouter' },
      { inputTokens: 2_000, outputTokens: 300, cachedInputTokens: 1_000, cacheWriteTokens: 600, reasoningTokens: 10 },
    ],
  ])('reads the %s fields', async (_, tokenClasses, expected) => {
    fake.decide(() => ({ kind: 'ok', text: 'Beams sweep the bay.', usage: { inputTokens: 2_000, outputTokens: 300 }, tokenClasses }));
    expect((await adapter.generateText(credential, request)).usage).toEqual(expected);
    expect(lastUsage(await collect(await adapter.streamText(credential, request)))).toEqual(expected);
  });
});

describe('the Anthropic adapter against the fake, streamed and not', () => {
  let fake: FakeUpstream;
  const adapter = createAnthropicAdapter({ streamIdleTimeoutMs: 1000 });
  let credential: UpstreamCredential;
  beforeAll(async () => {
    fake = await startFakeAnthropic();
    credential = { accountId: 'acc-a', providerSlug: 'anthropic', apiKey: 'sk-ant-1', baseUrl: fake.baseUrl, timeoutMs: 2000 };
  });
  afterAll(async () => fake?.close());
  beforeEach(() => fake.decide(() => ({ kind: 'ok' })));

  it('reads cache reads, cache writes and thinking (the stream: input counts in message_start, output in message_delta)', async () => {
    fake.decide(() => ({
      kind: 'ok',
      text: 'Beams sweep the bay.',
      usage: { inputTokens: 11_000, outputTokens: 200 },
      tokenClasses: { cached: 9_000, cacheWrite: 1_500, reasoning: 120 },
    }));
    const expected = { inputTokens: 11_000, outputTokens: 200, cachedInputTokens: 9_000, cacheWriteTokens: 1_500, reasoningTokens: 120 };
    expect((await adapter.generateText(credential, request)).usage).toEqual(expected);
    expect(lastUsage(await collect(await adapter.streamText(credential, request)))).toEqual(expected);
  });

  it("reports the fake's own prompt cache: a write first, then a read of the same prefix", async () => {
    const cached = {
      ...request,
      messages: [
        { role: 'system' as const, content: [{ type: 'text' as const, text: 'Long instructions. '.repeat(60), cacheControl: { type: 'ephemeral' } }] },
        messages[1]!,
      ],
    };
    const written = (await adapter.generateText(credential, cached)).usage!;
    const read = lastUsage(await collect(await adapter.streamText(credential, cached)))!;
    expect(written.cacheWriteTokens).toBeGreaterThan(100);
    expect(written.cachedInputTokens).toBeUndefined();
    expect(read).toEqual({ inputTokens: written.inputTokens, outputTokens: read.outputTokens, cachedInputTokens: written.cacheWriteTokens });
  });
});
