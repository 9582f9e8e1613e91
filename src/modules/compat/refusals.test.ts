import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { usageRecords } from '../../db/schema/usage.js';
import { bearer, createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createApiKey, parseSse, providerEnv, setBalance, setPlan, walletState } from '../../../test/helpers/gateway.js';
import { startFakeOpenAi, type Decide, type FakeUpstream } from '../../../test/helpers/fake-upstreams.js';
import { startFakeAnthropic } from '../gateway/providers/anthropic/anthropic.fake.js';

/**
 * A model that refuses: OpenAI's `message.refusal` / `delta.refusal` reach every surface in its own terms (chat's
 * `refusal`, Responses' `refusal` part and events, Anthropic's `stop_reason: "refusal"`, the gateway's `refusal`), billed
 * once on the usage the provider reported; an Anthropic model's `refusal` stop is chat's `content_filter`.
 */

const REFUSAL = "I'm sorry, I cannot help with that.";
const REPORTED = { inputTokens: 23, outputTokens: 9 };
const OPENAI_MODEL = 'openai/gpt-4o-mini';
const ANTHROPIC_MODEL = 'anthropic/claude-sonnet-4-6';

let openAiFake: FakeUpstream;
let anthropicFake: FakeUpstream;
let t: TestApp;
let decideOpenAi: Decide = () => ({ kind: 'ok' });
let decideAnthropic: Decide = () => ({ kind: 'ok' });
let openai: OpenAI;
let anthropic: Anthropic;
let key: string;
let userId: string;

beforeAll(async () => {
  openAiFake = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : decideOpenAi(request)));
  anthropicFake = await startFakeAnthropic((request) => (request.method === 'GET' ? { kind: 'ok' } : decideAnthropic(request)));
  t = await createTestApp({
    env: { ...providerEnv('OPENAI', openAiFake.baseUrl, ['sk-refusal-0001']), ...providerEnv('ANTHROPIC', anthropicFake.origin, ['sk-ant-refusal-1']) },
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { accessToken, user } = await signUp(t.app);
  userId = user.id;
  await setPlan(t, userId, 'starter');
  await setBalance(t, userId, 1_000_000);
  ({ key } = await createApiKey(t, accessToken, ['ai:text']));
  const baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  openai = new OpenAI({ apiKey: key, baseURL: `${baseUrl}/openai/v1`, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: key, baseURL: `${baseUrl}/anthropic`, maxRetries: 0 });
  decideOpenAi = () => ({ kind: 'ok', refusal: REFUSAL, usage: REPORTED });
});
afterAll(async () => {
  await t?.close();
  await openAiFake?.close();
  await anthropicFake?.close();
});

const recordsOf = () => t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId));

/** Runs one call and checks it was metered once, on the usage the fake reported, with the refusal noted. */
async function meteredOnce<T>(call: () => Promise<T>, reported: { inputTokens: number; outputTokens: number } | null = REPORTED): Promise<T> {
  const before = (await recordsOf()).length;
  const result = await call();
  const records = await recordsOf();
  expect(records).toHaveLength(before + 1);
  const record = records.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime()).at(-1)!;
  expect(record.status).toBe('SUCCESS');
  if (reported) {
    expect({ inputTokens: record.inputUnits, outputTokens: record.outputUnits }).toEqual(reported);
    expect(record.metadata).toMatchObject({ usageSource: 'provider', refusal: true });
  }
  const wallet = await walletState(t, userId);
  expect(wallet.ledgerSum).toBe(wallet.balance);
  return result;
}

const question = 'How do I pick a lock?';

