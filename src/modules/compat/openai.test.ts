import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { usageRecords } from '../../db/schema/usage.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createApiKey, setBalance, setPlan, walletState } from '../../../test/helpers/gateway.js';

let t: TestApp;
let baseUrl: string;
beforeAll(async () => {
  t = await createTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => t?.close());

const MODEL = 'local/text';
const client = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${baseUrl}/openai/v1`, maxRetries: 0 });

/** A user on the starter plan (API access) with a key of the given scopes. */
async function keyHolder(scopes: string[] = ['ai:text']) {
  const { accessToken, user } = await signUp(t.app);
  await setPlan(t, user.id, 'starter');
  const { key } = await createApiKey(t, accessToken, scopes);
  return { accessToken, userId: user.id as string, key, openai: client(key) };
}

const usageOf = (requestId: string) => t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, requestId));
const requestIdOf = (completionId: string) => completionId.replace(/^chatcmpl-/, '');
const ask = { model: MODEL, messages: [{ role: 'user' as const, content: 'Explain how lighthouses work' }] };

describe('/openai/v1 with the official openai SDK', () => {
  it('lists the models the plan allows and retrieves one; an unknown id is a 404 in OpenAI shape', async () => {
    const { openai, userId } = await keyHolder();
    const models = await openai.models.list();
    const ids = models.data.map((m) => m.id);
    expect(ids).toContain(MODEL);
    expect(models.data[0]).toEqual({ id: expect.any(String), object: 'model', created: expect.any(Number), owned_by: expect.any(String) });
    const planId = (await t.services.subscriptions.activePlanId(userId))!;
    for (const id of ids) {
      const entry = (await t.services.catalog.getBySlug(id))!;
      expect(entry.listed).toBe(true);
      expect(await t.services.plans.isModelAllowed(planId, entry.row.id)).toBe(true);
    }
    expect(await openai.models.retrieve(MODEL)).toMatchObject({ id: MODEL, object: 'model', owned_by: 'local' });
    const missing = await openai.models.retrieve('nobody/nothing').catch((err: unknown) => err);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect(missing).toMatchObject({ status: 404, code: 'model_not_found', type: 'invalid_request_error' });
  });

  it('answers a chat completion through the gateway and meters it like /v1/ai/text', async () => {
    const { openai, userId } = await keyHolder();
    const before = await walletState(t, userId);
    const completion = await openai.chat.completions.create({ ...ask, max_completion_tokens: 64, temperature: 0.2 });
    expect(completion).toMatchObject({ object: 'chat.completion', model: MODEL, created: expect.any(Number) });
    expect(completion.id).toMatch(/^chatcmpl-/);
    const choice = completion.choices[0]!;
    expect(choice).toMatchObject({
      index: 0,
      finish_reason: expect.any(String),
      message: { role: 'assistant', content: expect.stringContaining('lighthouses') },
    });
    const usage = completion.usage as OpenAI.CompletionUsage & { tokens_charged: number };
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    expect(usage.tokens_charged).toBeGreaterThan(0);

    const records = await usageOf(requestIdOf(completion.id));
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      userId,
      operation: 'text.generate',
      status: 'SUCCESS',
      tokensConsumed: usage.tokens_charged,
      outputUnits: usage.completion_tokens,
    });
    expect(records[0]!.metadata).toMatchObject({ maxTokens: 64, apiKeyId: expect.any(String) });
    const after = await walletState(t, userId);
    expect(after.balance).toBe(before.balance - usage.tokens_charged);
    expect(after.ledgerSum).toBe(after.balance);
  });

  it('streams chat.completion.chunk events with a finish chunk, a usage chunk and [DONE]', async () => {
    const { openai, userId } = await keyHolder();
    const before = await walletState(t, userId);
    const stream = await openai.chat.completions.create({ ...ask, stream: true, stream_options: { include_usage: true } });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toContain('lighthouses');
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === MODEL)).toBe(true);
    const finish = chunks.at(-2)!;
    expect(finish.choices[0]).toMatchObject({ finish_reason: 'stop', delta: {} });
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    const usage = last.usage as OpenAI.CompletionUsage & { tokens_charged: number };
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);

    const records = await usageOf(requestIdOf(last.id));
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ status: 'SUCCESS', tokensConsumed: usage.tokens_charged });
    const after = await walletState(t, userId);
    expect(after.balance).toBe(before.balance - usage.tokens_charged);
    expect(after.ledgerSum).toBe(after.balance);
  });

  it('sends no usage chunk without include_usage, and ends with [DONE]', async () => {
    const { key } = await keyHolder();
    const response = await fetch(`${baseUrl}/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...ask, stream: true }),
    });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const body = await response.text();
    expect(body.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(body).not.toContain('"usage"');
  });

  it('replays an Idempotency-Key: the same completion, charged once', async () => {
    const { openai, userId } = await keyHolder();
    const headers = { 'Idempotency-Key': `openai-${Date.now()}` };
    const first = await openai.chat.completions.create(ask, { headers });
    const { data: second, response } = await openai.chat.completions.create(ask, { headers }).withResponse();
    expect(response.headers.get('idempotent-replayed')).toBe('true');
    expect(second.id).toBe(first.id);
    expect(second.choices[0]!.message.content).toBe(first.choices[0]!.message.content);
    expect(await usageOf(requestIdOf(first.id))).toHaveLength(1);
    const state = await walletState(t, userId);
    expect(state.ledgerSum).toBe(state.balance);
  });

  it('replays a streamed completion for the same Idempotency-Key, charged once', async () => {
    const { openai, userId } = await keyHolder();
    const headers = { 'Idempotency-Key': `openai-stream-${Date.now()}` };
    const collect = async () => {
      const chunks: OpenAI.ChatCompletionChunk[] = [];
      const stream = await openai.chat.completions.create({ ...ask, stream: true, stream_options: { include_usage: true } }, { headers });
      for await (const chunk of stream) chunks.push(chunk);
      return { text: chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), last: chunks.at(-1)! };
    };
    const first = await collect();
    const replay = await collect();
    expect(replay.text).toBe(first.text);
    expect(replay.last.id).toBe(first.last.id);
    expect(replay.last.usage).toEqual(first.last.usage);
    expect(await usageOf(requestIdOf(first.last.id))).toHaveLength(1);
    const state = await walletState(t, userId);
    expect(state.ledgerSum).toBe(state.balance);
  });

  it('gives OpenAI errors: 429 insufficient_quota, 401 invalid_api_key, 403 for a missing scope, 400 with the param', async () => {
    const { openai, userId } = await keyHolder();
    await setBalance(t, userId, 0);
    const broke = await openai.chat.completions.create(ask).catch((err: unknown) => err);
    expect(broke).toBeInstanceOf(OpenAI.RateLimitError);
    expect(broke).toMatchObject({ status: 429, code: 'insufficient_quota', type: 'insufficient_quota' });

    const stranger = await client('sk_sf_not-a-real-key')
      .chat.completions.create(ask)
      .catch((err: unknown) => err);
    expect(stranger).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(stranger).toMatchObject({ status: 401, code: 'invalid_api_key', type: 'invalid_request_error' });

    const imageOnly = await keyHolder(['ai:image']);
    const denied = await imageOnly.openai.chat.completions.create(ask).catch((err: unknown) => err);
    expect(denied).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((await imageOnly.openai.models.list()).data.length).toBeGreaterThan(0);

    const bad = await openai.chat.completions.create({ ...ask, max_tokens: 0 }).catch((err: unknown) => err);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect(bad).toMatchObject({ status: 400, type: 'invalid_request_error', param: 'max_tokens' });
    expect(await usageOf('none')).toHaveLength(0);
  });

  it('keeps the spec envelope on /v1 and answers OpenAI-shaped 404s under the prefix', async () => {
    const missing = await t.app.inject({ method: 'GET', url: '/openai/v1/nothing-here' });
    expect(missing.statusCode).toBe(404);
    expect(json(missing).error).toMatchObject({ type: 'invalid_request_error', code: 'not_found', param: null });
    const spec = await t.app.inject({ method: 'POST', url: '/v1/ai/text', payload: ask });
    expect(spec.statusCode).toBe(401);
    expect(json(spec)).toEqual({ error: { code: 'UNAUTHORIZED', message: expect.any(String), details: null } });
    // The shared error schemas leave the spec's strict validation as it was: an unknown field is still a 400.
    const { accessToken } = await signUp(t.app);
    const strict = await t.app.inject({ method: 'POST', url: '/v1/ai/text', headers: bearer(accessToken), payload: { ...ask, userId: 'someone' } });
    expect(strict.statusCode).toBe(400);
    expect(json(strict).error.details).toEqual([expect.objectContaining({ field: 'userId' })]);
  });

  it('takes an access token as well as a key', async () => {
    const { accessToken } = await signUp(t.app);
    const response = await t.app.inject({ method: 'POST', url: '/openai/v1/chat/completions', headers: bearer(accessToken), payload: ask });
    expect(response.statusCode).toBe(200);
    expect(json(response).object).toBe('chat.completion');
  });
});

