import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { ApiError, FunctionCallingConfigMode, GoogleGenAI, Type, type Content, type FunctionDeclaration } from '@google/genai';
import { usageRecords } from '../../db/schema/usage.js';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createApiKey, setPlan, walletState } from '../../../test/helpers/gateway.js';
import { solidPng } from '../../../test/helpers/fake-media-upstreams.js';

/** Function calling, JSON answers and images through `@google/genai` against the built-in models. */

let t: TestApp;
let baseUrl: string;
beforeAll(async () => {
  t = await createTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/gemini`;
});
afterAll(async () => t?.close());

async function keyHolder() {
  const { accessToken, user } = await signUp(t.app);
  await setPlan(t, user.id, 'starter');
  const { key } = await createApiKey(t, accessToken, ['ai:text']);
  return { userId: user.id as string, ai: new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl } }) };
}
const recordsOf = (userId: string) => t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId));
const errorBody = (err: unknown) => JSON.parse((err as ApiError).message) as { error: { code: number; message: string; status: string } };

const weather: FunctionDeclaration = {
  name: 'get_weather',
  description: 'The current weather in a city',
  parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING } }, required: ['city'] },
};
const question: Content = { role: 'user', parts: [{ text: 'What is the weather in Paris?' }] };
const forced = { tools: [{ functionDeclarations: [weather] }], toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.ANY } } };

describe('/gemini/v1beta with function calls, JSON answers and images (built-in models)', () => {
  it('answers a forced call with a functionCall part, then a functionResponse follow-up', async () => {
    const { ai, userId } = await keyHolder();
    const first = await ai.models.generateContent({ model: 'local/text', contents: [question], config: forced });
    const call = first.functionCalls?.[0];
    expect(call).toMatchObject({ name: 'get_weather', id: expect.any(String), args: { city: expect.any(String) } });
    expect(first.candidates?.[0]?.finishReason).toBe('STOP');

    const second = await ai.models.generateContent({
      model: 'local/text',
      contents: [
        question,
        first.candidates![0]!.content!,
        { role: 'user', parts: [{ functionResponse: { id: call!.id, name: call!.name, response: { output: '18°C and sunny' } } }] },
      ],
      config: { tools: forced.tools },
    });
    expect(second.functionCalls).toBeUndefined();
    expect(second.text).toEqual(expect.any(String));
    const records = await recordsOf(userId);
    expect(records.map((r) => r.status)).toEqual(['SUCCESS', 'SUCCESS']);
    const state = await walletState(t, userId);
    expect(state.ledgerSum).toBe(state.balance);
  });

  it('matches a functionResponse without an id to the call by name (a declaration with parametersJsonSchema)', async () => {
    const { ai } = await keyHolder();
    const jsonSchemaWeather = { name: 'get_weather', parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };
    const answer = await ai.models.generateContent({
      model: 'local/text',
      contents: [
        question,
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { output: 'rain' } } }] },
      ],
      config: { tools: [{ functionDeclarations: [jsonSchemaWeather] }] },
    });
    expect(answer.text).toEqual(expect.any(String));
  });

  it('streams a function call whole in the last chunk', async () => {
    const { ai } = await keyHolder();
    const calls = [];
    for await (const chunk of await ai.models.generateContentStream({ model: 'local/text', contents: [question], config: forced }))
      calls.push(...(chunk.functionCalls ?? []));
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ name: 'get_weather', args: { city: expect.any(String) } });
  });

  it('answers JSON following responseJsonSchema (and Gemini-style responseSchema)', async () => {
    const { ai } = await keyHolder();
    const schema = { type: 'object', properties: { name: { type: 'string' }, year: { type: 'integer' } }, required: ['name', 'year'] };
    const response = await ai.models.generateContent({
      model: 'local/text',
      contents: 'Name a lighthouse',
      config: { responseMimeType: 'application/json', responseJsonSchema: schema },
    });
    expect(JSON.parse(response.text!)).toMatchObject({ name: expect.any(String), year: expect.any(Number) });
    const gemini = await ai.models.generateContent({
      model: 'local/text',
      contents: 'Name a lighthouse',
      config: { responseMimeType: 'application/json', responseSchema: { type: Type.OBJECT, properties: { name: { type: Type.STRING } }, required: ['name'] } },
    });
    expect(JSON.parse(gemini.text!)).toMatchObject({ name: expect.any(String) });
  });

  it('reads an inline image', async () => {
    const { ai } = await keyHolder();
    const data = solidPng(8, 8).toString('base64');
    const response = await ai.models.generateContent({
      model: 'local/text',
      contents: [{ role: 'user', parts: [{ text: 'What is in this picture?' }, { inlineData: { mimeType: 'image/png', data } }] }],
    });
    expect(response.text).toEqual(expect.any(String));
    expect(response.usageMetadata?.promptTokenCount).toBeGreaterThan(10);
  });

  it('refuses what it cannot honour with a 400 naming it, before any charge', async () => {
    const { ai, userId } = await keyHolder();
    const before = await walletState(t, userId);
    const refusals: [Parameters<typeof ai.models.generateContent>[0], RegExp][] = [
      [{ model: 'local/text', contents: 'hi', config: { candidateCount: 2 } }, /generationConfig\.candidateCount/],
      [{ model: 'local/text', contents: 'hi', config: { tools: [{ googleSearch: {} }] } }, /tools\.0\.googleSearch/],
      [{ model: 'local/text', contents: [{ role: 'user', parts: [{ functionResponse: { name: 'nobody', response: {} } }] }] }, /functionResponse/],
      [{ model: 'local/text', contents: 'hi', config: { responseMimeType: 'text/x.enum' } }, /responseMimeType/],
    ];
    for (const [params, named] of refusals) {
      const err = await ai.models.generateContent(params).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect(errorBody(err).error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', message: expect.stringMatching(named) });
    }
    expect(await walletState(t, userId)).toEqual(before);
    expect(await recordsOf(userId)).toEqual([]);
  });
});
