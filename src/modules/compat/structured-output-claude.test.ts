import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { startFakeAnthropic } from '../gateway/providers/anthropic/anthropic.fake.js';
import { startFakeOpenAi, type Decide, type FakeUpstream } from '../../../test/helpers/fake-upstreams.js';
import { createApiKey, providerEnv, setBalance, setPlan, walletState } from '../../../test/helpers/gateway.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';

// Structured outputs on Claude (https://platform.claude.com/docs/en/build-with-claude/structured-outputs): every
// surface's JSON-schema answer format reaches the Messages API as `output_config.format` (schema adapted as the
// official SDK adapts it), /anthropic/v1 takes `output_config.format` from the official SDK and passes it on (as
// OpenAI's `response_format` for an OpenAI model), and what Claude cannot do is refused before anything is charged.

let claude: FakeUpstream;
let gpt: FakeUpstream;
let t: TestApp;
let decideClaude: Decide;
let openai: OpenAI;
let anthropic: Anthropic;
let gemini: GoogleGenAI;
let who: { token: string; userId: string };

beforeAll(async () => {
  claude = await startFakeAnthropic((request) => (request.method === 'GET' ? { kind: 'ok' } : decideClaude(request)));
  gpt = await startFakeOpenAi();
  t = await createTestApp({
    env: { ...providerEnv('ANTHROPIC', claude.origin, ['sk-ant-structured-1']), ...providerEnv('OPENAI', gpt.baseUrl, ['sk-structured-0001']) },
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const signed = await signUp(t.app);
  await setPlan(t, signed.user.id, 'starter');
  await setBalance(t, signed.user.id, 50_000_000);
  who = { token: signed.accessToken, userId: signed.user.id };
  const { key } = await createApiKey(t, signed.accessToken, ['ai:text']);
  const origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  openai = new OpenAI({ apiKey: key, baseURL: `${origin}/openai/v1`, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: key, baseURL: `${origin}/anthropic`, maxRetries: 0 });
  gemini = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: `${origin}/gemini` } });
});
afterAll(async () => {
  await t?.close();
  await claude?.close();
  await gpt?.close();
});
beforeEach(() => {
  decideClaude = () => ({ kind: 'ok' });
});

const HAIKU = 'anthropic/claude-haiku-4-5';
const SONNET = 'anthropic/claude-sonnet-4-6';
const OLD_CLAUDE = 'anthropic/claude-3-5-haiku';
const question = 'Name a lighthouse and the year it was lit';
/** A schema as OpenAI clients write it: no additionalProperties, which Anthropic requires on every object. */
const open = {
  type: 'object',
  properties: { name: { type: 'string' }, year: { type: 'integer' }, keeper: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
  required: ['name', 'year', 'keeper'],
};
const closed = { ...open, additionalProperties: false, properties: { ...open.properties, keeper: { ...open.properties.keeper, additionalProperties: false } } };
const sentFormat = () => claude.calls().at(-1)!.body.output_config?.format;

/** Runs `run`, which must be refused, and checks nothing was charged and nothing reached Anthropic. */
async function refusedUncharged(run: () => Promise<unknown>): Promise<unknown> {
  const before = { wallet: await walletState(t, who.userId), calls: claude.calls().length };
  const err = await run().catch((e: unknown) => e);
  expect(await walletState(t, who.userId)).toEqual(before.wallet);
  expect(claude.calls().length).toBe(before.calls);
  return err;
}

describe('/anthropic/v1/messages with output_config.format', () => {
  it('passes the schema to Claude and answers with JSON that matches it, streamed and not', async () => {
    const params: Anthropic.MessageCreateParamsNonStreaming = {
      model: HAIKU,
      max_tokens: 500,
      messages: [{ role: 'user', content: question }],
      output_config: { format: { type: 'json_schema', schema: closed } },
    };
    const message = await anthropic.messages.create(params);
    expect(sentFormat()).toEqual({ type: 'json_schema', schema: closed });
    const block = message.content[0] as Anthropic.TextBlock;
    expect(JSON.parse(block.text)).toEqual({ name: expect.any(String), year: expect.any(Number), keeper: { name: expect.any(String) } });

    const streamed = await anthropic.messages.stream({ ...params, model: SONNET }).finalMessage();
    expect(claude.calls().at(-1)!.body).toMatchObject({ stream: true, output_config: { format: { type: 'json_schema', schema: closed } } });
    expect(JSON.parse((streamed.content[0] as Anthropic.TextBlock).text)).toEqual(JSON.parse(block.text));
  });

  it('closes the objects of a schema Anthropic would refuse as written (additionalProperties: false), as the SDK does', async () => {
    await anthropic.messages.create({
      model: HAIKU,
      max_tokens: 500,
      messages: [{ role: 'user', content: question }],
      output_config: { format: { type: 'json_schema', schema: open } },
    });
    expect(sentFormat()).toEqual({ type: 'json_schema', schema: closed });
  });

  it("gives an OpenAI model the schema as OpenAI's response_format", async () => {
    gpt.decide(() => ({ kind: 'ok', text: '{"name":"Eddystone","year":1759,"keeper":{"name":"Henry"}}' }));
    const message = await anthropic.messages.create({
      model: 'openai/gpt-4o-mini',
      max_tokens: 500,
      messages: [{ role: 'user', content: question }],
      output_config: { format: { type: 'json_schema', schema: closed } },
    });
    expect(gpt.calls().at(-1)!.body.response_format).toMatchObject({ type: 'json_schema', json_schema: { schema: closed } });
    expect(JSON.parse((message.content[0] as Anthropic.TextBlock).text)).toMatchObject({ name: 'Eddystone' });
  });

  it('refuses a format for a Claude model without structured outputs, before reserving or calling Anthropic', async () => {
    const err = await refusedUncharged(() =>
      anthropic.messages.create({
        model: OLD_CLAUDE,
        max_tokens: 500,
        messages: [{ role: 'user', content: question }],
        output_config: { format: { type: 'json_schema', schema: closed } },
      }),
    );
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as InstanceType<typeof Anthropic.BadRequestError>).message).toMatch(/claude-3-5-haiku.*JSON schema/);
  });
});

