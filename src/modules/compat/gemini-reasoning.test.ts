import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GoogleGenAI, type GenerateContentResponse } from '@google/genai';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createApiKey, providerEnv, setBalance, setPlan } from '../../../test/helpers/gateway.js';
import { startFakeAnthropic } from '../gateway/providers/anthropic/anthropic.fake.js';
import type { FakeUpstream } from '../../../test/helpers/fake-upstreams.js';
import { reasoningOf } from './gemini.format.js';

/** Gemini's `thinkingConfig` as the gateway's reasoning control, seen on an Anthropic (budget) model. */

const MODEL = 'anthropic/claude-sonnet-4-6';
let fake: FakeUpstream;
let t: TestApp;
let ai: GoogleGenAI;
let host: string;
let apiKey: string;

beforeAll(async () => {
  fake = await startFakeAnthropic((request) => (request.method === 'GET' ? { kind: 'ok' } : { kind: 'ok', text: 'It is 4.' }));
  t = await createTestApp({ env: providerEnv('ANTHROPIC', fake.origin, ['sk-ant-gemini-thinking-1']) });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { accessToken, user } = await signUp(t.app);
  await setPlan(t, user.id, 'starter');
  await setBalance(t, user.id, 5_000_000);
  apiKey = (await createApiKey(t, accessToken, ['ai:text'])).key;
  host = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  ai = new GoogleGenAI({ apiKey, httpOptions: { baseUrl: `${host}/gemini` } });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const sent = () => fake.calls().at(-1)!.body as Record<string, any>;
const contents = '2 + 2?';
const partsOf = (response: GenerateContentResponse) => response.candidates?.[0]?.content?.parts ?? [];

describe('thinkingConfig on /gemini/v1beta', () => {
  it('maps thinkingBudget and thinkingLevel to the reasoning control (0 off, -1 dynamic at medium)', () => {
    expect(reasoningOf({ thinkingBudget: 0 })).toEqual({ effort: 'none' });
    expect(reasoningOf({ thinkingBudget: -1, includeThoughts: true })).toEqual({ effort: 'medium' });
    expect(reasoningOf({ thinkingBudget: 4096 })).toEqual({ budgetTokens: 4096 });
    expect(reasoningOf({ thinkingBudget: 128 })).toEqual({ budgetTokens: 1024 });
    expect(reasoningOf({ thinkingLevel: 'HIGH' })).toEqual({ effort: 'high' });
    expect(reasoningOf({ includeThoughts: true })).toBeUndefined();
    expect(reasoningOf(undefined)).toBeUndefined();
  });

  it('sends a budget as thinking, returns the thoughts as thought parts and counts them in thoughtsTokenCount', async () => {
    const response = await ai.models.generateContent({
      model: MODEL,
      contents,
      config: { maxOutputTokens: 1000, thinkingConfig: { thinkingBudget: 2048, includeThoughts: true } },
    });
    expect(sent()).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 2048 }, max_tokens: 2048 + 1000 });
    const parts = partsOf(response);
    expect(parts[0]).toEqual({ text: expect.stringContaining('think'), thought: true });
    // The signature rides on the answer's last part, never on a thought (clients drop those from their history).
    expect(parts.at(-1)).toEqual({ text: 'It is 4.', thoughtSignature: expect.any(String) });
    expect(parts[0]).not.toHaveProperty('thoughtSignature');
    expect(response.text).toBe('It is 4.');
    const usage = response.usageMetadata!;
    expect(usage.thoughtsTokenCount).toBeGreaterThan(0);
    expect(usage.totalTokenCount).toBe(usage.promptTokenCount! + usage.candidatesTokenCount! + usage.thoughtsTokenCount!);
  });

  it('leaves the thoughts out without includeThoughts, turns thinking off with budget 0, and picks medium for -1', async () => {
    const hidden = await ai.models.generateContent({ model: MODEL, contents, config: { thinkingConfig: { thinkingBudget: 1024 } } });
    expect(sent().thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    expect(partsOf(hidden)).toEqual([{ text: 'It is 4.', thoughtSignature: expect.any(String) }]);
    expect(hidden.usageMetadata?.thoughtsTokenCount).toBeGreaterThan(0);

    const off = await ai.models.generateContent({ model: MODEL, contents, config: { thinkingConfig: { thinkingBudget: 0, includeThoughts: true } } });
    expect(sent().thinking).toBeUndefined();
    expect(partsOf(off)).toEqual([{ text: 'It is 4.' }]);
    expect(off.usageMetadata?.thoughtsTokenCount).toBeUndefined();

    await ai.models.generateContent({ model: MODEL, contents, config: { thinkingConfig: { thinkingBudget: -1 } } });
    expect(sent().thinking).toEqual({ type: 'enabled', budget_tokens: 8192 });
  });

  it('streams the thoughts as thought parts before the text', async () => {
    const chunks: GenerateContentResponse[] = [];
    for await (const chunk of await ai.models.generateContentStream({
      model: MODEL,
      contents,
      config: { thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } },
    }))
      chunks.push(chunk);
    const parts = chunks.flatMap(partsOf);
    const thought = parts
      .filter((part) => part.thought)
      .map((part) => part.text)
      .join('');
    expect(thought).toContain('think');
    expect(
      parts
        .filter((part) => !part.thought)
        .map((part) => part.text ?? '')
        .join(''),
    ).toBe('It is 4.');
    expect(parts.findIndex((part) => !part.thought)).toBeGreaterThan(parts.findLastIndex((part) => part.thought));
    expect(chunks.at(-1)?.usageMetadata?.thoughtsTokenCount).toBeGreaterThan(0);
    expect(sent()).toMatchObject({ stream: true, thinking: { type: 'enabled', budget_tokens: 1024 } });
  });

  it('names thinkingConfig in x-storefront-ignored on a model without reasoning', async () => {
    const body = { contents: [{ role: 'user', parts: [{ text: 'Hello' }] }], generationConfig: { thinkingConfig: { thinkingBudget: 2048 } } };
    const response = await fetch(`${host}/gemini/v1beta/models/local/text:generateContent?key=${apiKey}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-storefront-ignored')).toBe('generationConfig.thinkingConfig');
  });
});
