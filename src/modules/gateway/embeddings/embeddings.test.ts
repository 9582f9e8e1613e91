import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { generations } from '../../../db/schema/library.js';
import { providerAccounts } from '../../../db/schema/gateway.js';
import { usageRecords } from '../../../db/schema/usage.js';
import { bearer, createTestApp, json, signUp, signUpAs, type TestApp } from '../../../../test/helpers/test-app.js';
import { createApiKey, providerEnv, setPlan, walletState } from '../../../../test/helpers/gateway.js';
import { OPENAI_EMBEDDING_ERRORS, fakeVector, startFakeEmbeddings, wordCount, type EmbeddingsFake } from '../../../../test/helpers/fakes/openai-embeddings.js';
import { decodeVector } from './vectors.js';
import { localEmbedding } from '../providers/local/embed.js';
import { countTextTokens } from '../text/tokens.js';

// POST /v1/ai/embeddings through the whole service: the built-in model, OpenAI and Google (OpenAI-compatible) behind
// fakes, metering, Idempotency-Key, scopes, key controls, failover and fallbacks.

let t: TestApp;
let openai: EmbeddingsFake;
let google: EmbeddingsFake;

beforeAll(async () => {
  openai = await startFakeEmbeddings('openai');
  google = await startFakeEmbeddings('google');
  t = await createTestApp({
    env: {
      ...providerEnv('OPENAI', openai.baseUrl, ['good-openai-1']),
      ...providerEnv('GOOGLE', google.baseUrl, ['bad', 'good']),
      ALLOW_PRIVATE_NETWORK: 'true',
    },
  });
});
afterAll(async () => {
  await t?.close();
  await openai?.close();
  await google?.close();
});

const embed = (token: string, payload: Record<string, unknown>, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url: '/v1/ai/embeddings', headers: { ...bearer(token), ...headers }, payload });
const usageOf = (requestId: string) => t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, requestId));
const priced = async (slug: string, inputTokens: number) =>
  (await t.services.catalog.priceUsage(await t.services.catalog.resolveForGateway(slug), { inputTokens, outputTokens: 0 })).tokens;
const float32 = (vector: number[]) => vector.map((value) => Math.fround(value));
const norm = (vector: number[]) => Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));

