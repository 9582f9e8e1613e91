import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { priceUnits, type UsageUnits } from '../../catalog/pricing.js';
import { startFakeAnthropic } from '../providers/anthropic/anthropic.fake.js';
import { startFakeOpenAi, type Decide, type FakeBehavior, type FakeUpstream, type TokenClasses } from '../../../../test/helpers/fake-upstreams.js';
import { startFakeProvider } from '../../../../test/helpers/fakes/openai-compatible.js';
import { parseSse, providerEnv, setBalance, setPlan, walletState } from '../../../../test/helpers/gateway.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../../test/helpers/test-app.js';

// Every token class billed at its own price, through the real app: fake OpenAI, DeepSeek and Anthropic upstreams report
// cached input, cache writes and reasoning (streamed and not); the charge equals the per-class formula to the token,
// and the usage feed and summary show the classes.

let openai: FakeUpstream;
let deepseek: FakeUpstream;
let anthropic: FakeUpstream;
let t: TestApp;
let decideOpenAi: Decide;
let decideAnthropic: Decide;

beforeAll(async () => {
  openai = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : decideOpenAi(request)));
  // DeepSeek's own fake, answering as the test decides for OpenAI's.
  deepseek = await startFakeProvider('deepseek', (request) => (request.method === 'GET' ? { kind: 'ok' } : decideOpenAi(request)));
  anthropic = await startFakeAnthropic((request) => (request.method === 'GET' ? { kind: 'ok' } : decideAnthropic(request)));
  t = await createTestApp({
    env: {
      ...providerEnv('OPENAI', openai.baseUrl, ['sk-classes-0001']),
      ...providerEnv('DEEPSEEK', deepseek.baseUrl, ['sk-deepseek-classes-0001']),
      ...providerEnv('ANTHROPIC', anthropic.origin, ['sk-ant-classes-0001']),
    },
  });
});
afterAll(async () => {
  await t?.close();
  await openai?.close();
  await deepseek?.close();
  await anthropic?.close();
});
beforeEach(() => {
  decideOpenAi = () => ({ kind: 'ok' });
  decideAnthropic = () => ({ kind: 'ok' });
});

const GPT = 'openai/gpt-4o-mini'; // 15 US cents per 1M input, 7.5 cached, 60 output
const HAIKU = 'anthropic/claude-haiku-4-5'; // 100 input, 10 cache reads, 125 cache writes, 500 output
const DEEPSEEK = 'deepseek/deepseek-chat'; // no cached price in the catalog: cache hits at the fresh price

async function customer() {
  const signed = await signUp(t.app);
  await setPlan(t, signed.user.id, 'starter');
  await setBalance(t, signed.user.id, 50_000_000);
  return { token: signed.accessToken, userId: signed.user.id };
}

/** The wallet tokens the catalog's price of `slug` gives `usage`, by the per-class formula (catalog/pricing.ts). */
async function formula(slug: string, usage: UsageUnits): Promise<number> {
  const row = (await t.services.catalog.getBySlug(slug))!.row;
  const result = priceUnits(row.pricing, usage, await t.services.catalog.pricingSettings());
  if (!result.ok) throw new Error(`${slug} has no ${result.missing}`);
  return result.quote.tokens;
}

const ok = (inputTokens: number, outputTokens: number, tokenClasses?: TokenClasses): FakeBehavior => ({
  kind: 'ok',
  text: 'The lamp turns all night.',
  usage: { inputTokens, outputTokens },
  tokenClasses,
});

/** One text call; what it charged the wallet and its newest usage row (for a stream, read back from the feed). */
async function call(who: { token: string; userId: string }, model: string, stream: boolean) {
  const before = await walletState(t, who.userId);
  const response = await t.app.inject({
    method: 'POST',
    url: '/v1/ai/text',
    headers: bearer(who.token),
    payload: { model, messages: [{ role: 'user', content: 'Tell me about lighthouses' }], maxTokens: 400, stream },
  });
  expect(response.statusCode, response.body).toBe(200);
  if (stream) expect(parseSse(response.body).at(-1)).toMatchObject({ type: 'finish' });
  const after = await walletState(t, who.userId);
  expect(after.ledgerSum).toBe(after.balance);
  const [row] = json(await t.app.inject({ method: 'GET', url: '/v1/usage?limit=1', headers: bearer(who.token) })).items;
  expect(row.creditsConsumed).toBe(before.balance - after.balance);
  return { charged: before.balance - after.balance, row, body: stream ? null : json(response) };
}

