import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { desc, eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { usageRecords } from '../../../db/schema/usage.js';
import { createTestApp, signUp, type TestApp } from '../../../../test/helpers/test-app.js';
import { createApiKey, parseSse, providerEnv, setBalance, setPlan, walletState } from '../../../../test/helpers/gateway.js';
import type { Decide, FakeUpstream } from '../../../../test/helpers/fake-upstreams.js';
import { startFakeProvider } from '../../../../test/helpers/fakes/openai-compatible.js';
import { expectUnchargedOpenAiRefusal } from '../../../../test/helpers/uncharged-refusal.js';

/**
 * The providers' profiles through the app, against fakes that refuse what each real API refuses: Mistral streamed on
 * both OpenAI surfaces and billed from the usage it sends unasked, its seed renamed; OpenAI's gpt-5 and xAI's grok-4
 * with what their reasoning models refuse turned into a 400 before any charge, and temperature left out and named.
 */

let mistral: FakeUpstream;
let openaiFake: FakeUpstream;
let xai: FakeUpstream;
let t: TestApp;
let userId: string;
let apiKey: string;
let origin: string;
let openai: OpenAI;
let decide: Decide = () => ({ kind: 'ok' });

beforeAll(async () => {
  const byTest: Decide = (request) => (request.method === 'GET' ? { kind: 'ok' } : decide(request));
  [mistral, openaiFake, xai] = await Promise.all([startFakeProvider('mistral', byTest), startFakeProvider('openai', byTest), startFakeProvider('xai', byTest)]);
  t = await createTestApp({
    env: {
      ...providerEnv('MISTRAL', mistral.baseUrl, ['mistral-key-0001']),
      ...providerEnv('OPENAI', openaiFake.baseUrl, ['sk-profiles-0001']),
      ...providerEnv('XAI', xai.baseUrl, ['xai-profiles-0001']),
    },
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { accessToken, user } = await signUp(t.app);
  userId = user.id;
  await setPlan(t, userId, 'starter');
  await setBalance(t, userId, 5_000_000);
  apiKey = (await createApiKey(t, accessToken, ['ai:text'])).key;
  origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  openai = new OpenAI({ apiKey, baseURL: `${origin}/openai/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await t?.close();
  await Promise.all([mistral, openaiFake, xai].map((fake) => fake?.close()));
});

const MISTRAL = 'mistral/mistral-small-latest';
const question = [{ role: 'user' as const, content: 'Why do lighthouses have lenses?' }];
const lastBody = (fake: FakeUpstream) => fake.calls().at(-1)!.body as Record<string, unknown>;
const lastRecord = async () =>
  (await t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId)).orderBy(desc(usageRecords.createdAt)).limit(1))[0]!;
const text = (body: Record<string, unknown>) =>
  fetch(`${origin}/v1/ai/text`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('Mistral', () => {
  it('streams /openai/v1/chat/completions without stream_options, billed from the usage it sends unasked', async () => {
    decide = () => ({ kind: 'ok', text: 'They focus the light into a beam.', usage: { inputTokens: 21, outputTokens: 6 } });
    const before = await walletState(t, userId);
    const { data: stream, response } = await openai.chat.completions
      .create({ model: MISTRAL, messages: question, stream: true, stream_options: { include_usage: true }, seed: 7, user: 'user-42', top_p: 0.9 })
      .withResponse();
    // Mistral has no `user`: it only tags the call, so it is left out and named rather than refused.
    expect(response.headers.get('x-storefront-ignored')).toBe('user');
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('They focus the light into a beam.');
    expect(chunks.at(-1)!.usage).toMatchObject({ prompt_tokens: 21, completion_tokens: 6 });

    const sent = lastBody(mistral);
    expect(sent).toMatchObject({ model: 'mistral-small-latest', stream: true, random_seed: 7, top_p: 0.9 });
    for (const field of ['stream_options', 'seed', 'user']) expect(sent).not.toHaveProperty(field);
    const record = await lastRecord();
    expect(record).toMatchObject({ status: 'SUCCESS', inputUnits: 21, outputUnits: 6 });
    expect(record.metadata).toMatchObject({ usageSource: 'provider' });
    const after = await walletState(t, userId);
    expect(after.balance).toBe(before.balance - record.tokensConsumed);
    expect(after.ledgerSum).toBe(after.balance);
  });

  it('streams /openai/v1/responses, billed from the same usage', async () => {
    decide = () => ({ kind: 'ok', text: 'A Fresnel lens bends the light.', usage: { inputTokens: 19, outputTokens: 7 } });
    const res = await fetch(`${origin}/openai/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MISTRAL, input: 'Why do lighthouses have lenses?', stream: true }),
    });
    expect(res.status).toBe(200);
    const events = parseSse(await res.text());
    expect(events.at(-1)).toMatchObject({ type: 'response.completed', response: { status: 'completed', usage: { input_tokens: 19, output_tokens: 7 } } });
    expect(
      events
        .filter((e) => e.type === 'response.output_text.delta')
        .map((e) => e.delta)
        .join(''),
    ).toBe('A Fresnel lens bends the light.');
    expect(lastBody(mistral)).not.toHaveProperty('stream_options');
    const record = await lastRecord();
    expect(record).toMatchObject({ status: 'SUCCESS', inputUnits: 19, outputUnits: 7 });
    expect(record.metadata).toMatchObject({ usageSource: 'provider' });
  });

  it('leaves top_k and user out and names them', async () => {
    decide = () => ({ kind: 'ok', text: 'Focus.' });
    const res = await text({ model: MISTRAL, messages: question, topK: 20, user: 'user-42' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-storefront-ignored')).toBe('topK, user');
    expect(lastBody(mistral)).not.toHaveProperty('top_k');
    expect(lastBody(mistral)).not.toHaveProperty('user');
  });
});

describe('reasoning models', () => {
  it('gpt-5: temperature left out and named, max_completion_tokens sent', async () => {
    decide = () => ({ kind: 'ok', text: 'To focus light.' });
    const res = await text({ model: 'openai/gpt-5', messages: question, temperature: 0.3, topP: 0.5, maxTokens: 200 });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-storefront-ignored')).toBe('temperature, topP');
    const sent = lastBody(openaiFake);
    expect(sent).toMatchObject({ model: 'gpt-5', max_completion_tokens: 200 });
    for (const field of ['temperature', 'top_p', 'max_tokens']) expect(sent).not.toHaveProperty(field);
  });

  it('gpt-5: stop is a 400 naming it before any charge; gpt-4o takes it', async () => {
    decide = () => ({ kind: 'ok', text: 'To focus light.' });
    const err = await expectUnchargedOpenAiRefusal(
      t,
      userId,
      () => openaiFake.calls().length,
      () => openai.chat.completions.create({ model: 'openai/gpt-5', messages: question, stop: ['END'] }),
      'stop',
    );
    expect(err.message).toContain('stop');
    await openai.chat.completions.create({ model: 'openai/gpt-4o', messages: question, stop: ['END'] });
    expect(lastBody(openaiFake)).toMatchObject({ model: 'gpt-4o', stop: ['END'] });
  });

  it('grok-4: stop and the penalties are a 400 naming them before any charge', async () => {
    decide = () => ({ kind: 'ok', text: 'To focus light.' });
    await expectUnchargedOpenAiRefusal(
      t,
      userId,
      () => xai.calls().length,
      () => openai.chat.completions.create({ model: 'xai/grok-4', messages: question, presence_penalty: 0.5 }),
      'presencePenalty',
    );
    await expectUnchargedOpenAiRefusal(
      t,
      userId,
      () => xai.calls().length,
      () => openai.chat.completions.create({ model: 'xai/grok-4', messages: question, stop: 'END' }),
      'stop',
    );
    const completion = await openai.chat.completions.create({ model: 'xai/grok-4', messages: question, seed: 3 });
    expect(completion.choices[0]!.message.content).toBe('To focus light.');
    expect(lastBody(xai)).toMatchObject({ model: 'grok-4-0709', seed: 3 });
  });
});