describe('POST /v1/ai/embeddings with local/embed', () => {
  it('embeds a text, charges the priced input tokens once with a usage record, and saves nothing to the library', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const text = 'Lighthouses guide ships along dangerous coasts';
    const response = await embed(accessToken, { model: 'local/embed', input: text });
    expect(response.statusCode, response.body).toBe(200);
    const body = json(response);
    const inputTokens = countTextTokens(text);
    expect(body).toMatchObject({
      model: 'local/embed',
      dimensions: 256,
      usage: { inputTokens, creditsConsumed: await priced('local/embed', inputTokens) },
      requestId: expect.any(String),
    });
    expect(response.headers['x-ai-request-id']).toBe(body.requestId);
    expect(body.embeddings).toEqual([{ index: 0, embedding: float32(localEmbedding(text)) }]);

    const [record] = await usageOf(body.requestId);
    expect(record).toMatchObject({
      userId: user.id,
      operation: 'embeddings.create',
      status: 'SUCCESS',
      inputUnits: inputTokens,
      outputUnits: 0,
      tokensConsumed: body.usage.creditsConsumed,
    });
    expect(record!.metadata).toMatchObject({
      modelSlug: 'local/embed',
      inputs: 1,
      dimensions: 256,
      usageSource: 'provider',
      tokens: { input: inputTokens, output: 0 },
    });
    const after = await walletState(t, user.id);
    expect(after.balance).toBe(before.balance - body.usage.creditsConsumed);
    expect(after.ledgerSum).toBe(after.balance);
    expect(await t.platform.db.select().from(generations).where(eq(generations.userId, user.id))).toEqual([]);
  });

  it('embeds a batch in order, shortened with dimensions, as base64 float32s on request', async () => {
    const { accessToken } = await signUp(t.app);
    const input = ['the cat sat on the mat', 'stock markets fell', 'baking sourdough bread'];
    const response = await embed(accessToken, { model: 'local/embed', input, dimensions: 32, encodingFormat: 'base64' });
    expect(response.statusCode, response.body).toBe(200);
    const body = json(response);
    expect(body.dimensions).toBe(32);
    expect(body.embeddings.map((e: { index: number }) => e.index)).toEqual([0, 1, 2]);
    for (const [i, { embedding }] of body.embeddings.entries()) {
      expect(typeof embedding).toBe('string');
      const vector = decodeVector(embedding);
      expect(vector).toHaveLength(32);
      expect(norm(vector)).toBeCloseTo(1, 5);
      const expected = localEmbedding(input[i]!, 32);
      vector.forEach((value, k) => expect(value).toBeCloseTo(expected[k]!, 6));
    }
  });

  it('replays an Idempotency-Key with the same vectors, in either format, charging once', async () => {
    const { accessToken, user } = await signUp(t.app);
    const payload = { model: 'local/embed', input: ['one idempotent text', 'and another'] };
    const first = await embed(accessToken, payload, { 'idempotency-key': 'embed-key-1' });
    const balance = (await walletState(t, user.id)).balance;
    const again = await embed(accessToken, payload, { 'idempotency-key': 'embed-key-1' });
    const asBase64 = await embed(accessToken, { ...payload, encodingFormat: 'base64' }, { 'idempotency-key': 'embed-key-1' });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.headers['idempotent-recomputed']).toBeUndefined(); // two vectors are kept whole
    expect(json(again)).toEqual(json(first));
    expect(json(asBase64).embeddings.map((e: { embedding: string }) => decodeVector(e.embedding))).toEqual(
      json(first).embeddings.map((e: { embedding: number[] }) => e.embedding),
    );
    expect((await walletState(t, user.id)).balance).toBe(balance);
    expect(await usageOf(json(first).requestId)).toHaveLength(1);
    const other = await embed(accessToken, { ...payload, input: ['something else'] }, { 'idempotency-key': 'embed-key-1' });
    expect(other.statusCode).toBe(409);
  });

  it('refuses a model that does not embed, bad inputs and inputs longer than the model reads; an embedding model cannot write text', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const text = await embed(accessToken, { model: 'local/text', input: 'x' });
    expect(text.statusCode).toBe(400);
    expect(json(text).error.message).toBe(
      'The model "local/text" is a TEXT model; embeddings need an EMBEDDING model. Pick one from GET /v1/models?type=EMBEDDING.',
    );
    const emptyText = await embed(accessToken, { model: 'local/embed', input: ['fine', ''] });
    expect(emptyText.statusCode).toBe(400);
    const tooMany = await embed(accessToken, { model: 'local/embed', input: Array.from({ length: 2049 }, () => 'x') });
    expect(tooMany.statusCode).toBe(400);
    const long = await embed(accessToken, { model: 'local/embed', input: ['short', 'lighthouse '.repeat(9000)] });
    expect(long.statusCode).toBe(400);
    expect(json(long).error).toMatchObject({ message: expect.stringContaining('input[1] is at least 9000 tokens'), details: [{ field: 'input.1' }] });
    const wide = await embed(accessToken, { model: 'local/embed', input: 'x', dimensions: 512 });
    expect(wide.statusCode).toBe(400);
    expect(json(wide).error.message).toContain('at most 256 dimensions');
    const asText = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/text',
      headers: bearer(accessToken),
      payload: { model: 'local/embed', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(asText.statusCode).toBe(400);
    expect(json(asText).error.message).toContain('is a EMBEDDING model');
    expect(await walletState(t, user.id)).toEqual(before);
  });

  it('takes API keys with ai:embed or ai:text, refuses others, and applies the key’s model allow-list', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setPlan(t, user.id, 'starter');
    const payload = { model: 'local/embed', input: 'scoped' };
    for (const scopes of [['ai:embed'], ['ai:text']]) {
      const { key } = await createApiKey(t, accessToken, scopes);
      expect((await embed(key, payload)).statusCode, scopes[0]).toBe(200);
    }
    const { key: imageKey } = await createApiKey(t, accessToken, ['ai:image']);
    const refused = await embed(imageKey, payload);
    expect(refused.statusCode).toBe(403);
    expect(json(refused).error).toMatchObject({ code: 'FORBIDDEN', details: { requiredScope: 'ai:embed', acceptedScopes: ['ai:embed', 'ai:text'] } });
    const { key: narrow } = await createApiKey(t, accessToken, ['ai:embed'], { allowedModels: ['local/text'] });
    const notAllowed = await embed(narrow, payload);
    expect(notAllowed.statusCode).toBe(403);
    expect(json(notAllowed).error.code).toBe('MODEL_NOT_ALLOWED_FOR_KEY');
  });
});

