import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { priceUnits, type UsageUnits } from '../../catalog/pricing.js';
import { startFakeAnthropic } from '../providers/anthropic/anthropic.fake.js';
import type { Decide, FakeBehavior, FakeUpstream, TokenClasses } from '../../../../test/helpers/fake-upstreams.js';
import { createApiKey, parseSse, providerEnv, setBalance, setPlan, walletState } from '../../../../test/helpers/gateway.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../../test/helpers/test-app.js';

// Anthropic's 1-hour cache writes (`cache_control: { type: "ephemeral", ttl: "1h" }`) cost twice the input price, the
// 5-minute ones 1.25 times it (https://platform.claude.com/docs/en/build-with-claude/prompt-caching#pricing). Through
// the real app and the fake Messages API, which reports `usage.cache_creation` by lifetime: the charge is the per-class
// formula to the token, the usage record and summary keep the 1-hour part, and each surface shows it in its own shape.

let upstream: FakeUpstream;
let t: TestApp;
let decide: Decide;
let openai: OpenAI;
let anthropic: Anthropic;
let who: { token: string; userId: string };

beforeAll(async () => {
  upstream = await startFakeAnthropic((request) => (request.method === 'GET' ? { kind: 'ok' } : decide(request)));
  t = await createTestApp({ env: providerEnv('ANTHROPIC', upstream.origin, ['sk-ant-hour-0001']) });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const signed = await signUp(t.app);
  await setPlan(t, signed.user.id, 'starter');
  await setBalance(t, signed.user.id, 50_000_000);
  who = { token: signed.accessToken, userId: signed.user.id };
  const { key } = await createApiKey(t, signed.accessToken, ['ai:text']);
  const origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  openai = new OpenAI({ apiKey: key, baseURL: `${origin}/openai/v1`, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: key, baseURL: `${origin}/anthropic`, maxRetries: 0 });
});
afterAll(async () => {
  await t?.close();
  await upstream?.close();
});
beforeEach(() => {
  decide = () => ({ kind: 'ok' });
});

const HAIKU = 'anthropic/claude-haiku-4-5';
const ok = (tokenClasses?: TokenClasses): FakeBehavior => ({
  kind: 'ok',
  text: 'The lamp turns all night.',
  usage: { inputTokens: 10_000, outputTokens: 200 },
  tokenClasses,
});
const question = 'Tell me about lighthouses';

/** The wallet tokens the seeded price of `slug` gives `usage` (catalog/pricing.ts). */
async function formula(slug: string, usage: UsageUnits): Promise<number> {
  const result = priceUnits((await t.services.catalog.getBySlug(slug))!.row.pricing, usage, await t.services.catalog.pricingSettings());
  if (!result.ok) throw new Error(`${slug} has no ${result.missing}`);
  return result.quote.tokens;
}

/** The newest usage row of the caller, and what the wallet paid since `before`. */
async function lastRow(before: number) {
  const [row] = json(await t.app.inject({ method: 'GET', url: '/v1/usage?limit=1', headers: bearer(who.token) })).items;
  const after = await walletState(t, who.userId);
  expect(after.ledgerSum).toBe(after.balance);
  expect(row.creditsConsumed).toBe(before - after.balance);
  return row;
}

describe('the seeded prices', () => {
  it('list 1-hour cache writes at twice the input price for every Claude model', async () => {
    for (const slug of ['claude-opus-4-1', 'claude-sonnet-4-5', 'claude-sonnet-4', 'claude-haiku-4-5', 'claude-3-7-sonnet', 'claude-3-5-haiku']) {
      const pricing = (await t.services.catalog.getBySlug(`anthropic/${slug}`))!.row.pricing!;
      expect(pricing['1m_cache_write_1h_tokens']).toBe(2 * pricing['1m_input_tokens']!);
      expect(pricing['1m_cache_write_tokens']).toBe(1.25 * pricing['1m_input_tokens']!);
    }
  });
});

