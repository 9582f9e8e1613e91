import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejection } from '../../../../test/helpers/rejection.js';
import {
  GOOGLE_EMBEDDING_ERRORS,
  OPENAI_EMBEDDING_ERRORS,
  fakeVector,
  startFakeEmbeddings,
  wordCount,
  type EmbeddingsFake,
} from '../../../../test/helpers/fakes/openai-embeddings.js';
import { countTextTokens } from '../text/tokens.js';
import { LOCAL_EMBEDDING_DIMENSIONS, localEmbedding } from './local/embed.js';
import { createLocalProvider } from './local/text.js';
import { createOpenAiAdapter } from './openai-compatible/adapter.js';
import { UpstreamError, type UpstreamCredential } from './types.js';

// The `embed` method of the built-in provider and of the OpenAI-compatible adapter (OpenAI itself and Google's
// OpenAI-compatible endpoint), against fakes that check what they receive.

const upstreamError = (promise: Promise<unknown>) => rejection(promise, UpstreamError);
const dot = (a: number[], b: number[]) => a.reduce((sum, value, i) => sum + value * b[i]!, 0);
const norm = (vector: number[]) => Math.sqrt(dot(vector, vector));

describe('local embed', () => {
  const local = createLocalProvider();
  const credential: UpstreamCredential = { accountId: 'local', providerSlug: 'local', apiKey: null, baseUrl: null, timeoutMs: 1000 };

  it('answers deterministic unit vectors of 256 dimensions with real token counts', async () => {
    const input = ['How to bake sourdough bread at home', 'The cat sat on the mat'];
    const first = await local.embed!(credential, { model: 'local-embed', input });
    const again = await local.embed!(credential, { model: 'local-embed', input });
    expect(first).toEqual(again);
    expect(first.vectors).toHaveLength(2);
    for (const vector of first.vectors) {
      expect(vector).toHaveLength(LOCAL_EMBEDDING_DIMENSIONS);
      expect(norm(vector)).toBeCloseTo(1, 10);
    }
    expect(first.usage).toEqual({ inputTokens: countTextTokens(input[0]!) + countTextTokens(input[1]!) });
  });

  it('puts texts that share words and word parts closer than unrelated ones', () => {
    const query = localEmbedding('baking bread');
    const related = dot(query, localEmbedding('How to bake sourdough bread at home'));
    const unrelated = dot(query, localEmbedding('Stock markets fell sharply on Monday'));
    expect(related).toBeGreaterThan(0.3);
    expect(unrelated).toBeLessThan(0.1);
    // Accents and case do not matter.
    expect(dot(localEmbedding('Crème Brûlée'), localEmbedding('creme brulee'))).toBeCloseTo(1, 10);
  });

  it('shortens with dimensions (the prefix, normalised again) and refuses more than it makes', async () => {
    const { vectors } = await local.embed!(credential, { model: 'local-embed', input: ['lighthouses guide ships'], dimensions: 64 });
    expect(vectors[0]).toHaveLength(64);
    expect(norm(vectors[0]!)).toBeCloseTo(1, 10);
    const full = localEmbedding('lighthouses guide ships');
    const head = full.slice(0, 64);
    expect(vectors[0]![5]! / vectors[0]![9]!).toBeCloseTo(head[5]! / head[9]!, 10);
    const refused = await upstreamError(local.embed!(credential, { model: 'local-embed', input: ['x'], dimensions: 257 }));
    expect(refused).toMatchObject({ kind: 'bad_request', message: expect.stringContaining('at most 256') });
  });

  it('gives a text without letters or digits a vector of its own', () => {
    expect(norm(localEmbedding('!!!'))).toBeCloseTo(1, 10);
    expect(localEmbedding('!!!')).not.toEqual(localEmbedding('???'));
  });
});

