import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import Anthropic from '@anthropic-ai/sdk';
import { models } from '../../../../db/schema/catalog.js';
import { usageRecords } from '../../../../db/schema/usage.js';
import { solidPng } from '../../../../../test/helpers/fake-media-upstreams.js';
import { createApiKey, setPlan, walletState } from '../../../../../test/helpers/gateway.js';
import { createTestApp, signUp, type TestApp } from '../../../../../test/helpers/test-app.js';

// The built-in model's tools, vision and JSON answers through the real app, on the Anthropic Messages surface (the
// official SDK): metered, charged and recorded like any text call.

let t: TestApp;
let baseURL: string;
beforeAll(async () => {
  t = await createTestApp();
  // local/text lists TOOLS and VISION in the seed; until it does, the test gives them to it.
  const [row] = await t.platform.db.select().from(models).where(eq(models.slug, 'local/text'));
  const features = [...new Set([...row!.features, 'TOOLS', 'VISION'] as const)];
  await t.platform.db.update(models).set({ features }).where(eq(models.slug, 'local/text'));
  t.services.catalog.invalidate();
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
const usageOf = async (messageId: string) =>
  (
    await t.platform.db
      .select()
      .from(usageRecords)
      .where(eq(usageRecords.requestId, messageId.replace(/^msg_/, '')))
  )[0];
const charged = (usage: object) => (usage as { tokens_charged: number }).tokens_charged;

const tools: Anthropic.Tool[] = [
  { name: 'search_web', description: 'Search the web', input_schema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } },
  {
    name: 'get_weather',
    description: 'Current weather for a city',
    input_schema: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['city', 'unit'],
    },
  },
];
const question: Anthropic.MessageParam = { role: 'user', content: 'What is the weather in Paris right now?' };

describe('local/text through /anthropic/v1/messages', () => {
  it('calls a tool, and answers its result in text: an agent loop that ends, each turn charged', async () => {
    const { anthropic, userId } = await keyHolder();
    const before = await walletState(t, userId);
    const call = await anthropic.messages.create({ model: 'local/text', max_tokens: 512, tools, messages: [question] });
    expect(call.stop_reason).toBe('tool_use');
    expect(call.content).toEqual([{ type: 'tool_use', id: expect.stringMatching(/^call_/), name: 'get_weather', input: { city: 'Paris', unit: 'celsius' } }]);
    expect(await usageOf(call.id)).toMatchObject({ status: 'SUCCESS', tokensConsumed: charged(call.usage), outputUnits: call.usage.output_tokens });

    const toolUse = call.content[0] as Anthropic.ToolUseBlock;
    const answer = await anthropic.messages.create({
      model: 'local/text',
      max_tokens: 512,
      tools,
      messages: [
        question,
        { role: 'assistant', content: call.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: '{"temperature": 18, "sky": "clear"}' }] },
      ],
    });
    expect(answer.stop_reason).toBe('end_turn');
    expect(answer.content).toEqual([{ type: 'text', text: expect.stringContaining('According to get_weather: {"temperature":18,"sky":"clear"}.') }]);

    const after = await walletState(t, userId);
    expect(after.balance).toBe(before.balance - charged(call.usage) - charged(answer.usage));
    expect(after.ledgerSum).toBe(after.balance);
  });

  it('streams the tool call as input_json_delta events the SDK reassembles', async () => {
    const { anthropic } = await keyHolder();
    const stream = anthropic.messages.stream({
      model: 'local/text',
      max_tokens: 512,
      tools,
      tool_choice: { type: 'tool', name: 'search_web' },
      messages: [question],
    });
    const types: string[] = [];
    stream.on('streamEvent', (event) => types.push(event.type === 'content_block_delta' ? event.delta.type : event.type));
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content).toEqual([
      { type: 'tool_use', id: expect.stringMatching(/^call_/), name: 'search_web', input: { query: expect.stringContaining('paris') } },
    ]);
    expect(types.filter((type) => type === 'input_json_delta').length).toBeGreaterThan(1);
    expect(await usageOf(final.id)).toMatchObject({ status: 'SUCCESS', outputUnits: final.usage.output_tokens });
  });

  it('describes an image it is sent', async () => {
    const { anthropic } = await keyHolder();
    const png = solidPng(64, 48).toString('base64');
    const message = await anthropic.messages.create({
      model: 'local/text',
      max_tokens: 512,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
            { type: 'text', text: 'What is this?' },
          ],
        },
      ],
    });
    expect(message.content[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/^The image is a 64×48 PNG image\./) });
  });

  it('answers with JSON valid against output_config.format', async () => {
    const { anthropic } = await keyHolder();
    const schema = {
      type: 'object',
      properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1, maximum: 5 } },
      required: ['city', 'days'],
      additionalProperties: false,
    };
    const body = {
      model: 'local/text',
      max_tokens: 512,
      messages: [{ role: 'user' as const, content: 'Plan 3 days in Vienna' }],
      output_config: { format: { type: 'json_schema', schema } },
    };
    const message = await anthropic.messages.create(body as unknown as Anthropic.MessageCreateParamsNonStreaming);
    const text = (message.content[0] as Anthropic.TextBlock).text;
    expect(JSON.parse(text)).toEqual({ city: 'Vienna', days: 3 });
  });
});
