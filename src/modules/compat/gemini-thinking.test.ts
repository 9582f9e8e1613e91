import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import {
  ApiError,
  GoogleGenAI,
  Type,
  type Content,
  type FunctionDeclaration,
  type GenerateContentConfig,
  type GenerateContentResponse,
  type Part,
} from '@google/genai';
import { usageRecords } from '../../db/schema/usage.js';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createApiKey, parseSse, providerEnv, setBalance, setPlan, walletState } from '../../../test/helpers/gateway.js';
import { startFakeAnthropic } from '../gateway/providers/anthropic/anthropic.fake.js';
import { signatureOf, thinkingTextOf } from '../gateway/providers/anthropic/anthropic-thinking.fake.js';
import type { FakeRequest, FakeUpstream } from '../../../test/helpers/fake-upstreams.js';

/**
 * An Anthropic model's thinking round-tripped through Gemini's `thoughtSignature` (the fake refuses a tool-use
 * follow-up whose assistant turn does not start with its signed thinking, as Anthropic does), and the JSON-array form
 * of streamGenerateContent.
 */

const MODEL = 'anthropic/claude-sonnet-4-6';
const ANSWER = 'It is 18 degrees and sunny in Paris.';
/** A prompt holding this breaks the fake's stream midway. */
const BREAK = 'break midway';
let fake: FakeUpstream;
let t: TestApp;
let host: string;

const answersTool = (request: FakeRequest) => {
  const last = request.body?.messages?.at(-1)?.content;
  return Array.isArray(last) && last.some((block: { type: string }) => block.type === 'tool_result');
};

beforeAll(async () => {
  // With tools and no result yet the model calls get_weather; given the result (or without tools) it answers.
  fake = await startFakeAnthropic((request) => {
    if (request.method === 'GET') return { kind: 'ok' };
    if (JSON.stringify(request.body?.messages).includes(BREAK))
      return { kind: 'midway', text: 'one two three four five six seven', afterChunks: 2, how: 'error-event' };
    if (answersTool(request)) return { kind: 'ok', text: ANSWER };
    return request.body?.tools?.length
      ? { kind: 'ok', toolCalls: [{ id: 'toolu_weather_1', name: 'get_weather', arguments: '{"city":"Paris"}' }] }
      : { kind: 'ok' };
  });
  t = await createTestApp({ env: providerEnv('ANTHROPIC', fake.origin, ['sk-ant-gemini-sig-1']) });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  host = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

async function keyHolder() {
  const { accessToken, user } = await signUp(t.app);
  await setPlan(t, user.id, 'starter');
  await setBalance(t, user.id, 5_000_000);
  const { key } = await createApiKey(t, accessToken, ['ai:text']);
  return { userId: user.id as string, key, ai: new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: `${host}/gemini` } }) };
}
const recordsOf = (userId: string) => t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId));
const lastUpstream = () => fake.calls().at(-1)!.body as Record<string, any>;

const weather: FunctionDeclaration = {
  name: 'get_weather',
  description: 'The current weather in a city',
  parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING } }, required: ['city'] },
};
const question = 'What is the weather in Paris?';
const thinking: GenerateContentConfig = { tools: [{ functionDeclarations: [weather] }], thinkingConfig: { thinkingBudget: 1024 } };
const result = (id: string | undefined): Part[] => [{ functionResponse: { id, name: 'get_weather', response: { output: '18 degrees and sunny' } } }];

/** The follow-up's assistant turn, as the fake must have received it: the signed thinking first, then the call. */
function expectThinkingSentBack(thought: string) {
  const [, assistant] = lastUpstream().messages;
  expect(assistant.role).toBe('assistant');
  expect(assistant.content[0]).toEqual({ type: 'thinking', thinking: thought, signature: signatureOf(thought) });
  expect(assistant.content.at(-1)).toMatchObject({ type: 'tool_use', id: 'toolu_weather_1', name: 'get_weather', input: { city: 'Paris' } });
}