describe('GET /openai/v1/key', () => {
  it('describes the calling key, its wallet and its spend today and this month', async () => {
    const { openai, key, userId } = await keyHolder(['ai:text', 'jobs:read']);
    const completion = await openai.chat.completions.create(ask);
    const charged = (completion.usage as unknown as { tokens_charged: number }).tokens_charged;
    const response = await fetch(`${baseUrl}/openai/v1/key`, { headers: { authorization: `Bearer ${key}` } });
    expect(response.status).toBe(200);
    const info = (await response.json()) as Record<string, any>;
    const balance = await t.services.wallet.balance({ userId });
    expect(info).toEqual({
      label: 'test key',
      scopes: ['ai:text', 'jobs:read'],
      expiresAt: null,
      createdAt: expect.any(String),
      balance: { tokens: balance.tokens, credits: balance.credits },
      spend: { today: { tokens: charged, requests: 1 }, month: { tokens: charged, requests: 1 } },
    });
  });

  it('works for a key of any scope and refuses an access token', async () => {
    const { key, accessToken } = await keyHolder(['jobs:read']);
    const ok = await t.app.inject({ method: 'GET', url: '/openai/v1/key', headers: bearer(key) });
    expect(ok.statusCode).toBe(200);
    expect(json(ok).scopes).toEqual(['jobs:read']);
    const token = await t.app.inject({ method: 'GET', url: '/openai/v1/key', headers: bearer(accessToken) });
    expect(token.statusCode).toBe(400);
    expect(json(token).error).toMatchObject({ type: 'invalid_request_error', code: 'bad_request' });
  });
});