describe.each([false, true])('/v1/ai/text (stream: %s)', (stream) => {
  async function call() {
    const before = (await walletState(t, who.userId)).balance;
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/text',
      headers: bearer(who.token),
      payload: { model: HAIKU, messages: [{ role: 'user', content: question }], maxTokens: 400, stream },
    });
    expect(response.statusCode, response.body).toBe(200);
    const body = stream ? null : json(response);
    if (stream) expect(parseSse(response.body).at(-1)).toMatchObject({ type: 'finish' });
    return { row: await lastRow(before), body };
  }

  it('bills a 1-hour cache write at 2x the input price, not at the 5-minute price', async () => {
    decide = () => ok({ cacheWrite: 9_000, cacheWrite1h: 9_000 });
    const { row, body } = await call();
    const usage = { inputTokens: 10_000, cacheWriteTokens: 9_000, cacheWrite1hTokens: 9_000, outputTokens: 200 };
    expect(row.creditsConsumed).toBe(await formula(HAIKU, usage));
    // Haiku 4.5: 100 US cents per 1M input, 200 per 1M 1-hour writes, 500 per 1M output.
    // (1,000 x 100 + 9,000 x 200 + 200 x 500) / 1M US cents x 122 = 244 poisha -> ceil(135,555.56)
    expect(row.creditsConsumed).toBe(135_556);
    // At the 5-minute price (125) it would have been 1.325 US cents x 122 = 161.65 poisha -> 89,806.
    expect(await formula(HAIKU, { inputTokens: 10_000, cacheWriteTokens: 9_000, outputTokens: 200 })).toBe(89_806);
    expect(row.tokens).toEqual({ input: 10_000, cachedInput: 0, cacheWrite: 9_000, cacheWrite1h: 9_000, output: 200, reasoning: 0 });
    expect(row.metadata.tokens).toMatchObject({ cacheWrite: 9_000, cacheWrite1h: 9_000 });
    if (body)
      expect(body.usage).toEqual({ inputTokens: 10_000, outputTokens: 200, cacheWriteTokens: 9_000, cacheWrite1hTokens: 9_000, creditsConsumed: 135_556 });
  });

  it('bills a mixed write: the 5-minute part at 1.25x, the 1-hour part at 2x', async () => {
    decide = () => ok({ cacheWrite: 9_000, cacheWrite1h: 4_000 });
    const { row, body } = await call();
    // (1,000 x 100 + 5,000 x 125 + 4,000 x 200 + 200 x 500) / 1M US cents x 122 = 198.25 poisha -> ceil(110,138.89)
    expect(row.creditsConsumed).toBe(await formula(HAIKU, { inputTokens: 10_000, cacheWriteTokens: 9_000, cacheWrite1hTokens: 4_000, outputTokens: 200 }));
    expect(row.creditsConsumed).toBe(110_139);
    expect(row.tokens).toMatchObject({ cacheWrite: 9_000, cacheWrite1h: 4_000 });
    if (body) expect(body.usage).toMatchObject({ cacheWriteTokens: 9_000, cacheWrite1hTokens: 4_000, creditsConsumed: 110_139 });
  });
});

describe('/anthropic/v1: cache_creation by lifetime', () => {
  const ask: Anthropic.MessageCreateParamsNonStreaming = { model: HAIKU, max_tokens: 400, messages: [{ role: 'user', content: question }] };

  it('shows the 5-minute and 1-hour writes as Anthropic does, streamed and not', async () => {
    decide = () => ok({ cacheWrite: 9_000, cacheWrite1h: 4_000 });
    const charged = await formula(HAIKU, { inputTokens: 10_000, cacheWriteTokens: 9_000, cacheWrite1hTokens: 4_000, outputTokens: 200 });
    const expected = {
      input_tokens: 1_000,
      cache_creation_input_tokens: 9_000,
      cache_creation: { ephemeral_5m_input_tokens: 5_000, ephemeral_1h_input_tokens: 4_000 },
      output_tokens: 200,
      tokens_charged: charged,
    };
    const message = await anthropic.messages.create(ask);
    expect(message.usage).toEqual(expected);

    const stream = anthropic.messages.stream(ask);
    const deltas: unknown[] = [];
    stream.on('streamEvent', (event) => {
      if (event.type === 'message_delta') deltas.push(event.usage);
    });
    await stream.finalMessage();
    expect(deltas).toEqual([expected]);
  });

  it('passes ttl "1h" markers through, and bills what the provider wrote for an hour and for five minutes', async () => {
    decide = () => ({ kind: 'ok', text: 'Noted.' });
    // 1-hour entries come before 5-minute ones, as Anthropic requires when lifetimes are mixed.
    const system: Anthropic.TextBlockParam[] = [
      { type: 'text', text: 'You are a lighthouse historian. '.repeat(60), cache_control: { type: 'ephemeral', ttl: '1h' } },
    ];
    const content: Anthropic.TextBlockParam[] = [
      { type: 'text', text: 'Keeper logs: '.repeat(80), cache_control: { type: 'ephemeral' } },
      { type: 'text', text: question },
    ];
    const before = (await walletState(t, who.userId)).balance;
    const message = await anthropic.messages.create({ model: HAIKU, max_tokens: 400, system, messages: [{ role: 'user', content }] });
    const sent = upstream.calls().at(-1)!.body;
    expect(sent.system).toEqual(system);
    expect(sent.messages[0].content).toEqual(content);

    const usage = message.usage as Anthropic.Usage & { tokens_charged: number };
    const { ephemeral_5m_input_tokens: minutes, ephemeral_1h_input_tokens: hour } = usage.cache_creation!;
    expect(hour).toBeGreaterThan(0);
    expect(minutes).toBeGreaterThan(0);
    expect(minutes + hour).toBe(usage.cache_creation_input_tokens);
    const inputTokens = usage.input_tokens + usage.cache_creation_input_tokens!;
    expect(usage.tokens_charged).toBe(
      await formula(HAIKU, { inputTokens, cacheWriteTokens: minutes + hour, cacheWrite1hTokens: hour, outputTokens: usage.output_tokens }),
    );
    const row = await lastRow(before);
    expect(row.tokens).toMatchObject({ input: inputTokens, cacheWrite: minutes + hour, cacheWrite1h: hour });
  });
});

