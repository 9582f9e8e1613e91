import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import Anthropic from '@anthropic-ai/sdk';
import { usageRecords } from '../../db/schema/usage.js';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createApiKey, setPlan, walletState } from '../../../test/helpers/gateway.js';
import { solidPng } from '../../../test/helpers/fake-media-upstreams.js';
import { encodePng } from '../../platform/media/png.js';
import { countMessageTokens } from '../gateway/text/tokens.js';

/** The richer Messages API (tools, tool results, images, parameters) through the official SDK against the built-in models. */

let t: TestApp;
let baseURL: string;
beforeAll(async () => {
  t = await createTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseURL = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/anthropic`;
});
afterAll(async () => t?.close());

async function keyHolder() {
  const { accessToken, user } = await signUp(t.app);
  await setPlan(t, user.id, 'starter');
  const { key } = await createApiKey(t, accessToken, ['ai:text']);
  return { userId: user.id as string, anthropic: new Anthropic({ apiKey: key, baseURL, maxRetries: 0 }) };
}
const errorMessage = (err: unknown) => (err as { error: { error: { message: string } } }).error.error.message;
const recordsOf = (userId: string) => t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId));

const weather: Anthropic.Tool = {
  name: 'get_weather',
  description: 'The current weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const question = { role: 'user' as const, content: 'What is the weather in Paris?' };
const png = solidPng(8, 8).toString('base64');
const imageBlock = { type: 'image' as const, source: { type: 'base64' as const, media_type: 'image/png' as const, data: png } };

describe('/anthropic/v1/messages with tools, tool results and images (built-in models)', () => {
  it('answers a forced tool call with a tool_use block, then a tool_result follow-up', async () => {
    const { anthropic, userId } = await keyHolder();
    const ask = { model: 'local/text', max_tokens: 256, tools: [weather], messages: [question] };
    const first = await anthropic.messages.create({ ...ask, tool_choice: { type: 'tool', name: 'get_weather' } });
    expect(first.stop_reason).toBe('tool_use');
    const call = first.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use');
    expect(call).toMatchObject({ type: 'tool_use', name: 'get_weather', id: expect.any(String) });
    expect(call!.input).toMatchObject({ city: expect.any(String) });

    const second = await anthropic.messages.create({
      ...ask,
      messages: [
        question,
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call!.id, content: '18°C and sunny' }] },
      ],
    });
    expect(second.stop_reason).toBe('end_turn');
    expect(second.content).toEqual([{ type: 'text', text: expect.any(String) }]);
    const records = await recordsOf(userId);
    expect(records.map((r) => r.status)).toEqual(['SUCCESS', 'SUCCESS']);
    const state = await walletState(t, userId);
    expect(state.ledgerSum).toBe(state.balance);
  });

  it("the SDK's stream helper assembles the streamed tool call", async () => {
    const { anthropic } = await keyHolder();
    const stream = anthropic.messages.stream({ model: 'local/text', max_tokens: 256, tools: [weather], tool_choice: { type: 'any' }, messages: [question] });
    const types = new Set<string>();
    stream.on('streamEvent', (event) => types.add(event.type === 'content_block_delta' ? event.delta.type : event.type));
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    expect(types.has('input_json_delta') || final.content.some((b) => b.type === 'tool_use' && Object.keys(b.input as object).length === 0)).toBe(true);
    const call = final.content.find((block) => block.type === 'tool_use');
    expect(call).toMatchObject({ name: 'get_weather', input: expect.any(Object) });
  });

  it('a streamed tool call replayed for its Idempotency-Key comes back as the same tool_use block, uncharged', async () => {
    const { anthropic, userId } = await keyHolder();
    const params = { model: 'local/text', max_tokens: 256, tools: [weather], tool_choice: { type: 'any' as const }, messages: [question] };
    const headers = { 'Idempotency-Key': `tools-${userId}` };
    const first = await anthropic.messages.stream(params, { headers }).finalMessage();
    const balance = (await walletState(t, userId)).balance;
    const again = await anthropic.messages.stream(params, { headers }).finalMessage();
    expect(again.content).toEqual(first.content);
    expect(again.stop_reason).toBe('tool_use');
    expect((await walletState(t, userId)).balance).toBe(balance);
  });

  it('reads an image block', async () => {
    const { anthropic } = await keyHolder();
    const message = await anthropic.messages.create({
      model: 'local/text',
      max_tokens: 128,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in this picture?' }, imageBlock] }],
    });
    expect(message.content[0]).toMatchObject({ type: 'text', text: expect.any(String) });
    expect(message.usage.input_tokens).toBeGreaterThan(10);
  });

  it('takes an image larger than the service-wide 1 MB body limit (Anthropic allows 32 MB requests)', async () => {
    const { anthropic } = await keyHolder();
    const noise = encodePng(700, 700, randomBytes(700 * 700 * 3)).toString('base64');
    expect(noise.length).toBeGreaterThan(1024 * 1024);
    const image = { type: 'image' as const, source: { type: 'base64' as const, media_type: 'image/png' as const, data: noise } };
    const message = await anthropic.messages.create({
      model: 'local/text',
      max_tokens: 64,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, image] }],
    });
    expect(message.type).toBe('message');
  });

  it('refuses what it cannot honour with a 400 naming it, before any charge', async () => {
    const { anthropic, userId } = await keyHolder();
    const before = await walletState(t, userId);
    const base = { model: 'local/text', max_tokens: 64, messages: [question] };
    const refusals: [Record<string, unknown>, RegExp][] = [
      [{ thinking: { type: 'enabled', budget_tokens: 2048 } }, /thinking\.budget_tokens must be less than max_tokens/],
      [{ tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, /web_search_20250305/],
      [{ messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }] }] }, /"document" block/],
      [{ output_config: { effort: 'high' } }, /output_config\.effort/],
    ];
    for (const [extra, named] of refusals) {
      const err = await anthropic.messages.create({ ...base, ...extra } as Anthropic.MessageCreateParamsNonStreaming).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Anthropic.BadRequestError);
      expect(errorMessage(err)).toMatch(named);
    }
    expect(await walletState(t, userId)).toEqual(before);
    expect(await recordsOf(userId)).toEqual([]);
  });

  it('sends no system prompt when the caller sent none, and takes system role messages', async () => {
    const { anthropic } = await keyHolder();
    // The built-in model counts exactly what it received: a server instruction would add its tokens.
    const plain = await anthropic.messages.create({ model: 'local/text', max_tokens: 64, messages: [question] });
    expect(plain.usage.input_tokens).toBe(countMessageTokens([question]));
    const system = { role: 'system' as const, content: 'Answer in one word.' };
    const withSystem = await anthropic.messages.create({ model: 'local/text', max_tokens: 64, messages: [system, question] });
    expect(withSystem.usage.input_tokens).toBe(countMessageTokens([system, question]));
  });
});