describe('POST /v1/ai/embeddings over providers', () => {
  it('forwards the request to OpenAI and charges its reported usage', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const input = ['alpha beta gamma', 'delta'];
    const from = openai.calls().length;
    const response = await embed(accessToken, { model: 'openai/text-embedding-3-small', input, dimensions: 64, user: 'end-user-1' });
    expect(response.statusCode, response.body).toBe(200);
    expect(
      openai
        .calls()
        .slice(from)
        .map((c) => c.body),
    ).toEqual([{ model: 'text-embedding-3-small', input, dimensions: 64, user: 'end-user-1' }]);
    const body = json(response);
    const charged = await priced('openai/text-embedding-3-small', wordCount(input));
    expect(body.usage).toEqual({ inputTokens: wordCount(input), creditsConsumed: charged });
    expect(body.embeddings[1].embedding).toHaveLength(64);
    expect(body.embeddings[1].embedding[0]).toBeCloseTo(fakeVector('delta', 1536).slice(0, 64)[0]! / norm(fakeVector('delta', 1536).slice(0, 64)), 6);
    expect((await usageOf(body.requestId))[0]!.metadata).toMatchObject({ usageSource: 'provider' });
    expect((await walletState(t, user.id)).balance).toBe(before.balance - charged);
  });

  it('sends Google more than 100 texts in pieces and charges its own count when Google reports none', async () => {
    const { accessToken } = await signUp(t.app);
    const input = Array.from({ length: 120 }, (_, i) => `document ${i} about lighthouses`);
    const from = google.calls().length;
    const response = await embed(accessToken, { model: 'google/gemini-embedding-001', input, dimensions: 16 });
    expect(response.statusCode, response.body).toBe(200);
    const pieces = google
      .calls()
      .slice(from)
      .filter((c) => c.headers.authorization === 'Bearer good');
    expect(pieces.map((c) => (c.body as { input: string[] }).input.length)).toEqual([100, 20]);
    const inputTokens = input.reduce((sum, text) => sum + countTextTokens(text), 0);
    const body = json(response);
    expect(body.usage).toEqual({ inputTokens, creditsConsumed: await priced('google/gemini-embedding-001', inputTokens) });
    expect(norm(body.embeddings[119].embedding)).toBeCloseTo(1, 5);
    expect((await usageOf(body.requestId))[0]!.metadata).toMatchObject({ usageSource: 'counted', inputs: 120 });
  });

  it('fails over from the account whose key Google rejects to the next one', async () => {
    await t.platform.db
      .update(providerAccounts)
      .set({ status: 'ACTIVE', consecutiveFailures: 0, lastFailureAt: null })
      .where(eq(providerAccounts.providerSlug, 'google'));
    t.services.gateway.pool.refresh('google');
    const { accessToken } = await signUp(t.app);
    const keys: string[][] = [];
    for (let i = 0; i < 2; i++) {
      const from = google.calls().length;
      const response = await embed(accessToken, { model: 'google/gemini-embedding-001', input: `failover ${i}` });
      expect(response.statusCode, response.body).toBe(200);
      keys.push(
        google
          .calls()
          .slice(from)
          .map((c) => String(c.headers.authorization).replace('Bearer ', '')),
      );
    }
    expect(keys).toContainEqual(['bad', 'good']);
    const bad = (await t.services.gateway.pool.accounts('google')).find((a) => a.keyHint === 'bad');
    expect(bad).toMatchObject({ status: 'FAILING', lastErrorCode: 'API_KEY_INVALID' });
  });

  it('a key refused on every account is a 503, a model the project may not use a 400 with OpenAI’s words; both refunded', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    openai.decide(() => ({ kind: 'error', status: 401, body: OPENAI_EMBEDDING_ERRORS.badKey('good-openai-1') }));
    const badKey = await embed(accessToken, { model: 'openai/text-embedding-3-small', input: 'x' });
    expect(badKey.statusCode).toBe(503);
    expect(json(badKey).error).toMatchObject({ code: 'PROVIDER_UNAVAILABLE', details: { upstream: { code: 'invalid_api_key', status: 401 } } });
    await t.platform.db
      .update(providerAccounts)
      .set({ status: 'ACTIVE', consecutiveFailures: 0, lastFailureAt: null })
      .where(eq(providerAccounts.providerSlug, 'openai'));
    t.services.gateway.pool.refresh('openai');
    openai.decide(() => ({ kind: 'error', status: 403, body: OPENAI_EMBEDDING_ERRORS.noModelAccess('text-embedding-3-large') }));
    const refused = await embed(accessToken, { model: 'openai/text-embedding-3-large', input: 'x' });
    openai.decide(() => ({ kind: 'default' }));
    expect(refused.statusCode).toBe(400);
    expect(json(refused).error.message).toContain('does not have access to model `text-embedding-3-large`');
    expect(await walletState(t, user.id)).toEqual(before);
    const records = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, user.id));
    expect(records.map((r) => [r.operation, r.status, r.tokensConsumed])).toEqual([
      ['embeddings.create', 'FAILED', 0],
      ['embeddings.create', 'FAILED', 0],
    ]);
  });

  it('moves to the operator’s fallback model when every account of the provider fails', async () => {
    const operator = (await signUpAs(t, 'SUPER_ADMIN')).accessToken;
    const modelId = (await t.services.catalog.getBySlug('openai/text-embedding-3-small'))!.row.id;
    const set = await t.app.inject({
      method: 'PUT',
      url: `/v1/admin/models/${modelId}/fallbacks`,
      headers: bearer(operator),
      payload: { fallbacks: ['local/embed'], reason: 'test' },
    });
    expect(set.statusCode, set.body).toBe(200);
    await t.platform.db
      .update(providerAccounts)
      .set({ status: 'ACTIVE', consecutiveFailures: 0, lastFailureAt: null })
      .where(eq(providerAccounts.providerSlug, 'openai'));
    t.services.gateway.pool.refresh('openai');
    openai.decide(() => ({ kind: 'error', status: 500, body: OPENAI_EMBEDDING_ERRORS.server }));
    try {
      const { accessToken } = await signUp(t.app);
      const response = await embed(accessToken, { model: 'openai/text-embedding-3-small', input: 'fallback text' });
      expect(response.statusCode, response.body).toBe(200);
      expect(json(response)).toMatchObject({ model: 'local/embed', dimensions: 256 });
      expect((await usageOf(json(response).requestId))[0]!.metadata).toMatchObject({ modelSlug: 'local/embed', fallbackFrom: 'openai/text-embedding-3-small' });
    } finally {
      openai.decide(() => ({ kind: 'default' }));
      await t.app.inject({
        method: 'PUT',
        url: `/v1/admin/models/${modelId}/fallbacks`,
        headers: bearer(operator),
        payload: { fallbacks: [], reason: 'test' },
      });
    }
  });
});
