import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { usageRecords } from '../../db/schema/usage.js';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createApiKey, providerEnv, setPlan, walletState } from '../../../test/helpers/gateway.js';
import { startFakeOpenAi, type Decide, type FakeUpstream } from '../../../test/helpers/fake-upstreams.js';
import { startFakeProvider } from '../../../test/helpers/fakes/openai-compatible.js';

/** Reasoning controls on the OpenAI-compatible surfaces, as an OpenAI-compatible provider receives them. */

let fake: FakeUpstream;
let xai: FakeUpstream;
let t: TestApp;
let decide: Decide = () => ({ kind: 'ok' });
let openai: OpenAI;
let apiKey: string;
let baseUrl: string;
let userId: string;

beforeAll(async () => {
  fake = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : decide(request)));
  xai = await startFakeProvider('xai', (request) => (request.method === 'GET' ? { kind: 'ok' } : decide(request)));
  t = await createTestApp({
    env: { ...providerEnv('OPENAI', fake.baseUrl, ['sk-reasoning-0001']), ...providerEnv('XAI', xai.baseUrl, ['xai-reasoning-0001']) },
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { accessToken, user } = await signUp(t.app);
  userId = user.id;
  await setPlan(t, userId, 'starter');
  apiKey = (await createApiKey(t, accessToken, ['ai:text'])).key;
  baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  openai = new OpenAI({ apiKey, baseURL: `${baseUrl}/openai/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
  await xai?.close();
});

const sent = (upstream = fake) => upstream.calls().at(-1)!.body as Record<string, unknown>;
const recordsOf = () => t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId));
const question = [{ role: 'user' as const, content: 'Is 91 prime?' }];
const thinkingUsage = { kind: 'ok' as const, text: 'No: 7 x 13.', usage: { inputTokens: 20, outputTokens: 90 }, tokenClasses: { reasoning: 80 } };

describe('reasoning_effort on /openai/v1/chat/completions', () => {
  it('reaches an OpenAI reasoning model as reasoning_effort, its reasoning tokens billed once', async () => {
    decide = () => thinkingUsage;
    const before = (await recordsOf()).length;
    const wallet = await walletState(t, userId);
    const { data: completion, response } = await openai.chat.completions
      .create({ model: 'openai/o4-mini', messages: question, reasoning_effort: 'low' })
      .withResponse();
    expect(sent().reasoning_effort).toBe('low');
    expect(response.headers.get('x-storefront-ignored')).toBeNull();
    expect(completion.choices[0]!.message.content).toBe('No: 7 x 13.');
    expect(completion.usage).toMatchObject({ completion_tokens: 90, completion_tokens_details: { reasoning_tokens: 80 } });
    const records = await recordsOf();
    expect(records).toHaveLength(before + 1);
    expect((await walletState(t, userId)).balance).toBeLessThan(wallet.balance);
  });

  it('carries it on a streamed call too', async () => {
    decide = () => thinkingUsage;
    const stream = await openai.chat.completions.create({
      model: 'openai/o4-mini',
      messages: question,
      reasoning_effort: 'high',
      stream: true,
      stream_options: { include_usage: true },
    });
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) usage = chunk.usage ?? usage;
    expect(sent().reasoning_effort).toBe('high');
    expect(usage?.completion_tokens_details?.reasoning_tokens).toBe(80);
  });

  it('leaves it out for a model without reasoning and says so in a header', async () => {
    decide = () => ({ kind: 'ok', text: 'Hello.' });
    const { response } = await openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: question, reasoning_effort: 'medium' }).withResponse();
    expect(response.headers.get('x-storefront-ignored')).toBe('reasoning_effort');
    expect(sent()).not.toHaveProperty('reasoning_effort');

    const streamed = await openai.chat.completions
      .create({ model: 'openai/gpt-4o-mini', messages: question, reasoning_effort: 'medium', stream: true })
      .withResponse();
    for await (const chunk of streamed.data) void chunk;
    expect(streamed.response.headers.get('x-storefront-ignored')).toBe('reasoning_effort');
    expect(sent()).not.toHaveProperty('reasoning_effort');
  });

  it("rounds an effort up to the levels a provider takes (xAI's grok-3-mini: low and high)", async () => {
    decide = () => ({ kind: 'ok', text: 'No.' });
    await openai.chat.completions.create({ model: 'xai/grok-3-mini', messages: question, reasoning_effort: 'medium' });
    expect(sent(xai).reasoning_effort).toBe('high');
    await openai.chat.completions.create({ model: 'xai/grok-3-mini', messages: question, reasoning_effort: 'minimal' });
    expect(sent(xai).reasoning_effort).toBe('low');
  });
});

describe('reasoning on /openai/v1/responses and POST /v1/ai/text', () => {
  it('sends Responses reasoning.effort as reasoning_effort', async () => {
    decide = () => thinkingUsage;
    const response = await openai.responses.create({
      model: 'openai/o4-mini',
      input: 'Is 91 prime?',
      reasoning: { effort: 'medium', summary: 'auto' },
      store: false,
    });
    expect(sent().reasoning_effort).toBe('medium');
    expect(response.usage?.output_tokens_details.reasoning_tokens).toBe(80);
  });

  it('maps a /v1/ai/text thinking budget to the nearest effort at or above it', async () => {
    decide = () => ({ kind: 'ok', text: 'No.' });
    const answer = await fetch(`${baseUrl}/v1/ai/text`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/o4-mini', messages: question, reasoning: { budgetTokens: 3000 } }),
    });
    expect(answer.status).toBe(200);
    expect(sent().reasoning_effort).toBe('medium');

    const ignored = await fetch(`${baseUrl}/v1/ai/text`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: question, reasoning: { effort: 'high' } }),
    });
    expect(ignored.headers.get('x-storefront-ignored')).toBe('reasoning');
    expect(sent()).not.toHaveProperty('reasoning_effort');
  });
});