describe('the other surfaces to a Claude model', () => {
  it('chat completions: response_format json_schema goes as output_config.format, the content is the JSON', async () => {
    const completion = await openai.chat.completions.create({
      model: HAIKU,
      messages: [{ role: 'user', content: question }],
      response_format: { type: 'json_schema', json_schema: { name: 'lighthouse', description: 'A lighthouse', schema: open, strict: true } },
    });
    expect(sentFormat()).toEqual({ type: 'json_schema', schema: { ...closed, description: 'A lighthouse' } });
    expect(JSON.parse(completion.choices[0]!.message.content!)).toEqual({
      name: expect.any(String),
      year: expect.any(Number),
      keeper: { name: expect.any(String) },
    });
    expect(completion.usage!.prompt_tokens).toBeGreaterThan(0);
  });

  it('/v1/ai/text: responseFormat json_schema', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/text',
      headers: bearer(who.token),
      payload: { model: HAIKU, messages: [{ role: 'user', content: question }], responseFormat: { type: 'json_schema', name: 'lighthouse', schema: open } },
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(sentFormat()).toEqual({ type: 'json_schema', schema: closed });
    expect(JSON.parse(json(response).text)).toMatchObject({ keeper: { name: expect.any(String) } });
  });

  it("Gemini's responseJsonSchema", async () => {
    const answer = await gemini.models.generateContent({
      model: HAIKU,
      contents: question,
      config: { responseMimeType: 'application/json', responseJsonSchema: open },
    });
    expect(sentFormat()).toEqual({ type: 'json_schema', schema: closed });
    expect(JSON.parse(answer.text!)).toMatchObject({ year: expect.any(Number) });
  });

  it('Responses: text.format json_schema', async () => {
    const response = await openai.responses.create({
      model: SONNET,
      input: question,
      text: { format: { type: 'json_schema', name: 'lighthouse', schema: open } },
    });
    expect(sentFormat()).toEqual({ type: 'json_schema', schema: closed });
    expect(JSON.parse(response.output_text)).toMatchObject({ name: expect.any(String) });
  });
});

describe('what Claude cannot answer to', () => {
  it('json_object (no schema): a 400 that asks for a schema, nothing charged, nothing sent', async () => {
    const err = await refusedUncharged(() =>
      openai.chat.completions.create({ model: HAIKU, messages: [{ role: 'user', content: `${question}, as JSON` }], response_format: { type: 'json_object' } }),
    );
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('responseFormat'); // as the other response-format refusals name it
    expect((err as Error).message).toMatch(/no JSON mode without a schema.*json_schema/);
  });

  it('a schema whose root is not an object, or with a property of no type (the SDK cannot adapt it)', async () => {
    const ask = (schema: Record<string, unknown>) =>
      openai.chat.completions.create({
        model: HAIKU,
        messages: [{ role: 'user', content: question }],
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema } },
      });
    const list = await refusedUncharged(() => ask({ type: 'array', items: { type: 'string' } }));
    expect((list as Error).message).toMatch(/must describe an object/);
    const untyped = await refusedUncharged(() => ask({ type: 'object', properties: { anything: {} } }));
    expect((untyped as Error).message).toMatch(/Give every property a "type"/);
    const viaResponses = await refusedUncharged(() => openai.responses.create({ model: HAIKU, input: question, text: { format: { type: 'json_object' } } }));
    expect(viaResponses).toMatchObject({ status: 400, param: 'text.format' });
  });
});

describe('the fake Messages API', () => {
  const send = async (body: Record<string, unknown>) => {
    const response = await fetch(`${claude.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'sk-ant-1', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as { error?: { message: string }; content?: { text: string }[] } };
  };
  const base = { model: 'claude-haiku-4-5-20251001', max_tokens: 100, messages: [{ role: 'user', content: question }] };

  it('refuses what the real API refuses: an open object, no schema, another format type, an older model', async () => {
    expect((await send({ ...base, output_config: { format: { type: 'json_schema', schema: open } } })).body.error?.message).toBe(
      "output_config.format.schema: For 'object' type, 'additionalProperties' must be explicitly set to false",
    );
    expect((await send({ ...base, output_config: { format: { type: 'json_schema' } } })).body.error?.message).toBe(
      'output_config.format.schema: Field required',
    );
    expect((await send({ ...base, output_config: { format: { type: 'json_object' } } })).status).toBe(400);
    const old = await send({ ...base, model: 'claude-3-5-haiku-20241022', output_config: { format: { type: 'json_schema', schema: closed } } });
    expect(old.status).toBe(400);
    expect(old.body.error?.message).toMatch(/not supported/);
    const fine = await send({ ...base, output_config: { format: { type: 'json_schema', schema: closed } } });
    expect(JSON.parse(fine.body.content![0]!.text)).toEqual({ name: expect.any(String), year: expect.any(Number), keeper: { name: expect.any(String) } });
  });
});
