import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq, sql } from 'drizzle-orm';
import { gatewayIdempotency, providerAccounts } from '../../../db/schema/gateway.js';
import { usageRecords } from '../../../db/schema/usage.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../../test/helpers/test-app.js';
import { providerEnv, walletState } from '../../../../test/helpers/gateway.js';
import { OPENAI_EMBEDDING_ERRORS, startFakeEmbeddings, type EmbeddingsFake } from '../../../../test/helpers/fakes/openai-embeddings.js';
import { KEPT_VECTORS_MAX_BYTES } from './replay.js';
import { decodeVector } from './vectors.js';

// What an embeddings Idempotency-Key keeps: small answers whole, large ones as metadata recomputed on replay, uncharged.

let t: TestApp;
let openai: EmbeddingsFake;

beforeAll(async () => {
  openai = await startFakeEmbeddings('openai');
  t = await createTestApp({ env: { ...providerEnv('OPENAI', openai.baseUrl, ['good-openai-replay']), ALLOW_PRIVATE_NETWORK: 'true' } });
});
afterAll(async () => {
  await t?.close();
  await openai?.close();
});

/** What a key keeps without its vectors: the model, the request id, the dimensions, the usage and a digest. */
const METADATA_ROW_MAX_BYTES = 1024;

const embed = (token: string, payload: Record<string, unknown>, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url: '/v1/ai/embeddings', headers: { ...bearer(token), ...headers }, payload });
const usageOf = (userId: string) => t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId));
async function keptBytes(userId: string, key: string): Promise<number> {
  const [row] = await t.platform.db
    .select({ bytes: sql<number>`octet_length(${gatewayIdempotency.response}::text)` })
    .from(gatewayIdempotency)
    .where(and(eq(gatewayIdempotency.userId, userId), eq(gatewayIdempotency.key, key)));
  return Number(row!.bytes);
}
const vectorsOf = (response: Parameters<typeof json>[0]) => json(response).embeddings.map((e: { embedding: string }) => e.embedding);

describe('an embeddings Idempotency-Key', () => {
  it('keeps 2,048 vectors as a small row, and a replay recomputes the same vectors without charging', async () => {
    const { accessToken, user } = await signUp(t.app);
    const payload = { model: 'local/embed', input: Array.from({ length: 2048 }, (_, i) => `note ${i}`), encodingFormat: 'base64' };
    const first = await embed(accessToken, payload, { 'idempotency-key': 'embed-2048' });
    expect(first.statusCode, first.body).toBe(200);
    expect(vectorsOf(first).join('').length).toBeGreaterThan(2_000_000); // what the row used to hold
    expect(await keptBytes(user.id, 'embed-2048')).toBeLessThan(METADATA_ROW_MAX_BYTES);
    const afterFirst = await walletState(t, user.id);

    const replay = await embed(accessToken, payload, { 'idempotency-key': 'embed-2048' });
    expect(replay.statusCode, replay.body).toBe(200);
    expect(replay.headers).toMatchObject({ 'idempotent-replayed': 'true', 'idempotent-recomputed': 'true', 'x-ai-request-id': json(first).requestId });
    expect(json(replay)).toEqual(json(first));
    const asFloats = await embed(accessToken, { ...payload, encodingFormat: 'float' }, { 'idempotency-key': 'embed-2048' });
    expect(json(asFloats).embeddings[2047].embedding).toEqual(decodeVector(vectorsOf(first)[2047]));
    expect(await walletState(t, user.id)).toEqual(afterFirst);
    expect(await usageOf(user.id)).toHaveLength(1);
  });

  it(`keeps an answer of at most ${KEPT_VECTORS_MAX_BYTES / 1024} KB of vectors whole: its replay calls no provider`, async () => {
    const { accessToken, user } = await signUp(t.app);
    const payload = { model: 'openai/text-embedding-3-small', input: ['a small answer', 'kept whole'] };
    const first = await embed(accessToken, payload, { 'idempotency-key': 'embed-small' });
    expect(first.statusCode, first.body).toBe(200);
    const calls = openai.calls().length;
    const replay = await embed(accessToken, payload, { 'idempotency-key': 'embed-small' });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.headers['idempotent-recomputed']).toBeUndefined();
    expect(json(replay)).toEqual(json(first));
    expect(openai.calls().length).toBe(calls);
    expect(await keptBytes(user.id, 'embed-small')).toBeGreaterThan(2 * 1536 * 4);
  });

  it('answers a replay whose recomputation fails with a retryable 503, charging nothing, and replays once the provider is back', async () => {
    const { accessToken, user } = await signUp(t.app);
    // 20 vectors of 1,536 dimensions: 160 KB of base64, recomputed on replay.
    const payload = { model: 'openai/text-embedding-3-small', input: Array.from({ length: 20 }, (_, i) => `paragraph ${i}`) };
    const first = await embed(accessToken, payload, { 'idempotency-key': 'embed-flaky' });
    expect(first.statusCode, first.body).toBe(200);
    const afterFirst = await walletState(t, user.id);
    openai.decide(() => ({ kind: 'error', status: 500, body: OPENAI_EMBEDDING_ERRORS.server }));
    try {
      const failed = await embed(accessToken, payload, { 'idempotency-key': 'embed-flaky' });
      expect(failed.statusCode).toBe(503);
      expect(failed.headers['retry-after']).toBe('5');
      expect(json(failed).error).toMatchObject({
        code: 'REPLAY_UNAVAILABLE',
        message: expect.stringContaining('a replay is never charged'),
        details: { idempotencyKey: 'embed-flaky', requestId: json(first).requestId, model: 'openai/text-embedding-3-small', retryable: true },
      });
    } finally {
      openai.decide(() => ({ kind: 'default' }));
      await t.platform.db
        .update(providerAccounts)
        .set({ status: 'ACTIVE', consecutiveFailures: 0, lastFailureAt: null })
        .where(eq(providerAccounts.providerSlug, 'openai'));
      t.services.gateway.pool.refresh('openai');
    }
    const replay = await embed(accessToken, payload, { 'idempotency-key': 'embed-flaky' });
    expect(replay.statusCode, replay.body).toBe(200);
    expect(json(replay)).toEqual(json(first));
    expect(await walletState(t, user.id)).toEqual(afterFirst);
    expect(await usageOf(user.id)).toHaveLength(1);
  });
});
