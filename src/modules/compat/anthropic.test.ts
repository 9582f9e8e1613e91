import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import Anthropic from '@anthropic-ai/sdk';
import { usageRecords } from '../../db/schema/usage.js';
import { countRequestTokens } from './gemini.models.js';
import { toCountedBody } from './anthropic.format.js';
import { createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createApiKey, setBalance, setPlan, walletState } from '../../../test/helpers/gateway.js';

let t: TestApp;
let baseURL: string;
beforeAll(async () => {
  t = await createTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseURL = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/anthropic`;
});
afterAll(async () => t?.close());

async function keyHolder(scopes: string[] = ['ai:text'], controls: Record<string, unknown> = {}) {
  const { accessToken, user } = await signUp(t.app);
  await setPlan(t, user.id, 'starter');
  const { key } = await createApiKey(t, accessToken, scopes, controls);
  return { userId: user.id as string, key, anthropic: new Anthropic({ apiKey: key, baseURL, maxRetries: 0 }) };
}
const usageOf = (requestId: string) => t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, requestId));
const ask = { model: 'local/text', max_tokens: 256, system: 'Be brief.', messages: [{ role: 'user' as const, content: 'Explain how lighthouses work' }] };
type Charged = { tokens_charged: number };

describe('/anthropic/v1/messages with the official @anthropic-ai/sdk', () => {
  it('answers a message (key as x-api-key) metered like /v1/ai/text', async () => {
    const { anthropic, userId } = await keyHolder();
    const before = await walletState(t, userId);
    const message = await anthropic.messages.create(ask);
    expect(message).toMatchObject({ type: 'message', role: 'assistant', model: 'local/text', stop_reason: 'end_turn', stop_sequence: null });
    expect(message.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('lighthouses') });
    const charged = (message.usage as unknown as Charged).tokens_charged;
    const [record] = await usageOf(message.id.replace(/^msg_/, ''));
    expect(record).toMatchObject({ userId, operation: 'text.generate', status: 'SUCCESS', tokensConsumed: charged, outputUnits: message.usage.output_tokens });
    const after = await walletState(t, userId);
    expect(after.balance).toBe(before.balance - charged);
    expect(after.ledgerSum).toBe(after.balance);
  });

  it("streams Anthropic's events, and the SDK's final message carries the billed usage", async () => {
    const { anthropic, userId } = await keyHolder();
    const before = await walletState(t, userId);
    const types: string[] = [];
    const stream = anthropic.messages.stream(ask);
    stream.on('streamEvent', (event) => types.push(event.type));
    const text = await stream.finalText();
    const final = await stream.finalMessage();
    expect(text).toContain('lighthouses');
    expect(types[0]).toBe('message_start');
    expect(types[1]).toBe('content_block_start');
    expect(types.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    expect(new Set(types.slice(2, -3))).toEqual(new Set(['content_block_delta']));
    expect(final.stop_reason).toBe('end_turn');
    const [record] = await usageOf(final.id.replace(/^msg_/, ''));
    expect(record).toMatchObject({ status: 'SUCCESS', outputUnits: final.usage.output_tokens });
    const after = await walletState(t, userId);
    expect(after.balance).toBe(before.balance - record!.tokensConsumed);
    expect(after.ledgerSum).toBe(after.balance);
  });

  it('counts input tokens (messages.countTokens) in the gateway tokenizer, free, for the models the key allows', async () => {
    const { anthropic, userId } = await keyHolder(['ai:text'], { allowedModels: ['local/text'] });
    const before = await walletState(t, userId);
    const { max_tokens: _max, ...counted } = ask;
    const weather = {
      name: 'get_weather',
      description: 'The weather in a city',
      input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } },
    };
    const plain = await anthropic.messages.countTokens(counted);
    expect(plain.input_tokens).toBe(countRequestTokens(toCountedBody(counted)));
    expect(plain.input_tokens).toBeGreaterThan(4);
    const withTools = await anthropic.messages.countTokens({ ...counted, tools: [weather] });
    expect(withTools.input_tokens).toBeGreaterThan(plain.input_tokens);
    expect(await walletState(t, userId)).toEqual(before);
    expect(await t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId))).toEqual([]);

    const other = await anthropic.messages.countTokens({ ...counted, model: 'local/vision' }).catch((err: unknown) => err);
    expect(other).toBeInstanceOf(Anthropic.PermissionDeniedError);
    const unknown = await (await keyHolder()).anthropic.messages.countTokens({ ...counted, model: 'nobody/nothing' }).catch((err: unknown) => err);
    expect(unknown).toBeInstanceOf(Anthropic.NotFoundError);
  });

  it('takes the key as Bearer too (authToken)', async () => {
    const { key } = await keyHolder();
    const message = await new Anthropic({ authToken: key, baseURL, maxRetries: 0 }).messages.create(ask);
    expect(message.type).toBe('message');
  });

  it("gives Anthropic's errors with the gateway's statuses", async () => {
    const { userId, key } = await keyHolder();
    await setBalance(t, userId, 0);
    // A balance that cannot pay is Anthropic's 402 billing_error, which its clients do not retry (they retry a 429).
    let attempts = 0;
    const counting = new Anthropic({ apiKey: key, baseURL, maxRetries: 2, fetch: (url, init) => (attempts++, fetch(url, init)) });
    const broke = await counting.messages.create(ask).catch((err: unknown) => err);
    expect(broke).toBeInstanceOf(Anthropic.APIError);
    expect((broke as InstanceType<typeof Anthropic.APIError>).status).toBe(402);
    expect((broke as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      type: 'error',
      error: { type: 'billing_error', message: expect.stringContaining('Top up') },
    });
    expect(attempts).toBe(1);
    expect((await walletState(t, userId)).balance).toBe(0);

    const stranger = await new Anthropic({ apiKey: 'sk_sf_nope', baseURL, maxRetries: 0 }).messages.create(ask).catch((err: unknown) => err);
    expect(stranger).toBeInstanceOf(Anthropic.AuthenticationError);

    const imageOnly = await keyHolder(['ai:image']);
    expect(await imageOnly.anthropic.messages.create(ask).catch((err: unknown) => err)).toBeInstanceOf(Anthropic.PermissionDeniedError);

    const missing = await t.app.inject({
      method: 'POST',
      url: '/anthropic/v1/messages',
      headers: { 'x-api-key': key },
      payload: { model: 'local/text', messages: [] },
    });
    expect(missing.statusCode).toBe(400);
    expect(json(missing)).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });
});
