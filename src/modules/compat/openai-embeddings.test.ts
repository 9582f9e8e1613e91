import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { usageRecords } from '../../db/schema/usage.js';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createApiKey, providerEnv, setPlan, walletState } from '../../../test/helpers/gateway.js';
import { fakeVector, startFakeEmbeddings, wordCount, type EmbeddingsFake } from '../../../test/helpers/fakes/openai-embeddings.js';
import { localEmbedding } from '../gateway/providers/local/embed.js';
import { countTextTokens } from '../gateway/text/tokens.js';

// POST /openai/v1/embeddings with the official openai SDK: float and base64 (the SDK's default), batches, metering,
// Idempotency-Key, scopes, refusals, an OpenAI upstream behind a fake, and the README's semantic search example.

let t: TestApp;
let upstream: EmbeddingsFake;
let baseUrl: string;

beforeAll(async () => {
  upstream = await startFakeEmbeddings('openai');
  t = await createTestApp({ env: { ...providerEnv('OPENAI', upstream.baseUrl, ['good-openai-compat']), ALLOW_PRIVATE_NETWORK: 'true' } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await t?.close();
  await upstream?.close();
});

async function keyHolder(scopes: string[] = ['ai:embed']) {
  const { accessToken, user } = await signUp(t.app);
  await setPlan(t, user.id, 'starter');
  const { key } = await createApiKey(t, accessToken, scopes);
  return { userId: user.id as string, openai: new OpenAI({ apiKey: key, baseURL: `${baseUrl}/openai/v1`, maxRetries: 0 }) };
}

type ChargedUsage = OpenAI.CreateEmbeddingResponse.Usage & { tokens_charged: number };
const priced = async (slug: string, inputTokens: number) =>
  (await t.services.catalog.priceUsage(await t.services.catalog.resolveForGateway(slug), { inputTokens, outputTokens: 0 })).tokens;
const float32 = (vector: number[]) => vector.map((value) => Math.fround(value));

describe('/openai/v1/embeddings with the official openai SDK', () => {
  it('answers floats and base64 (the SDK’s default, decoded by it) with the same vectors, metered on the priced input tokens', async () => {
    const { openai, userId } = await keyHolder();
    const before = await walletState(t, userId);
    const input = ['How to bake sourdough bread at home', 'The cat sat on the mat', 'Stock markets fell sharply on Monday'];
    const asFloat = await openai.embeddings.create({ model: 'local/embed', input, encoding_format: 'float' });
    const asDefault = await openai.embeddings.create({ model: 'local/embed', input });
    expect(asFloat).toMatchObject({ object: 'list', model: 'local/embed' });
    expect(asFloat.data.map((d) => [d.object, d.index])).toEqual([
      ['embedding', 0],
      ['embedding', 1],
      ['embedding', 2],
    ]);
    expect(asFloat.data.map((d) => d.embedding)).toEqual(input.map((text) => float32(localEmbedding(text))));
    expect(asDefault.data.map((d) => d.embedding)).toEqual(asFloat.data.map((d) => d.embedding));

    const inputTokens = input.reduce((sum, text) => sum + countTextTokens(text), 0);
    const usage = asFloat.usage as ChargedUsage;
    expect(usage).toEqual({ prompt_tokens: inputTokens, total_tokens: inputTokens, tokens_charged: await priced('local/embed', inputTokens) });
    const after = await walletState(t, userId);
    expect(after.balance).toBe(before.balance - 2 * usage.tokens_charged);
    expect(after.ledgerSum).toBe(after.balance);
    const records = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId));
    expect(records.map((r) => [r.operation, r.status, r.inputUnits, r.tokensConsumed])).toEqual([
      ['embeddings.create', 'SUCCESS', inputTokens, usage.tokens_charged],
      ['embeddings.create', 'SUCCESS', inputTokens, usage.tokens_charged],
    ]);
  });

  it('replays an Idempotency-Key without charging again', async () => {
    const { openai, userId } = await keyHolder();
    const request = { model: 'local/embed', input: ['replayed text'], dimensions: 16 };
    const first = await openai.embeddings.create(request, { headers: { 'Idempotency-Key': 'sdk-embed-1' } }).withResponse();
    const balance = (await walletState(t, userId)).balance;
    const again = await openai.embeddings.create(request, { headers: { 'Idempotency-Key': 'sdk-embed-1' } }).withResponse();
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
    expect(again.response.headers.get('x-ai-request-id')).toBe(first.response.headers.get('x-ai-request-id'));
    expect(again.data.data[0]!.embedding).toHaveLength(16);
    expect(again.data).toEqual(first.data);
    expect((await walletState(t, userId)).balance).toBe(balance);
  });

  it('refuses a key without ai:embed or ai:text, a model that does not embed and token arrays, in OpenAI’s shape', async () => {
    const { openai: imagesOnly } = await keyHolder(['ai:image']);
    const scope = await imagesOnly.embeddings.create({ model: 'local/embed', input: 'x' }).catch((err: unknown) => err);
    expect(scope).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(scope).toMatchObject({ status: 403, type: 'permission_error', message: expect.stringContaining('ai:embed') });

    const { openai, userId } = await keyHolder(['ai:text']);
    const before = await walletState(t, userId);
    const notEmbedding = await openai.embeddings.create({ model: 'local/text', input: 'x' }).catch((err: unknown) => err);
    expect(notEmbedding).toBeInstanceOf(OpenAI.BadRequestError);
    expect(notEmbedding).toMatchObject({
      status: 400,
      type: 'invalid_request_error',
      message: expect.stringContaining('is a TEXT model; embeddings need an EMBEDDING model'),
    });
    const tokens = await openai.embeddings.create({ model: 'local/embed', input: [[101, 202, 303]] }).catch((err: unknown) => err);
    expect(tokens).toBeInstanceOf(OpenAI.BadRequestError);
    expect(tokens).toMatchObject({ param: 'input', message: expect.stringContaining('token arrays is not supported') });
    const empty = await openai.embeddings.create({ model: 'local/embed', input: '' }).catch((err: unknown) => err);
    expect(empty).toBeInstanceOf(OpenAI.BadRequestError);
    expect(await walletState(t, userId)).toEqual(before);
  });

  it('passes the request to an OpenAI-compatible upstream and charges the usage it reports', async () => {
    const { openai, userId } = await keyHolder();
    const before = await walletState(t, userId);
    const input = ['first upstream text', 'second'];
    const from = upstream.calls().length;
    const answer = await openai.embeddings.create({ model: 'openai/text-embedding-3-small', input, user: 'customer-42' });
    expect(
      upstream
        .calls()
        .slice(from)
        .map((c) => c.body),
    ).toEqual([{ model: 'text-embedding-3-small', input, user: 'customer-42' }]);
    expect(answer.data[1]!.embedding).toEqual(float32(fakeVector('second', 1536)));
    const usage = answer.usage as ChargedUsage;
    expect(usage).toEqual({
      prompt_tokens: wordCount(input),
      total_tokens: wordCount(input),
      tokens_charged: await priced('openai/text-embedding-3-small', wordCount(input)),
    });
    expect((await walletState(t, userId)).balance).toBe(before.balance - usage.tokens_charged);
  });

  it('runs the README’s semantic search example on local/embed', async () => {
    const { openai } = await keyHolder();
    // From README.md, "Embeddings and semantic search".
    const docs = ['How to bake sourdough bread at home', 'The cat sat on the mat', 'Stock markets fell sharply on Monday', 'Training a puppy to sit and stay'];
    const { data } = await openai.embeddings.create({ model: 'local/embed', input: docs });
    const [{ embedding: query }] = (await openai.embeddings.create({ model: 'local/embed', input: 'baking bread' })).data as [OpenAI.Embedding];
    const score = (v: number[]) => v.reduce((sum, x, i) => sum + x * query[i]!, 0);
    const best = data.map((d, i) => ({ doc: docs[i], score: score(d.embedding) })).sort((a, b) => b.score - a.score)[0];
    expect(best!.doc).toBe('How to bake sourdough bread at home');
    // And the other documents are found by their own queries.
    for (const [question, expected] of [
      ['where did the cat sit?', docs[1]],
      ['stock market news', docs[2]],
      ['teach my puppy', docs[3]],
    ] as const) {
      const [{ embedding }] = (await openai.embeddings.create({ model: 'local/embed', input: question })).data as [OpenAI.Embedding];
      const ranked = data
        .map((d, i) => ({ doc: docs[i], score: d.embedding.reduce((sum, x, k) => sum + x * embedding[k]!, 0) }))
        .sort((a, b) => b.score - a.score);
      expect(ranked[0]!.doc, question).toBe(expected);
    }
  });
});
