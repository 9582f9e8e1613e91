import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { models } from '../../../db/schema/catalog.js';
import { generations } from '../../../db/schema/library.js';
import { usageRecords } from '../../../db/schema/usage.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../../test/helpers/test-app.js';
import { createApiKey, ledgerOf, setBalance, setPlan, walletState } from '../../../../test/helpers/gateway.js';
import { samplePng, uploadFile, pathOf } from '../../../../test/helpers/files.js';
import { DEFAULT_NEGATIVE_PROMPT } from './common.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

const IMAGE = 'local/image';
const image = (token: string, payload: unknown) => t.app.inject({ method: 'POST', url: '/v1/ai/image', headers: bearer(token), payload: payload as object });

async function pngAt(url: string) {
  const response = await t.app.inject({ method: 'GET', url: pathOf(url) });
  expect(response.statusCode).toBe(200);
  expect(response.headers['content-type']).toContain('image/png');
  const bytes = response.rawPayload;
  return { bytes, width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

describe('POST /v1/ai/image (sync)', () => {
  it('makes real PNGs of the requested size, copies them into our storage, bills per image and saves the library item', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const response = await image(accessToken, { model: IMAGE, prompt: 'a red lighthouse at dusk', width: 96, height: 64, count: 2, seed: 7 });
    expect(response.statusCode).toBe(200);
    const body = json(response);
    expect(body).toMatchObject({ model: IMAGE, width: 96, height: 64, usage: { imagesGenerated: 2, imagesRequested: 2 } });
    expect(body.images).toHaveLength(2);
    for (const item of body.images) {
      expect(item.mimeType).toBe('image/png');
      expect(item.url).toContain('/v1/files/raw/');
      const png = await pngAt(item.url);
      expect([png.width, png.height]).toEqual([96, 64]);
    }
    const modelRow = await t.services.catalog.resolveForGateway(IMAGE);
    expect(body.usage.creditsConsumed).toBe(await t.services.catalog.estimateTokens(modelRow, { kind: 'image', count: 2 }));
    const after = await walletState(t, user.id);
    expect(after.balance).toBe(before.balance - body.usage.creditsConsumed);
    expect(after.ledgerSum).toBe(after.balance);
    const [usage] = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, body.requestId));
    expect(usage).toMatchObject({ operation: 'image.generate', status: 'SUCCESS', outputUnits: 2, tokensConsumed: body.usage.creditsConsumed });
    const [saved] = await t.platform.db.select().from(generations).where(eq(generations.requestId, body.requestId));
    expect(saved).toMatchObject({
      kind: 'IMAGE',
      prompt: 'a red lighthouse at dusk',
      output: { images: body.images },
      thumbnailUrl: body.images[0].url,
      visibility: expect.any(String),
    });
  });

  it('is deterministic by seed and differs by seed', async () => {
    const { accessToken } = await signUp(t.app);
    const a = json(await image(accessToken, { model: IMAGE, prompt: 'calm sea', width: 64, height: 64, seed: 1 }));
    const b = json(await image(accessToken, { model: IMAGE, prompt: 'calm sea', width: 64, height: 64, seed: 1 }));
    const c = json(await image(accessToken, { model: IMAGE, prompt: 'calm sea', width: 64, height: 64, seed: 2 }));
    const [pa, pb, pc] = await Promise.all([a, b, c].map((r) => pngAt(r.images[0].url)));
    expect(pa!.bytes.equals(pb!.bytes)).toBe(true);
    expect(pa!.bytes.equals(pc!.bytes)).toBe(false);
  });

  it('tops up with concurrent calls when the model returns fewer per call, records maxBatch, and every image is distinct', async () => {
    const { accessToken } = await signUp(t.app);
    const response = await image(accessToken, { model: IMAGE, prompt: 'many kites', width: 64, height: 64, count: 7, seed: 3 });
    expect(response.statusCode).toBe(200);
    const body = json(response);
    expect(body.usage).toMatchObject({ imagesGenerated: 7, imagesRequested: 7 });
    const pngs = await Promise.all(body.images.map((i: { url: string }) => pngAt(i.url)));
    expect(new Set(pngs.map((p) => p.bytes.toString('base64'))).size).toBe(7);
    const [usage] = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, body.requestId));
    expect(usage!.metadata).toMatchObject({ calls: 2, failedCalls: 0, maxPerCall: 4 });
    const model = await t.services.catalog.resolveForGateway(IMAGE);
    const [row] = await t.platform.db.select({ maxBatch: models.maxBatch }).from(models).where(eq(models.id, model.id));
    expect(row!.maxBatch).toBe(4);
    expect(model.capabilities.maxBatch).toBe(4);
  });

  it('snaps sizes for fixed-menu models and applies the default negative prompt', async () => {
    const { imageSize } = await import('./image.js');
    const model = await t.services.catalog.resolveForGateway(IMAGE);
    expect(imageSize({ ...model, providerSlug: 'openai', upstreamModel: 'gpt-image-1', capabilities: { controls: {}, extra: {} } }, 1920, 1080)).toMatchObject({
      width: 1536,
      height: 1024,
    });
    expect(imageSize(model, undefined, undefined)).toMatchObject({ width: 512, height: 512 });
    const { negativePromptOf } = await import('./common.js');
    expect(negativePromptOf(undefined)).toBe(DEFAULT_NEGATIVE_PROMPT);
    expect(negativePromptOf('no cats')).toBe('no cats');
    expect(negativePromptOf('')).toBeNull();
  });

  it('takes initImageUrl as a data: URL or one of our raw files, and refuses other schemes', async () => {
    const { accessToken } = await signUp(t.app);
    const png = samplePng(32, 5);
    const dataUrl = `data:image/png;base64,${png.toString('base64')}`;
    const withData = await image(accessToken, { model: IMAGE, prompt: 'restyle', width: 64, height: 64, seed: 1, initImageUrl: dataUrl, strength: 0.5 });
    expect(withData.statusCode).toBe(200);
    const plain = json(await image(accessToken, { model: IMAGE, prompt: 'restyle', width: 64, height: 64, seed: 1 }));
    const [a, b] = await Promise.all([pngAt(json(withData).images[0].url), pngAt(plain.images[0].url)]);
    expect(a.bytes.equals(b.bytes)).toBe(false);
    const uploaded = await uploadFile(t.app, accessToken, png);
    expect((await image(accessToken, { model: IMAGE, prompt: 'restyle', width: 64, height: 64, initImageUrl: uploaded.file.url })).statusCode).toBe(200);
    const ftp = await image(accessToken, { model: IMAGE, prompt: 'restyle', initImageUrl: 'ftp://example.com/a.png' });
    expect(ftp.statusCode).toBe(400);
    const loopback = await image(accessToken, { model: IMAGE, prompt: 'restyle', initImageUrl: 'http://127.0.0.1:9/a.png' });
    expect(loopback.statusCode).toBe(400);
  });

  it('refuses bad input with 400 and charges nothing', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    for (const payload of [
      { model: IMAGE },
      { model: IMAGE, prompt: 'x', count: 0 },
      { model: IMAGE, prompt: 'x', count: 9 },
      { model: IMAGE, prompt: 'x', strength: 1.5 },
      { model: IMAGE, prompt: 'x', seed: -1 },
      { model: IMAGE, prompt: 'x', width: 'wide' },
      { model: IMAGE, prompt: 'x', unknown: true },
      { model: IMAGE, prompt: 'x'.repeat(8001) },
      { model: IMAGE, prompt: 'x', width: 2000 },
      { model: 'local/text', prompt: 'x' },
    ]) {
      const response = await image(accessToken, payload);
      expect(response.statusCode, JSON.stringify(payload).slice(0, 80)).toBe(400);
      expect(json(response).error.code).toBe('BAD_REQUEST');
    }
    expect((await image(accessToken, { model: 'local/nope', prompt: 'x' })).statusCode).toBe(404);
    expect(await walletState(t, user.id)).toEqual(before);
  });

  it('answers 429 QUOTA_EXCEEDED synchronously when the balance cannot cover it', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setBalance(t, user.id, 0);
    const response = await image(accessToken, { model: IMAGE, prompt: 'x', width: 64, height: 64 });
    expect(response.statusCode).toBe(429);
    expect(json(response).error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { shortfallTokens: expect.any(Number) } });
  });

  it('needs a token, and an API key needs the ai:image scope', async () => {
    expect((await t.app.inject({ method: 'POST', url: '/v1/ai/image', payload: { model: IMAGE, prompt: 'x' } })).statusCode).toBe(401);
    const { accessToken, user } = await signUp(t.app);
    await setPlan(t, user.id, 'starter');
    const textOnly = await createApiKey(t, accessToken, ['ai:text']);
    const refused = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/image',
      headers: bearer(textOnly.key),
      payload: { model: IMAGE, prompt: 'x', width: 64, height: 64 },
    });
    expect(refused.statusCode).toBe(403);
    expect(json(refused).error.message).toContain('ai:image');
    const imageKey = await createApiKey(t, accessToken, ['ai:image']);
    const allowed = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/image',
      headers: bearer(imageKey.key),
      payload: { model: IMAGE, prompt: 'x', width: 64, height: 64 },
    });
    expect(allowed.statusCode).toBe(200);
    expect((await ledgerOf(t, json(allowed).requestId)).map((r) => r.kind)).toEqual(['USAGE']);
  });
});