describe('thought signatures on /gemini/v1beta (Anthropic model with thinking)', () => {
  it('puts the thinking on the call part and takes it back from a chat history (generateContent)', async () => {
    const { ai, userId } = await keyHolder();
    const chat = ai.chats.create({ model: MODEL, config: thinking });
    const first = await chat.sendMessage({ message: question });
    const thought = thinkingTextOf(lastUpstream())!;
    const parts = first.candidates![0]!.content!.parts!;
    expect(parts).toEqual([{ functionCall: { name: 'get_weather', args: { city: 'Paris' }, id: 'toolu_weather_1' }, thoughtSignature: expect.any(String) }]);
    // Base64, which Google's typed SDKs (bytes in Python and Go) can read.
    expect(parts[0]!.thoughtSignature).toMatch(/^[A-Za-z0-9+/]+=*$/);

    const second = await chat.sendMessage({ message: result(first.functionCalls![0]!.id) });
    expect(second.text).toBe(ANSWER);
    expectThinkingSentBack(thought);
    expect(second.candidates![0]!.content!.parts!.at(-1)).toEqual({ text: ANSWER, thoughtSignature: expect.any(String) });
    expect((await recordsOf(userId)).map((record) => record.status)).toEqual(['SUCCESS', 'SUCCESS']);
  });

  it('streams the signature with the calls, and takes back a streamed history kept chunk by chunk with its thoughts', async () => {
    const { ai } = await keyHolder();
    const chat = ai.chats.create({ model: MODEL, config: { ...thinking, thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } } });
    const chunks: GenerateContentResponse[] = [];
    for await (const chunk of await chat.sendMessageStream({ message: question })) chunks.push(chunk);
    const thought = thinkingTextOf(lastUpstream())!;
    const parts = chunks.flatMap((chunk) => chunk.candidates?.[0]?.content?.parts ?? []);
    expect(
      parts
        .filter((part) => part.thought)
        .map((part) => part.text)
        .join(''),
    ).toBe(thought);
    const signed = parts.filter((part) => part.thoughtSignature);
    expect(signed).toEqual([{ functionCall: expect.objectContaining({ name: 'get_weather', id: 'toolu_weather_1' }), thoughtSignature: expect.any(String) }]);
    expect(chunks.at(-1)!.candidates![0]!.content!.parts).toEqual(signed);

    const call = chunks.flatMap((chunk) => chunk.functionCalls ?? [])[0]!;
    let text = '';
    const answer: GenerateContentResponse[] = [];
    for await (const chunk of await chat.sendMessageStream({ message: result(call.id) })) {
      answer.push(chunk);
      text += chunk.text ?? '';
    }
    expect(text).toBe(ANSWER);
    expect(lastUpstream().stream).toBe(true);
    expectThinkingSentBack(thought);
    // Without calls the signature closes the stream on an empty text part, which keeps the answer in the chat history.
    expect(answer.at(-1)!.candidates![0]!.content!.parts).toEqual([{ text: '', thoughtSignature: expect.any(String) }]);
    expect(chat.getHistory().at(-1)).toMatchObject({ role: 'model', parts: [{ text: '', thoughtSignature: expect.any(String) }] });
  });

  it('refuses a signature that was cut or edited with a 400 naming it, before any upstream call or charge', async () => {
    const { ai, userId } = await keyHolder();
    const first = await ai.models.generateContent({ model: MODEL, contents: question, config: thinking });
    const callPart = first.candidates![0]!.content!.parts![0]!;
    const packed = Buffer.from(callPart.thoughtSignature!, 'base64').toString('utf8');
    expect(packed).toMatch(/^sfth1\./);
    const before = await walletState(t, userId);
    const upstreamCalls = fake.calls().length;
    const cut = packed.slice(0, -8);
    const edited = `${packed.slice(0, 10)}${packed[10] === 'A' ? 'B' : 'A'}${packed.slice(11)}`;
    for (const signature of [cut, edited, Buffer.from(cut, 'utf8').toString('base64')]) {
      const contents: Content[] = [
        { role: 'user', parts: [{ text: question }] },
        { role: 'model', parts: [{ ...callPart, thoughtSignature: signature }] },
        { role: 'user', parts: result(callPart.functionCall!.id) },
      ];
      const refused = await ai.models.generateContent({ model: MODEL, contents, config: thinking }).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(ApiError);
      expect(JSON.parse((refused as ApiError).message)).toMatchObject({
        error: { code: 400, status: 'INVALID_ARGUMENT', message: expect.stringContaining('contents.1.parts.0.thoughtSignature') },
      });
      const streamed = await ai.models.generateContentStream({ model: MODEL, contents, config: thinking }).catch((err: unknown) => err);
      expect((streamed as ApiError).status).toBe(400);
    }
    expect(fake.calls().length).toBe(upstreamCalls);
    expect(await walletState(t, userId)).toEqual(before);
    expect(await recordsOf(userId)).toHaveLength(1);
  });

  it("drops a signature it did not write (Google's, Gemini CLI's placeholder) and reads past thought parts", async () => {
    const { ai } = await keyHolder();
    const contents: Content[] = [
      { role: 'user', parts: [{ text: question }] },
      {
        role: 'model',
        parts: [
          { text: 'Checking the forecast service.', thought: true, thoughtSignature: 'CiQBjz1rX3Rob3VnaHQtc2lnbmF0dXJlLWZyb20tZ29vZ2xl' },
          { thought: true, thoughtSignature: 'EjQKMgEMOdbHsecond' },
          { functionCall: { id: 'toolu_weather_1', name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'skip_thought_signature_validator' },
        ],
      },
      { role: 'user', parts: result('toolu_weather_1') },
    ];
    const response = await ai.models.generateContent({ model: MODEL, contents, config: { tools: thinking.tools } });
    expect(response.text).toBe(ANSWER);
    const [, assistant] = lastUpstream().messages;
    expect(assistant.content).toEqual([{ type: 'tool_use', id: 'toolu_weather_1', name: 'get_weather', input: { city: 'Paris' } }]);
    expect(JSON.stringify(lastUpstream().messages)).not.toContain('forecast service');
  });
});