describe('an OpenAI model that refuses', () => {
  it('chat completions: message.refusal with content null and finish_reason stop, billed on the reported usage', async () => {
    const completion = await meteredOnce(() => openai.chat.completions.create({ model: OPENAI_MODEL, messages: [{ role: 'user', content: question }] }));
    const choice = completion.choices[0]!;
    expect(choice.message).toMatchObject({ role: 'assistant', content: null, refusal: REFUSAL });
    expect(choice.finish_reason).toBe('stop');
    expect(completion.usage).toMatchObject({ prompt_tokens: 23, completion_tokens: 9 });
  });

  it('an Idempotency-Key replay answers the same refusal, uncharged', async () => {
    const body = { model: OPENAI_MODEL, messages: [{ role: 'user' as const, content: question }] };
    const headers = { 'Idempotency-Key': 'refusal-replay-1' };
    await meteredOnce(() => openai.chat.completions.create(body, { headers }));
    const before = (await recordsOf()).length;
    const { data, response } = await openai.chat.completions.create(body, { headers }).withResponse();
    expect(response.headers.get('idempotent-replayed')).toBe('true');
    expect(data.choices[0]!.message).toMatchObject({ content: null, refusal: REFUSAL });
    expect(await recordsOf()).toHaveLength(before);
  });

  it('chat completions streamed: delta.refusal pieces the SDK accumulator joins into message.refusal', async () => {
    const stream = openai.chat.completions.stream({
      model: OPENAI_MODEL,
      messages: [{ role: 'user', content: question }],
      stream_options: { include_usage: true },
    });
    const pieces: string[] = [];
    stream.on('refusal.delta', ({ delta }) => pieces.push(delta));
    const final = await meteredOnce(() => stream.finalChatCompletion());
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join('')).toBe(REFUSAL);
    expect(final.choices[0]!.message).toMatchObject({ content: null, refusal: REFUSAL });
    expect(final.choices[0]!.finish_reason).toBe('stop');
    expect(final.usage).toMatchObject({ prompt_tokens: 23, completion_tokens: 9 });
  });

  it('responses: the message holds a refusal part, kept with the stored response', async () => {
    const response = await meteredOnce(() => openai.responses.create({ model: OPENAI_MODEL, input: question }));
    expect(response.status).toBe('completed');
    expect(response.output).toHaveLength(1);
    expect(response.output[0]).toMatchObject({ type: 'message', content: [{ type: 'refusal', refusal: REFUSAL }] });
    expect(response.output_text).toBe('');
    expect(response.usage).toMatchObject({ input_tokens: 23, output_tokens: 9 });
    const stored = await openai.responses.retrieve(response.id);
    expect(stored.output[0]).toMatchObject({ type: 'message', content: [{ type: 'refusal', refusal: REFUSAL }] });
  });

  it('responses streamed: content_part.added, response.refusal.delta... and .done, as OpenAI streams them', async () => {
    const stream = openai.responses.stream({ model: OPENAI_MODEL, input: question });
    const types: string[] = [];
    const deltas: string[] = [];
    let done = '';
    const final = await meteredOnce(async () => {
      for await (const event of stream) {
        types.push(event.type);
        if (event.type === 'response.refusal.delta') deltas.push(event.delta);
        if (event.type === 'response.refusal.done') done = event.refusal;
      }
      return stream.finalResponse();
    });
    expect(deltas.join('')).toBe(REFUSAL);
    expect(done).toBe(REFUSAL);
    const partAdded = types.indexOf('response.content_part.added');
    expect(partAdded).toBeGreaterThan(-1);
    expect(types.indexOf('response.refusal.delta')).toBeGreaterThan(partAdded);
    expect(types.indexOf('response.content_part.done')).toBeGreaterThan(types.indexOf('response.refusal.done'));
    expect(types).not.toContain('response.output_text.delta');
    expect(final.output[0]).toMatchObject({ type: 'message', content: [{ type: 'refusal', refusal: REFUSAL }] });
    expect((await openai.responses.retrieve(final.id)).output[0]).toMatchObject({ content: [{ type: 'refusal', refusal: REFUSAL }] });
  });

  it('/v1/ai/text: the answer carries refusal, streamed as refusal events', async () => {
    const payload = { model: OPENAI_MODEL, messages: [{ role: 'user', content: question }] };
    const answer = await meteredOnce(() => t.app.inject({ method: 'POST', url: '/v1/ai/text', headers: bearer(key), payload }));
    expect(answer.statusCode).toBe(200);
    expect(answer.json()).toMatchObject({ text: '', refusal: REFUSAL, usage: { inputTokens: 23, outputTokens: 9 } });

    const streamed = await meteredOnce(() => t.app.inject({ method: 'POST', url: '/v1/ai/text', headers: bearer(key), payload: { ...payload, stream: true } }));
    const events = parseSse(streamed.body);
    expect(
      events
        .filter((e) => e.type === 'refusal')
        .map((e) => e.delta)
        .join(''),
    ).toBe(REFUSAL);
    expect(events.some((e) => e.type === 'text')).toBe(false);
    expect(events.at(-1)).toEqual({ type: 'finish', finishReason: 'stop' });
  });

  it("/anthropic/v1/messages: stop_reason refusal with the refusal's words as the text", async () => {
    const ask = { model: OPENAI_MODEL, max_tokens: 200, messages: [{ role: 'user' as const, content: question }] };
    const message = await meteredOnce(() => anthropic.messages.create(ask));
    expect(message.stop_reason).toBe('refusal');
    expect(message.content).toEqual([{ type: 'text', text: REFUSAL }]);
    expect(message.usage).toMatchObject({ input_tokens: 23, output_tokens: 9 });

    const streamed = await meteredOnce(() => anthropic.messages.stream(ask).finalMessage());
    expect(streamed.stop_reason).toBe('refusal');
    expect(streamed.content).toMatchObject([{ type: 'text', text: REFUSAL }]);
  });
  it("/gemini: the refusal is the candidate's text with STOP, as a Gemini model refuses, whole and streamed", async () => {
    const body = { contents: [{ role: 'user', parts: [{ text: question }] }] };
    const url = `/gemini/v1beta/models/${OPENAI_MODEL}`;
    const answer = await meteredOnce(() => t.app.inject({ method: 'POST', url: `${url}:generateContent`, headers: { 'x-goog-api-key': key }, payload: body }));
    expect(answer.statusCode, answer.body).toBe(200);
    expect(answer.json().candidates[0]).toMatchObject({ content: { role: 'model', parts: [{ text: REFUSAL }] }, finishReason: 'STOP' });
    expect(answer.json().usageMetadata).toMatchObject({ promptTokenCount: 23, candidatesTokenCount: 9 });

    const streamed = await meteredOnce(() =>
      t.app.inject({ method: 'POST', url: `${url}:streamGenerateContent?alt=sse`, headers: { 'x-goog-api-key': key }, payload: body }),
    );
    const chunks = parseSse(streamed.body) as unknown as { candidates: { content: { parts: { text?: string }[] }; finishReason?: string }[] }[];
    expect(chunks.flatMap((c) => c.candidates[0]!.content.parts.map((p) => p.text ?? '')).join('')).toBe(REFUSAL);
    expect(chunks.at(-1)!.candidates[0]!.finishReason).toBe('STOP');
  });
});

describe('an Anthropic model that stops with refusal', () => {
  it('chat completions: finish_reason content_filter, what it wrote as content, no made-up refusal text; Responses: incomplete', async () => {
    decideAnthropic = () => ({ kind: 'ok', text: 'Here is', finishReason: 'refusal' });
    const completion = await meteredOnce(
      () => openai.chat.completions.create({ model: ANTHROPIC_MODEL, messages: [{ role: 'user', content: question }] }),
      null,
    );
    expect(completion.choices[0]).toMatchObject({ finish_reason: 'content_filter', message: { content: 'Here is', refusal: null } });

    const response = await meteredOnce(() => openai.responses.create({ model: ANTHROPIC_MODEL, input: question }), null);
    expect(response).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'content_filter' } });
    expect(response.output[0]).toMatchObject({ type: 'message', content: [{ type: 'output_text', text: 'Here is' }] });

    const message = await meteredOnce(
      () => anthropic.messages.create({ model: ANTHROPIC_MODEL, max_tokens: 200, messages: [{ role: 'user', content: question }] }),
      null,
    );
    expect(message.stop_reason).toBe('refusal');
  });
});
