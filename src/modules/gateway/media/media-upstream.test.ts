import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { files } from '../../../db/schema/files.js';
import { usageRecords } from '../../../db/schema/usage.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../../test/helpers/test-app.js';
import { ledgerOf, providerEnv, walletState } from '../../../../test/helpers/gateway.js';
import { startFakeOpenAiMedia, type MediaFake } from '../../../../test/helpers/fake-media-upstreams.js';

let t: TestApp;
let fake: MediaFake & { downloads: () => number };
beforeAll(async () => {
  fake = await startFakeOpenAiMedia({ alwaysUrl: true });
  t = await createTestApp({ env: { ...providerEnv('OPENAI', fake.baseUrl, ['sk-test-1']), ALLOW_PRIVATE_NETWORK: 'true' } });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('POST /v1/ai/image against an OpenAI-format upstream', () => {
  it('tops up a one-per-call model, refunds the failed top-up call, and stores URL results without their credentials', async () => {
    const { accessToken, user } = await signUp(t.app);
    let imageCalls = 0;
    fake.decide((request) => {
      if (request.path !== '/v1/images/generations') return { kind: 'default' };
      imageCalls++;
      return imageCalls === 3
        ? {
            kind: 'error',
            status: 400,
            body: { error: { message: 'Your request was rejected by the safety system.', type: 'invalid_request_error', code: 'content_policy_violation' } },
          }
        : { kind: 'default' };
    });
    const before = await walletState(t, user.id);
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/image',
      headers: bearer(accessToken),
      payload: { model: 'openai/dall-e-3', prompt: 'three foxes', count: 3, width: 1920, height: 1080 },
    });
    expect(response.statusCode, response.body).toBe(200);
    const body = json(response);
    expect(imageCalls).toBe(3);
    expect(body.usage).toMatchObject({ imagesGenerated: 2, imagesRequested: 3 });
    // DALL·E 3 takes 1792x1024 for a wide picture.
    expect([body.width, body.height]).toEqual([1792, 1024]);
    const model = await t.services.catalog.resolveForGateway('openai/dall-e-3');
    const two = await t.services.catalog.estimateTokens(model, { kind: 'image', count: 2 });
    const three = await t.services.catalog.estimateTokens(model, { kind: 'image', count: 3 });
    expect(body.usage.creditsConsumed).toBe(two);
    const ledger = await ledgerOf(t, body.requestId);
    expect(ledger.map((r) => [r.kind, r.amount])).toEqual([
      ['USAGE', -three],
      ['REFUND', three - two],
    ]);
    const after = await walletState(t, user.id);
    expect(after.balance).toBe(before.balance - two);
    const [usage] = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, body.requestId));
    expect(usage).toMatchObject({ status: 'PARTIAL', outputUnits: 2, tokensConsumed: two });
    expect(usage!.metadata).toMatchObject({ calls: 3, failedCalls: 1, maxPerCall: 1 });
    // Copied into our storage; the provider's signed link is recorded without its signature.
    for (const image of body.images) expect(image.url).toContain('/v1/files/raw/');
    const stored = await t.platform.db.select().from(files).where(eq(files.ownerId, user.id));
    expect(stored.length).toBe(2);
    for (const row of stored) {
      expect(row.sourceUrl).toContain('/files/img-');
      expect(row.sourceUrl).not.toContain('SECRET');
    }
  });

  it('refunds everything when the first call fails and maps the upstream refusal to 400', async () => {
    const { accessToken, user } = await signUp(t.app);
    fake.decide(() => ({
      kind: 'error',
      status: 400,
      body: { error: { message: 'Your request was rejected by the safety system.', type: 'invalid_request_error', code: 'content_policy_violation' } },
    }));
    const before = await walletState(t, user.id);
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/image',
      headers: bearer(accessToken),
      payload: { model: 'openai/dall-e-3', prompt: 'refused', count: 2 },
    });
    expect(response.statusCode).toBe(400);
    expect(json(response).error.code).toBe('BAD_REQUEST');
    expect(await walletState(t, user.id)).toEqual(before);
    fake.decide(() => ({ kind: 'default' }));
  });
});