describe('streamGenerateContent without alt=sse', () => {
  const textOf = (chunks: GenerateContentResponse[]) =>
    chunks
      .flatMap((chunk) => chunk.candidates?.[0]?.content?.parts ?? [])
      .filter((part) => !part.thought)
      .map((part) => part.text ?? '')
      .join('');

  it("answers one JSON array of the SSE path's chunks, metered once", async () => {
    const { key, userId } = await keyHolder();
    const before = await walletState(t, userId);
    const body = JSON.stringify({
      contents: [{ role: 'user', parts: [{ text: '2 + 2?' }] }],
      generationConfig: { thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } },
    });
    const call = (query: string) =>
      fetch(`${host}/gemini/v1beta/models/${MODEL}:streamGenerateContent?${query}key=${key}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });

    const response = await call('');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const raw = await response.text();
    expect(raw.startsWith('[{')).toBe(true);
    expect(raw).toContain('}\r\n,\r\n{');
    expect(raw.endsWith('}\r\n]')).toBe(true);
    const chunks = JSON.parse(raw) as GenerateContentResponse[];
    expect(chunks.length).toBeGreaterThan(2);

    const sse = parseSse(await (await call('alt=sse&')).text()) as unknown as GenerateContentResponse[];
    expect(textOf(chunks)).toBe(textOf(sse));
    expect(textOf(chunks)).toBe('Echo: 2 + 2?');
    expect(chunks.map((chunk) => chunk.candidates?.[0]?.content?.parts?.map((part) => Object.keys(part).sort().join('+')))).toEqual(
      sse.map((chunk) => chunk.candidates?.[0]?.content?.parts?.map((part) => Object.keys(part).sort().join('+'))),
    );

    const last = chunks.at(-1)!;
    expect(last.candidates![0]).toMatchObject({ finishReason: 'STOP', content: { parts: [{ text: '', thoughtSignature: expect.any(String) }] } });
    const records = await recordsOf(userId);
    expect(records).toHaveLength(2);
    const record = records.find((row) => row.requestId === last.responseId)!;
    expect(record).toMatchObject({ status: 'SUCCESS', tokensConsumed: (last.usageMetadata as { tokensCharged: number }).tokensCharged });
    const after = await walletState(t, userId);
    expect(after.balance).toBe(before.balance - records.reduce((sum, row) => sum + row.tokensConsumed, 0));
    expect(after.ledgerSum).toBe(after.balance);
  });

  it("closes a stream that broke midway as a valid array ending with Google's error, the delivered text billed once", async () => {
    const { key, userId } = await keyHolder();
    const body = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: BREAK }] }] });
    const response = await fetch(`${host}/gemini/v1beta/models/${MODEL}:streamGenerateContent?key=${key}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(response.status).toBe(200);
    const chunks = JSON.parse(await response.text()) as Array<GenerateContentResponse & { error?: unknown }>;
    expect(textOf(chunks.slice(0, -1))).not.toBe('');
    expect(chunks.at(-1)).toEqual({ error: { code: 500, message: expect.any(String), status: 'INTERNAL' } });
    const records = await recordsOf(userId);
    expect(records.map((row) => row.status)).toEqual(['PARTIAL']);
    const state = await walletState(t, userId);
    expect(state.ledgerSum).toBe(state.balance);
  });
});
