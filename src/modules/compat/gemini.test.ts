import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { ApiError, GoogleGenAI, type GenerateContentResponse } from '@google/genai';
import { usageRecords } from '../../db/schema/usage.js';
import { createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createApiKey, setBalance, setPlan, walletState } from '../../../test/helpers/gateway.js';

let t: TestApp;
let host: string;
beforeAll(async () => {
  t = await createTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  host = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => t?.close());

async function keyHolder(scopes: string[] = ['ai:text'], controls: Record<string, unknown> = {}) {
  const { accessToken, user } = await signUp(t.app);
  await setPlan(t, user.id, 'starter');
  const { key } = await createApiKey(t, accessToken, scopes, controls);
  return { userId: user.id as string, key, ai: new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: `${host}/gemini` } }) };
}
const recordsOf = (userId: string) => t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId));
const charged = (response: GenerateContentResponse) => (response.usageMetadata as { tokensCharged?: number } | undefined)?.tokensCharged;
const ask = { model: 'local/text', contents: 'Explain how lighthouses work', config: { systemInstruction: 'Be brief.', maxOutputTokens: 256 } };

describe('/gemini/v1beta with the official @google/genai SDK', () => {
  it('answers generateContent (key as x-goog-api-key) metered once like /v1/ai/text', async () => {
    const { ai, userId } = await keyHolder();
    const before = await walletState(t, userId);
    const response = await ai.models.generateContent(ask);
    expect(response.text).toContain('lighthouses');
    expect(response.candidates?.[0]).toMatchObject({ finishReason: 'STOP', content: { role: 'model' } });
    expect(response.modelVersion).toBe('local/text');
    const usage = response.usageMetadata!;
    expect(usage.totalTokenCount).toBe(usage.promptTokenCount! + usage.candidatesTokenCount!);
    const [record, ...more] = await recordsOf(userId);
    expect(more).toEqual([]);
    expect(record).toMatchObject({ requestId: response.responseId, operation: 'text.generate', status: 'SUCCESS', outputUnits: usage.candidatesTokenCount });
    expect(charged(response)).toBe(record!.tokensConsumed);
    const after = await walletState(t, userId);
    expect(after.balance).toBe(before.balance - record!.tokensConsumed);
    expect(after.ledgerSum).toBe(after.balance);
  });

  it('streams GenerateContentResponse chunks; the last carries the finish reason and the billed usage', async () => {
    const { ai, userId } = await keyHolder();
    const before = await walletState(t, userId);
    const chunks: GenerateContentResponse[] = [];
    for await (const chunk of await ai.models.generateContentStream(ask)) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.map((chunk) => chunk.text ?? '').join('')).toContain('lighthouses');
    const last = chunks.at(-1)!;
    expect(last.candidates?.[0]?.finishReason).toBe('STOP');
    const [record, ...more] = await recordsOf(userId);
    expect(more).toEqual([]);
    expect(record).toMatchObject({ requestId: last.responseId, status: 'SUCCESS', outputUnits: last.usageMetadata?.candidatesTokenCount });
    const after = await walletState(t, userId);
    expect(after.balance).toBe(before.balance - record!.tokensConsumed);
    expect(after.ledgerSum).toBe(after.balance);
  });

  it("counts tokens without charging, lists the caller's models and reads one", async () => {
    const { ai, userId } = await keyHolder();
    const before = await walletState(t, userId);
    const counted = await ai.models.countTokens({ model: 'local/text', contents: 'Explain how lighthouses work' });
    expect(counted.totalTokens).toBeGreaterThan(2);
    expect(await walletState(t, userId)).toEqual(before);
    expect(await recordsOf(userId)).toEqual([]);

    const names: string[] = [];
    for await (const model of await ai.models.list()) names.push(model.name!);
    expect(names).toContain('models/local/text');
    const model = await ai.models.get({ model: 'local/text' });
    expect(model).toMatchObject({ name: 'models/local/text', displayName: expect.any(String) });
  });

  it('replays a call repeated with its Idempotency-Key, charged once', async () => {
    const { ai, userId } = await keyHolder();
    const httpOptions = { headers: { 'Idempotency-Key': `gemini-${userId}` } };
    const first = await ai.models.generateContent({ ...ask, config: { ...ask.config, httpOptions } });
    const balance = (await walletState(t, userId)).balance;
    const again = await ai.models.generateContent({ ...ask, config: { ...ask.config, httpOptions } });
    expect(again.text).toBe(first.text);
    expect(again.responseId).toBe(first.responseId);
    expect((await walletState(t, userId)).balance).toBe(balance);
    expect(await recordsOf(userId)).toHaveLength(1);
  });

  it("applies the key's allowed models to the list and to calls", async () => {
    const { ai } = await keyHolder(['ai:text'], { allowedModels: ['local/text'] });
    const names: string[] = [];
    for await (const model of await ai.models.list()) names.push(model.name!);
    expect(names).toEqual(['models/local/text']);
    const other = await ai.models.generateContent({ ...ask, model: 'local/vision' }).catch((err: unknown) => err);
    expect((other as ApiError).status).toBe(403);
  });

  it('takes the key as ?key= too, names ignored fields in x-storefront-ignored, and streams as SSE or one JSON array', async () => {
    const { key } = await keyHolder();
    const body = { contents: [{ role: 'user', parts: [{ text: 'Hello' }] }], generationConfig: { thinkingConfig: { thinkingBudget: 0 } }, safetySettings: [] };
    const response = await fetch(`${host}/gemini/v1beta/models/local/text:generateContent?key=${key}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-storefront-ignored')).toBe('generationConfig.thinkingConfig, safetySettings');
    const encoded = await fetch(`${host}/gemini/v1beta/models/local%2Ftext:generateContent?key=${key}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(encoded.status).toBe(200);
    const streamed = await fetch(`${host}/gemini/v1beta/models/local/text:streamGenerateContent?alt=sse&key=${key}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(streamed.headers.get('x-storefront-ignored')).toBe('generationConfig.thinkingConfig, safetySettings');
    expect(await streamed.text()).toMatch(/^data: \{"candidates"/);
    const array = await fetch(`${host}/gemini/v1beta/models/local/text:streamGenerateContent?key=${key}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(array.headers.get('content-type')).toMatch(/^application\/json/);
    expect(array.headers.get('x-storefront-ignored')).toBe('generationConfig.thinkingConfig, safetySettings');
    expect(JSON.parse(await array.text())).toEqual(expect.arrayContaining([expect.objectContaining({ candidates: expect.any(Array) })]));
    const proto = await fetch(`${host}/gemini/v1beta/models/local/text:streamGenerateContent?alt=proto&key=${key}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(proto.status).toBe(400);
    expect(await proto.json()).toMatchObject({ error: { code: 400, status: 'INVALID_ARGUMENT', message: expect.stringContaining('alt=sse') } });
  });

  it("gives Google's errors with the gateway's statuses", async () => {
    const { ai, userId, key } = await keyHolder();
    const unknown = await ai.models.generateContent({ ...ask, model: 'nobody/nothing' }).catch((err: unknown) => err);
    expect(unknown).toBeInstanceOf(ApiError);
    expect((unknown as ApiError).status).toBe(404);
    expect(JSON.parse((unknown as ApiError).message)).toMatchObject({ error: { code: 404, status: 'NOT_FOUND' } });

    await setBalance(t, userId, 0);
    const broke = await ai.models.generateContent(ask).catch((err: unknown) => err);
    expect((broke as ApiError).status).toBe(429);
    expect(JSON.parse((broke as ApiError).message)).toMatchObject({ error: { code: 429, status: 'RESOURCE_EXHAUSTED' } });

    const stranger = await new GoogleGenAI({ apiKey: 'sk_sf_nope', httpOptions: { baseUrl: `${host}/gemini` } }).models
      .generateContent(ask)
      .catch((err: unknown) => err);
    expect((stranger as ApiError).status).toBe(401);

    const two = await t.app.inject({
      method: 'POST',
      url: '/gemini/v1beta/models/local/text:generateContent',
      headers: { 'x-goog-api-key': key },
      payload: { contents: [{ parts: [{ text: 'hi' }] }], generationConfig: { candidateCount: 2 } },
    });
    expect(two.statusCode).toBe(400);
    expect(json(two)).toMatchObject({ error: { code: 400, status: 'INVALID_ARGUMENT', message: expect.stringContaining('generationConfig.candidateCount') } });
  });
});