describe.each([false, true])('charged per token class (stream: %s)', (stream) => {
  it('OpenAI: cached input at its price, reasoning at the output price; 90% cached costs strictly less', async () => {
    const who = await customer();
    decideOpenAi = () => ok(10_000, 300, { cached: 9_000, reasoning: 120 });
    const cached = await call(who, GPT, stream);
    const usage = { inputTokens: 10_000, cachedInputTokens: 9_000, outputTokens: 300, reasoningTokens: 120 };
    expect(cached.charged).toBe(await formula(GPT, usage));
    // (1,000 × 15 + 9,000 × 7.5 + 300 × 60) / 1M US cents × 122 = 12.261 poisha → ceil(6,811.67)
    expect(cached.charged).toBe(6_812);
    expect(cached.row.tokens).toEqual({ input: 10_000, cachedInput: 9_000, cacheWrite: 0, output: 300, reasoning: 120 });
    if (cached.body) expect(cached.body.usage).toMatchObject({ inputTokens: 10_000, outputTokens: 300, creditsConsumed: 6_812 });

    decideOpenAi = () => ok(10_000, 300);
    const uncached = await call(who, GPT, stream);
    expect(uncached.charged).toBe(await formula(GPT, { inputTokens: 10_000, outputTokens: 300 }));
    expect(cached.charged).toBeLessThan(uncached.charged);
    expect(uncached.row.tokens).toEqual({ input: 10_000, cachedInput: 0, cacheWrite: 0, output: 300, reasoning: 0 });
  });

  it('Anthropic: cache reads and writes reported beside input_tokens are billed, each at its price', async () => {
    const who = await customer();
    decideAnthropic = () => ok(10_000, 200, { cached: 9_000, cacheWrite: 500, reasoning: 80 });
    const cached = await call(who, HAIKU, stream);
    expect(anthropic.calls().at(-1)!.body.stream ?? false).toBe(stream);
    expect(cached.charged).toBe(
      await formula(HAIKU, { inputTokens: 10_000, cachedInputTokens: 9_000, cacheWriteTokens: 500, outputTokens: 200, reasoningTokens: 80 }),
    );
    // (500 × 100 + 9,000 × 10 + 500 × 125 + 200 × 500) / 1M US cents × 122 = 36.905 poisha → ceil(20,502.78)
    expect(cached.charged).toBe(20_503);
    expect(cached.row).toMatchObject({
      inputUnits: 10_000,
      outputUnits: 200,
      tokens: { input: 10_000, cachedInput: 9_000, cacheWrite: 500, output: 200, reasoning: 80 },
    });

    // The same prompt without the cache: 10,000 fresh input tokens. Reads cost less, and no class is ever free.
    decideAnthropic = () => ok(10_000, 200);
    const uncached = await call(who, HAIKU, stream);
    expect(uncached.charged).toBe(await formula(HAIKU, { inputTokens: 10_000, outputTokens: 200 }));
    expect(cached.charged).toBeLessThan(uncached.charged);
    decideAnthropic = () => ok(10_000, 200, { cacheWrite: 9_000 });
    expect((await call(who, HAIKU, stream)).charged).toBeGreaterThan(uncached.charged);
  });

  it('DeepSeek: its own cache-hit field is read, and a model without a cached price charges the fresh price', async () => {
    const who = await customer();
    decideOpenAi = () => ok(10_000, 300, { cached: 9_000, dialect: 'deepseek' });
    const hit = await call(who, DEEPSEEK, stream);
    expect(hit.charged).toBe(await formula(DEEPSEEK, { inputTokens: 10_000, outputTokens: 300 }));
    expect(hit.row.tokens).toMatchObject({ input: 10_000, cachedInput: 9_000 });
  });
});

describe("the README's second worked example (credits section)", () => {
  it('charges 19,656 tokens for 1,000 fresh input, 9,000 cache reads and 200 output on Claude Haiku 4.5; 74,556 uncached', async () => {
    const who = await customer();
    expect(await formula(HAIKU, { inputTokens: 10_000, cachedInputTokens: 9_000, outputTokens: 200 })).toBe(19_656);
    decideAnthropic = () => ok(10_000, 200, { cached: 9_000 });
    const cached = await call(who, HAIKU, false);
    expect(cached.charged).toBe(19_656);
    expect(cached.row.tokens).toEqual({ input: 10_000, cachedInput: 9_000, cacheWrite: 0, output: 200, reasoning: 0 });
    decideAnthropic = () => ok(10_000, 200);
    expect((await call(who, HAIKU, false)).charged).toBe(74_556);
  });
});

describe('the usage summary', () => {
  it('totals the cached input, cache writes and reasoning of the window, as the feed lists them', async () => {
    const who = await customer();
    const calls: Array<[Decide, string]> = [
      [() => ok(10_000, 300, { cached: 9_000, reasoning: 100 }), GPT],
      [() => ok(4_000, 100, { cached: 3_000 }), GPT],
      [() => ok(6_000, 50, { cacheWrite: 5_000 }), HAIKU],
      [() => ok(8_000, 60, { cached: 7_000, reasoning: 20 }), HAIKU],
      [() => ok(500, 40), GPT],
    ];
    for (const [decide, model] of calls) {
      decideOpenAi = decide;
      decideAnthropic = decide;
      await call(who, model, false);
    }
    const summary = json(await t.app.inject({ method: 'GET', url: '/v1/usage/summary?window=day', headers: bearer(who.token) }));
    const text = summary.byOperation.find((o: { operation: string; status: string }) => o.operation === 'text.generate' && o.status === 'SUCCESS');
    expect(text._count._all).toBe(5);
    expect(text._sum).toMatchObject({ inputUnits: 28_500, outputUnits: 550, cachedInputTokens: 19_000, cacheWriteTokens: 5_000, reasoningTokens: 120 });
    const rows = json(await t.app.inject({ method: 'GET', url: '/v1/usage?limit=10', headers: bearer(who.token) })).items;
    expect(rows.reduce((sum: number, row: { tokens: { cachedInput: number } }) => sum + row.tokens.cachedInput, 0)).toBe(text._sum.cachedInputTokens);
    expect(rows.reduce((sum: number, row: { creditsConsumed: number }) => sum + row.creditsConsumed, 0)).toBe(text._sum.creditsConsumed);
  });
});
