import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { adminAuditLog } from '../src/db/schema/audit.js';
import { usageRecords } from '../src/db/schema/usage.js';
import { startFakeAnthropic } from '../src/modules/gateway/providers/anthropic/anthropic.fake.js';
import { startFakeOpenAi, type Decide, type FakeUpstream } from './helpers/fake-upstreams.js';
import { createApiKey, ledgerOf, parseSse, providerEnv, setPlan, walletState } from './helpers/gateway.js';
import { bearer, createTestApp, json, signUp, signUpAs, type TestApp } from './helpers/test-app.js';

/**
 * Fallbacks across providers: when every upstream account of a model's provider fails with a retryable
 * error, the call moves to the operator's next fallback the caller may use, priced at the model that served it.
 */
let openai: FakeUpstream;
let anthropic: FakeUpstream;
let t: TestApp;
let decideOpenAi: Decide = () => ({ kind: 'error', status: 503, message: 'overloaded' });
const decideAnthropic: Decide = () => ({ kind: 'ok', text: 'Served by the fallback.' });
let operator: string;

const PRIMARY = 'openai/gpt-4o-mini';
const FALLBACK = 'anthropic/claude-haiku-4-5';
const messages = [{ role: 'user' as const, content: 'Say hi.' }];

beforeAll(async () => {
  openai = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : decideOpenAi(request)));
  anthropic = await startFakeAnthropic((request) => (request.method === 'GET' ? { kind: 'ok' } : decideAnthropic(request)));
  t = await createTestApp({
    env: {
      ...providerEnv('OPENAI', openai.baseUrl, ['sk-fallback-openai-1', 'sk-fallback-openai-2']),
      ...providerEnv('ANTHROPIC', anthropic.origin, ['sk-ant-fallback-1']),
    },
  });
  operator = (await signUpAs(t, 'SUPER_ADMIN')).accessToken;
});
afterAll(async () => {
  await t?.close();
  await openai?.close();
  await anthropic?.close();
});

const modelId = async (slug: string) => (await t.services.catalog.getBySlug(slug))!.row.id;
const setFallbacks = async (slug: string, fallbacks: string[], token = operator) =>
  t.app.inject({ method: 'PUT', url: `/v1/admin/models/${await modelId(slug)}/fallbacks`, headers: bearer(token), payload: { fallbacks, reason: 'test' } });

async function caller() {
  const signed = await signUp(t.app);
  await setPlan(t, signed.user.id, 'starter');
  return signed;
}