describe('OpenAI embeddings', () => {
  let fake: EmbeddingsFake;
  const adapter = createOpenAiAdapter({ defaultBaseUrl: 'http://127.0.0.1:1/v1' });
  let credential: UpstreamCredential;
  beforeAll(async () => {
    fake = await startFakeEmbeddings('openai');
    credential = { accountId: 'acc-1', providerSlug: 'openai', apiKey: 'good-openai-key', baseUrl: fake.baseUrl, timeoutMs: 2000 };
  });
  afterAll(async () => fake?.close());

  it('posts the texts, dimensions and user as OpenAI takes them, and reads the vectors and the usage', async () => {
    fake.decide(() => ({ kind: 'default' }));
    const input = ['first text here', 'second one'];
    const result = await adapter.embed!(credential, { model: 'text-embedding-3-small', input, dimensions: 256, user: 'end-user-7' });
    const call = fake.calls().at(-1)!;
    expect(call.path).toBe('/v1/embeddings');
    expect(call.headers.authorization).toBe('Bearer good-openai-key');
    expect(call.body).toEqual({ model: 'text-embedding-3-small', input, dimensions: 256, user: 'end-user-7' });
    expect(call.body).not.toHaveProperty('encoding_format');
    expect(result.vectors).toHaveLength(2);
    expect(result.vectors[0]).toHaveLength(256);
    expect(result.usage).toEqual({ inputTokens: wordCount(input) });
  });

  it('keeps the input order whatever order the data comes in, and decodes base64 vectors', async () => {
    const vectors = [fakeVector('a', 4), fakeVector('b', 4)];
    const base64 = (vector: number[]) => {
      const bytes = Buffer.alloc(16);
      vector.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
      return bytes.toString('base64');
    };
    fake.decide(() => ({
      kind: 'raw',
      status: 200,
      contentType: 'application/json',
      body: Buffer.from(
        JSON.stringify({
          object: 'list',
          data: [
            { index: 1, embedding: base64(vectors[1]!) },
            { index: 0, embedding: vectors[0] },
          ],
          usage: { prompt_tokens: 2, total_tokens: 2 },
        }),
      ),
    }));
    const result = await adapter.embed!(credential, { model: 'text-embedding-3-small', input: ['a', 'b'] });
    expect(result.vectors[0]).toEqual(vectors[0]);
    expect(result.vectors[1]!.map((v) => Number(v.toFixed(6)))).toEqual(vectors[1]!.map((v) => Number(v.toFixed(6))));
  });

  it('classifies a bad key as auth, a model the project may not use as model_refused, 429 and 5xx as the account’s', async () => {
    fake.decide(() => ({ kind: 'default' }));
    expect(await upstreamError(adapter.embed!({ ...credential, apiKey: 'sk-wrong-1234' }, { model: 'text-embedding-3-small', input: ['x'] }))).toMatchObject({
      kind: 'auth',
      status: 401,
      code: 'invalid_api_key',
    });
    for (const [status, body, kind] of [
      [403, OPENAI_EMBEDDING_ERRORS.noModelAccess('text-embedding-3-large'), 'model_refused'],
      [429, OPENAI_EMBEDDING_ERRORS.rateLimit('text-embedding-3-small'), 'rate_limit'],
      [500, OPENAI_EMBEDDING_ERRORS.server, 'server'],
    ] as const) {
      fake.decide(() => ({ kind: 'error', status, body }));
      expect(await upstreamError(adapter.embed!(credential, { model: 'text-embedding-3-large', input: ['x'] })), `${status}`).toMatchObject({ kind, status });
    }
    fake.decide(() => ({ kind: 'default' }));
    const refused = await upstreamError(adapter.embed!(credential, { model: 'text-embedding-ada-002', input: ['x'], dimensions: 8 }));
    expect(refused).toMatchObject({ kind: 'bad_request', status: 400, message: 'This model does not support specifying dimensions.' });
  });

  it('gives up on a provider that does not answer in time', async () => {
    fake.decide(() => ({ kind: 'hang' }));
    const started = Date.now();
    expect(await upstreamError(adapter.embed!({ ...credential, timeoutMs: 150 }, { model: 'text-embedding-3-small', input: ['x'] }))).toMatchObject({
      kind: 'timeout',
    });
    expect(Date.now() - started).toBeLessThan(2000);
    fake.decide(() => ({ kind: 'default' }));
  });

  it('refuses an answer with fewer vectors than inputs', async () => {
    fake.decide(() => ({
      kind: 'raw',
      status: 200,
      contentType: 'application/json',
      body: Buffer.from(JSON.stringify({ object: 'list', data: [{ index: 0, embedding: [1, 0] }] })),
    }));
    expect(await upstreamError(adapter.embed!(credential, { model: 'text-embedding-3-small', input: ['a', 'b'] }))).toMatchObject({
      kind: 'server',
      code: 'malformed_response',
    });
    fake.decide(() => ({ kind: 'default' }));
  });
});

describe('Google embeddings (OpenAI-compatible endpoint)', () => {
  let fake: EmbeddingsFake;
  const adapter = createOpenAiAdapter({ defaultBaseUrl: 'http://127.0.0.1:1/v1beta/openai' });
  let credential: UpstreamCredential;
  beforeAll(async () => {
    fake = await startFakeEmbeddings('google');
    credential = { accountId: 'acc-g', providerSlug: 'google', apiKey: 'AIza-good', baseUrl: fake.baseUrl, timeoutMs: 2000 };
  });
  afterAll(async () => fake?.close());

  it('sends more than 100 texts in pieces of at most 100, in order; no usage comes back', async () => {
    const input = Array.from({ length: 230 }, (_, i) => `text number ${i}`);
    const result = await adapter.embed!(credential, { model: 'gemini-embedding-001', input, dimensions: 8 });
    expect(fake.calls().map((call) => (call.body as { input: string[] }).input.length)).toEqual([100, 100, 30]);
    expect(fake.calls()[1]!.path).toBe('/v1beta/openai/embeddings');
    expect(result.vectors).toHaveLength(230);
    expect(result.vectors[150]).toEqual(fakeVector('text number 150', 3072).slice(0, 8));
    expect(result.usage).toBeNull();
  });

  it('reads Google’s 400 for an invalid key as the account’s fault (auth), other refusals as Google classifies them', async () => {
    const bad = await upstreamError(adapter.embed!({ ...credential, apiKey: 'wrong' }, { model: 'gemini-embedding-001', input: ['x'] }));
    expect(bad).toMatchObject({ kind: 'auth', status: 400, message: 'API key not valid. Please pass a valid API key.' });
    for (const [status, body, kind] of [
      [403, GOOGLE_EMBEDDING_ERRORS.modelDenied('gemini-embedding-001'), 'model_refused'],
      [429, GOOGLE_EMBEDDING_ERRORS.quota, 'rate_limit'],
      [503, GOOGLE_EMBEDDING_ERRORS.unavailable, 'server'],
    ] as const) {
      fake.decide(() => ({ kind: 'error', status, body }));
      expect(await upstreamError(adapter.embed!(credential, { model: 'gemini-embedding-001', input: ['x'] })), `${status}`).toMatchObject({ kind, status });
    }
    fake.decide(() => ({ kind: 'default' }));
  });
});
