import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { usageRecords } from '../../db/schema/usage.js';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createApiKey, providerEnv, setPlan, walletState } from '../../../test/helpers/gateway.js';
import { startFakeOpenAi, type Decide, type FakeUpstream } from '../../../test/helpers/fake-upstreams.js';

let fake: FakeUpstream;
let t: TestApp;
let decide: Decide = () => ({ kind: 'ok' });
let openai: OpenAI;
let userId: string;
let key: string;
let baseUrl: string;

beforeAll(async () => {
  fake = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : decide(request)));
  t = await createTestApp({ env: providerEnv('OPENAI', fake.baseUrl, ['sk-compat-0001']) });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { accessToken, user } = await signUp(t.app);
  userId = user.id;
  await setPlan(t, userId, 'starter');
  ({ key } = await createApiKey(t, accessToken, ['ai:text']));
  baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  openai = new OpenAI({ apiKey: key, baseURL: `${baseUrl}/openai/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const ask = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user' as const, content: 'one two three four five six seven eight' }] };

describe('/openai/v1 chat completions over a real upstream', () => {
  it('a stream that breaks midway ends with an error the SDK raises; the text delivered is billed once', async () => {
    decide = () => ({ kind: 'midway', afterChunks: 3, how: 'disconnect' });
    const stream = await openai.chat.completions.create({ ...ask, stream: true, stream_options: { include_usage: true } });
    const received: string[] = [];
    const failure = await (async () => {
      for await (const chunk of stream) received.push(chunk.choices[0]?.delta.content ?? '');
    })().catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect(received.join('')).not.toBe('');
    const records = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId));
    expect(records.map((r) => r.status)).toEqual(['PARTIAL']);
    expect(records[0]!.metadata).toMatchObject({ usageSource: 'counted' });
    const state = await walletState(t, userId);
    expect(state.ledgerSum).toBe(state.balance);
  });

  it('an upstream that refuses the request is a 400 BadRequestError in OpenAI shape, refunded', async () => {
    decide = () => ({ kind: 'error', status: 400, message: 'bad things' });
    const before = await walletState(t, userId);
    const err = await openai.chat.completions.create(ask).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err).toMatchObject({ status: 400, type: 'invalid_request_error', code: 'bad_request' });
    expect((await walletState(t, userId)).balance).toBe(before.balance);
  });
});

describe('/anthropic/v1 messages over a real upstream', () => {
  it('a stream that breaks midway ends with an error event the SDK raises; the delivered text is billed once', async () => {
    decide = () => ({ kind: 'midway', afterChunks: 3, how: 'disconnect' });
    const before = (await t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId))).length;
    const anthropic = new Anthropic({ apiKey: key, baseURL: `${baseUrl}/anthropic`, maxRetries: 0 });
    const failure = await anthropic.messages
      .stream({ ...ask, max_tokens: 200 })
      .finalMessage()
      .catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(Anthropic.APIError);
    const records = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId));
    expect(records).toHaveLength(before + 1);
    expect(records.at(-1)!.status).toBe('PARTIAL');
    const state = await walletState(t, userId);
    expect(state.ledgerSum).toBe(state.balance);
  });
});
