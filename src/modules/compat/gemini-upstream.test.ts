import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { ApiError, GoogleGenAI } from '@google/genai';
import { usageRecords } from '../../db/schema/usage.js';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createApiKey, providerEnv, setPlan, walletState } from '../../../test/helpers/gateway.js';
import { startFakeOpenAi, type Decide, type FakeUpstream } from '../../../test/helpers/fake-upstreams.js';

/** An OpenAI-backed model (its id holds a slash) behind the Gemini surface. */

let fake: FakeUpstream;
let t: TestApp;
let decide: Decide = () => ({ kind: 'ok' });
let ai: GoogleGenAI;
let userId: string;
let host: string;
let apiKey: string;

beforeAll(async () => {
  fake = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : decide(request)));
  t = await createTestApp({ env: providerEnv('OPENAI', fake.baseUrl, ['sk-gemini-0001']) });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { accessToken, user } = await signUp(t.app);
  userId = user.id;
  await setPlan(t, userId, 'starter');
  apiKey = (await createApiKey(t, accessToken, ['ai:text'])).key;
  host = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  ai = new GoogleGenAI({ apiKey, httpOptions: { baseUrl: `${host}/gemini` } });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const recordsOf = () => t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId));

describe('/gemini/v1beta over an OpenAI upstream', () => {
  it('answers models/openai/gpt-4o-mini with the upstream text and parameters, metered once', async () => {
    decide = () => ({ kind: 'ok', text: 'Lighthouses guide ships.' });
    const before = await walletState(t, userId);
    const seen = fake.requests.length;
    const response = await ai.models.generateContent({
      model: 'openai/gpt-4o-mini',
      contents: 'Explain lighthouses',
      config: { systemInstruction: 'Be brief.', temperature: 0.3, maxOutputTokens: 100, stopSequences: ['END'], seed: 7 },
    });
    expect(response.text).toBe('Lighthouses guide ships.');
    expect(response.modelVersion).toBe('openai/gpt-4o-mini');
    const upstream = fake.requests.slice(seen).find((request) => request.method === 'POST')!;
    expect(upstream.body).toMatchObject({
      temperature: 0.3,
      stop: ['END'],
      seed: 7,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Explain lighthouses' },
      ],
    });
    const records = await recordsOf();
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ requestId: response.responseId, status: 'SUCCESS' });
    const after = await walletState(t, userId);
    expect(after.balance).toBe(before.balance - records[0]!.tokensConsumed);
  });

  it("leaves out topK, which the model's provider has no parameter for, and names it in x-storefront-ignored", async () => {
    decide = () => ({ kind: 'ok', text: 'Sampled.' });
    const before = await walletState(t, userId);
    const body = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generationConfig: { topK: 64, topP: 0.95 } };
    const answer = await fetch(`${host}/gemini/v1beta/models/openai/gpt-4o-mini:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': apiKey },
      body: JSON.stringify(body),
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-storefront-ignored')).toBe('topK');
    expect(fake.calls().at(-1)!.body).toMatchObject({ top_p: 0.95 });
    expect(fake.calls().at(-1)!.body).not.toHaveProperty('top_k');
    const usage = ((await answer.json()) as { usageMetadata: { promptTokenCount: number; candidatesTokenCount: number } }).usageMetadata;
    expect(usage.candidatesTokenCount).toBeGreaterThan(0);
    const after = await walletState(t, userId);
    expect(before.balance - after.balance).toBe((await recordsOf()).at(-1)!.tokensConsumed);
  });

  it('streams from the upstream', async () => {
    decide = () => ({ kind: 'ok', text: 'one two three four five' });
    let text = '';
    for await (const chunk of await ai.models.generateContentStream({ model: 'openai/gpt-4o-mini', contents: 'Count' })) text += chunk.text ?? '';
    expect(text).toBe('one two three four five');
  });

  it('a stream that breaks midway ends with an error chunk the SDK raises; the delivered text is billed once', async () => {
    decide = () => ({ kind: 'midway', afterChunks: 3, how: 'disconnect' });
    const before = (await recordsOf()).length;
    const received: string[] = [];
    const failure = await (async () => {
      for await (const chunk of await ai.models.generateContentStream({ model: 'openai/gpt-4o-mini', contents: 'one two three four five six seven eight' }))
        received.push(chunk.text ?? '');
    })().catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ApiError);
    expect(received.join('')).not.toBe('');
    const records = await recordsOf();
    expect(records).toHaveLength(before + 1);
    expect(records.at(-1)!.status).toBe('PARTIAL');
    const state = await walletState(t, userId);
    expect(state.ledgerSum).toBe(state.balance);
  });
});