describe('model fallbacks (admin)', () => {
  it("sets, reads and audits a model's ordered fallbacks; refuses bad ones; only super admins change them", async () => {
    const set = await setFallbacks(PRIMARY, [FALLBACK]);
    expect(set.statusCode, set.body).toBe(200);
    expect(json(set)).toEqual({
      modelId: await modelId(PRIMARY),
      slug: PRIMARY,
      fallbacks: [{ position: 0, modelId: await modelId(FALLBACK), slug: FALLBACK }],
    });
    const read = await t.app.inject({ method: 'GET', url: `/v1/admin/models/${await modelId(PRIMARY)}/fallbacks`, headers: bearer(operator) });
    expect(json(read)).toEqual(json(set));
    const [audit] = await t.platform.db
      .select()
      .from(adminAuditLog)
      .where(and(eq(adminAuditLog.action, 'model.fallbacks.set'), eq(adminAuditLog.targetId, await modelId(PRIMARY))));
    expect(audit).toMatchObject({ targetType: 'model', before: [], after: [FALLBACK], reason: 'test' });

    for (const [fallbacks, field] of [
      [['nope/none'], 'fallbacks.0'],
      [[PRIMARY], 'fallbacks.0'],
    ] as const) {
      const refused = await setFallbacks(PRIMARY, [...fallbacks]);
      expect(refused.statusCode).toBe(400);
      expect(json(refused).error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
    }
    expect((await setFallbacks(PRIMARY, [FALLBACK, FALLBACK])).statusCode).toBe(400);
    const unknown = await t.app.inject({ method: 'GET', url: '/v1/admin/models/01950000-0000-7000-8000-000000000000/fallbacks', headers: bearer(operator) });
    expect(unknown.statusCode).toBe(404);
    const admin = (await signUpAs(t, 'ADMIN')).accessToken;
    expect((await setFallbacks(PRIMARY, [], admin)).statusCode).toBe(403);
    expect((await t.app.inject({ method: 'GET', url: `/v1/admin/models/${await modelId(PRIMARY)}/fallbacks`, headers: bearer(admin) })).statusCode).toBe(200);
    expect(
      json(await t.app.inject({ method: 'GET', url: `/v1/admin/models/${await modelId(PRIMARY)}/fallbacks`, headers: bearer(operator) })).fallbacks,
    ).toHaveLength(1);
  });
});

describe('a call when the primary provider is down', () => {
  it('moves to the fallback when every account answers 503, priced at the fallback and recorded under it', async () => {
    expect((await setFallbacks(PRIMARY, [FALLBACK])).statusCode).toBe(200);
    const { accessToken, user } = await caller();
    const before = openai.calls().length;
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/text',
      headers: bearer(accessToken),
      payload: { model: PRIMARY, messages, maxTokens: 100 },
    });
    expect(response.statusCode, response.body).toBe(200);
    const body = json(response);
    expect(body).toMatchObject({ text: 'Served by the fallback.', model: FALLBACK });
    // Both OpenAI accounts were tried before falling back.
    expect(openai.calls().length - before).toBe(2);

    const [record] = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, body.requestId));
    expect(record).toMatchObject({ status: 'SUCCESS', modelId: await modelId(FALLBACK), tokensConsumed: body.usage.creditsConsumed });
    expect(record!.metadata).toMatchObject({ modelSlug: FALLBACK, fallbackFrom: PRIMARY });
    const fallbackModel = await t.services.catalog.resolveForGateway(FALLBACK);
    const price = await t.services.catalog.priceUsage(fallbackModel, { inputTokens: body.usage.inputTokens, outputTokens: body.usage.outputTokens });
    expect(body.usage.creditsConsumed).toBe(price.tokens);
    const ledger = await ledgerOf(t, body.requestId);
    expect(-ledger.reduce((sum, row) => sum + row.amount, 0)).toBe(body.usage.creditsConsumed);
    const wallet = await walletState(t, user.id);
    expect(wallet.balance).toBe(wallet.ledgerSum);
  });

  it('skips a fallback the key may not use, and answers the primary error when none is left', async () => {
    expect((await setFallbacks(PRIMARY, [FALLBACK])).statusCode).toBe(200);
    const { accessToken, user } = await caller();
    const key = await createApiKey(t, accessToken, ['ai:text'], { allowedModels: [PRIMARY] });
    const before = anthropic.calls().length;
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/text',
      headers: bearer(key.key),
      payload: { model: PRIMARY, messages, maxTokens: 100 },
    });
    expect(response.statusCode).toBe(503);
    expect(json(response).error.code).toBe('PROVIDER_UNAVAILABLE');
    expect(anthropic.calls().length).toBe(before);
    const records = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, user.id));
    expect(records.map((r) => r.status)).toEqual(['FAILED']);
    const wallet = await walletState(t, user.id);
    expect(wallet.balance).toBe(wallet.ledgerSum);
  });

  it('does not fall back for an error that is not the provider being down', async () => {
    expect((await setFallbacks(PRIMARY, [FALLBACK])).statusCode).toBe(200);
    const { accessToken } = await caller();
    decideOpenAi = () => ({ kind: 'error', status: 400, message: 'bad request' });
    try {
      const before = anthropic.calls().length;
      const response = await t.app.inject({
        method: 'POST',
        url: '/v1/ai/text',
        headers: bearer(accessToken),
        payload: { model: PRIMARY, messages, maxTokens: 100 },
      });
      expect(response.statusCode).toBe(400);
      expect(anthropic.calls().length).toBe(before);
    } finally {
      decideOpenAi = () => ({ kind: 'error', status: 503, message: 'overloaded' });
    }
  });

  it('falls back for a stream before its first byte, and never after it', async () => {
    expect((await setFallbacks(PRIMARY, [FALLBACK])).statusCode).toBe(200);
    const { accessToken } = await caller();
    const streamed = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/text',
      headers: bearer(accessToken),
      payload: { model: PRIMARY, messages, maxTokens: 100, stream: true },
    });
    expect(streamed.statusCode, streamed.body).toBe(200);
    const events = parseSse(streamed.body);
    expect(
      events
        .filter((e) => e.type === 'text')
        .map((e) => e.delta)
        .join(''),
    ).toBe('Served by the fallback.');
    const requestId = String(streamed.headers['x-ai-request-id']);
    const [record] = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, requestId));
    expect(record).toMatchObject({ status: 'SUCCESS', modelId: await modelId(FALLBACK) });

    // The primary breaks after sending text: the stream stays with it (billed for what was delivered), no fallback.
    decideOpenAi = () => ({ kind: 'midway', text: 'alpha beta gamma delta epsilon zeta', afterChunks: 3, how: 'error-event' });
    try {
      const before = anthropic.calls().length;
      const broken = await t.app.inject({
        method: 'POST',
        url: '/v1/ai/text',
        headers: bearer(accessToken),
        payload: { model: PRIMARY, messages, maxTokens: 100, stream: true },
      });
      expect(broken.statusCode).toBe(200);
      const brokenEvents = parseSse(broken.body);
      expect(brokenEvents.some((e) => e.type === 'text')).toBe(true);
      expect(brokenEvents.at(-1)!.type).toBe('error');
      expect(anthropic.calls().length).toBe(before);
      const [partial] = await t.platform.db
        .select()
        .from(usageRecords)
        .where(eq(usageRecords.requestId, String(broken.headers['x-ai-request-id'])));
      expect(partial).toMatchObject({ status: 'PARTIAL', modelId: await modelId(PRIMARY) });
    } finally {
      decideOpenAi = () => ({ kind: 'error', status: 503, message: 'overloaded' });
    }
  });
});