describe('/openai/v1: prompt_tokens_details', () => {
  it('shows the 1-hour part of the cache writes beside OpenRouter-style cache_write_tokens', async () => {
    decide = () => ok({ cacheWrite: 9_000, cacheWrite1h: 4_000 });
    const completion = await openai.chat.completions.create({ model: HAIKU, messages: [{ role: 'user', content: question }] });
    expect(completion.usage).toEqual({
      prompt_tokens: 10_000,
      completion_tokens: 200,
      total_tokens: 10_200,
      prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 9_000, cache_write_1h_tokens: 4_000 },
      tokens_charged: 110_139,
    });
  });

  it('carries a ttl "1h" cache_control from a chat message to Anthropic and bills the write as a 1-hour one', async () => {
    decide = () => ({ kind: 'ok', text: 'Noted.' });
    const instructions = 'You keep the lighthouse records. '.repeat(60);
    const request = {
      model: HAIKU,
      messages: [
        { role: 'system', content: [{ type: 'text', text: instructions, cache_control: { type: 'ephemeral', ttl: '1h' } }] },
        { role: 'user', content: question },
      ],
    } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
    const completion = await openai.chat.completions.create(request);
    expect(upstream.calls().at(-1)!.body.system).toEqual([{ type: 'text', text: instructions, cache_control: { type: 'ephemeral', ttl: '1h' } }]);
    const details = completion.usage!.prompt_tokens_details as { cache_write_tokens: number; cache_write_1h_tokens: number };
    expect(details.cache_write_tokens).toBeGreaterThan(0);
    expect(details.cache_write_1h_tokens).toBe(details.cache_write_tokens);
    const usage = {
      inputTokens: completion.usage!.prompt_tokens,
      cacheWriteTokens: details.cache_write_tokens,
      cacheWrite1hTokens: details.cache_write_tokens,
      outputTokens: completion.usage!.completion_tokens,
    };
    expect((completion.usage as { tokens_charged?: number }).tokens_charged).toBe(await formula(HAIKU, usage));
  });
});

describe('/openai/v1/responses: input_tokens_details', () => {
  it('shows the 1-hour part of the cache writes', async () => {
    decide = () => ok({ cacheWrite: 9_000, cacheWrite1h: 9_000 });
    const response = await openai.responses.create({ model: HAIKU, input: question });
    expect(response.usage!.input_tokens_details).toEqual({ cached_tokens: 0, cache_write_tokens: 9_000, cache_write_1h_tokens: 9_000 });
    expect((response.usage as { tokens_charged?: number }).tokens_charged).toBe(135_556);
  });
});

describe('the usage summary', () => {
  it('totals the 1-hour cache writes of the window as part of the cache writes', async () => {
    const signed = await signUp(t.app);
    await setPlan(t, signed.user.id, 'starter');
    await setBalance(t, signed.user.id, 50_000_000);
    for (const classes of [{ cacheWrite: 9_000, cacheWrite1h: 4_000 }, { cacheWrite: 2_000 }, { cacheWrite1h: 3_000 }]) {
      decide = () => ok(classes);
      const response = await t.app.inject({
        method: 'POST',
        url: '/v1/ai/text',
        headers: bearer(signed.accessToken),
        payload: { model: HAIKU, messages: [{ role: 'user', content: question }] },
      });
      expect(response.statusCode, response.body).toBe(200);
    }
    const summary = json(await t.app.inject({ method: 'GET', url: '/v1/usage/summary?window=day', headers: bearer(signed.accessToken) }));
    const text = summary.byOperation.find((o: { operation: string; status: string }) => o.operation === 'text.generate' && o.status === 'SUCCESS');
    expect(text._sum).toMatchObject({ cacheWriteTokens: 14_000, cacheWrite1hTokens: 7_000 });
  });
});
