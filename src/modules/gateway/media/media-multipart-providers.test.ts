import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { files } from '../../../db/schema/files.js';
import { providerAccounts } from '../../../db/schema/gateway.js';
import { usageRecords } from '../../../db/schema/usage.js';
import { solidPng } from '../../../../test/helpers/fake-media-upstreams.js';
import { startFakeIdeogram, IDEOGRAM_SAFETY_MESSAGE, type IdeogramFake } from '../providers/ideogram/ideogram.fake.js';
import { RECRAFT_REFUSAL, startFakeRecraft, type RecraftFake } from '../providers/recraft/recraft.fake.js';
import { STABILITY_MODERATION_MESSAGE, startFakeStability, type StabilityFake } from '../providers/stability/stability.fake.js';
import { pathOf } from '../../../../test/helpers/files.js';
import { ledgerOf, providerEnv, setBalance, walletState } from '../../../../test/helpers/gateway.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../../test/helpers/test-app.js';
import { pngSize } from './image.js';

let t: TestApp;
let stability: StabilityFake;
let ideogram: IdeogramFake;
let recraft: RecraftFake;

beforeAll(async () => {
  [stability, ideogram, recraft] = await Promise.all([startFakeStability(), startFakeIdeogram(), startFakeRecraft()]);
  t = await createTestApp({
    env: {
      ...providerEnv('STABILITY', stability.baseUrl, ['sk-stab-main']),
      ...providerEnv('IDEOGRAM', ideogram.baseUrl, ['ideo-main']),
      ...providerEnv('RECRAFT', recraft.baseUrl, ['rc-main']),
      ALLOW_PRIVATE_NETWORK: 'true',
    },
  });
});
afterAll(async () => {
  await t?.close();
  await Promise.all([stability?.close(), ideogram?.close(), recraft?.close()]);
});

const post = (token: string, url: string, payload: object) => t.app.inject({ method: 'POST', url, headers: bearer(token), payload });
const sourceImage = `data:image/png;base64,${solidPng(64, 64, 200).toString('base64')}`;

async function raw(url: string) {
  const response = await t.app.inject({ method: 'GET', url: pathOf(url) });
  expect(response.statusCode).toBe(200);
  return { type: response.headers['content-type'], csp: response.headers['content-security-policy'], bytes: response.rawPayload };
}

/** A refused call answers 400 with the provider's words and leaves the wallet as it was. */
async function expectRefusedAndRefunded(url: string, payload: object, message: string) {
  const { accessToken, user } = await signUp(t.app);
  const before = await walletState(t, user.id);
  const response = await post(accessToken, url, payload);
  expect(response.statusCode, response.body).toBe(400);
  expect(json(response).error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining(message) });
  expect(await walletState(t, user.id)).toEqual(before);
}

describe('Stability through the gateway', () => {
  it('makes one image per call, tops up with the next seed, and stores the PNGs', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setBalance(t, user.id, 10_000_000);
    const before = await walletState(t, user.id);
    const calls = stability.generations().length;
    const response = await post(accessToken, '/v1/ai/image', {
      model: 'stability/stable-image-ultra',
      prompt: 'a red kite over dunes',
      width: 1920,
      height: 1080,
      count: 2,
      seed: 40,
    });
    expect(response.statusCode, response.body).toBe(200);
    const body = json(response);
    expect(body).toMatchObject({ width: 1344, height: 768, usage: { imagesGenerated: 2, imagesRequested: 2 } });
    const made = stability.generations().slice(calls);
    expect(made.map((r) => [r.path, r.body.aspect_ratio, r.body.seed]).sort()).toEqual([
      ['/v2beta/stable-image/generate/ultra', '16:9', '40'],
      ['/v2beta/stable-image/generate/ultra', '16:9', '41'],
    ]);
    for (const image of body.images) {
      expect(image.mimeType).toBe('image/png');
      const file = await raw(image.url);
      expect(file.type).toContain('image/png');
      expect(pngSize(file.bytes)).toEqual({ width: 1344, height: 768 });
    }
    expect((await walletState(t, user.id)).balance).toBe(before.balance - body.usage.creditsConsumed);
  });

  it('starts from a source image on an edit model (sd3 image-to-image)', async () => {
    const { accessToken } = await signUp(t.app);
    const response = await post(accessToken, '/v1/ai/image', {
      model: 'stability/sd3.5-large',
      prompt: 'make it autumn',
      initImageUrl: sourceImage,
      strength: 0.4,
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(stability.generations().at(-1)).toMatchObject({
      path: '/v2beta/stable-image/generate/sd3',
      body: { model: 'sd3.5-large', mode: 'image-to-image', strength: '0.4', image: { type: 'image/png' } },
    });
  });

  it('answers a moderation refusal with 400 and Stability’s message, and refunds', async () => {
    await expectRefusedAndRefunded('/v1/ai/image', { model: 'stability/stable-image-core', prompt: 'something forbidden' }, STABILITY_MODERATION_MESSAGE);
  });

  it('makes music with Stable Audio and stores the MP3', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setBalance(t, user.id, 10_000_000);
    // The model decides the length: extra.duration is not taken.
    const refused = await post(accessToken, '/v1/ai/audio', { model: 'stability/stable-audio-2.5', description: 'calm piano', extra: { duration: 190 } });
    expect(refused.statusCode).toBe(400);
    expect(json(refused).error.message).toContain(
      'extra.duration is not taken by model stability/stable-audio-2.5; it takes: output_format, steps, cfg_scale.',
    );
    const response = await post(accessToken, '/v1/ai/audio', {
      model: 'stability/stable-audio-2.5',
      description: 'calm piano, 70 BPM',
      seed: 3,
      extra: { steps: 6 },
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(json(response).audio.mimeType).toBe('audio/mpeg');
    expect(stability.generations().at(-1)).toMatchObject({
      path: '/v2beta/audio/stable-audio-2/text-to-audio',
      body: { model: 'stable-audio-2.5', prompt: 'calm piano, 70 BPM', steps: '6', seed: '3' },
    });
    expect((await raw(json(response).audio.url)).type).toContain('audio/mpeg');
  });

  it('answers 503 when the key is rejected, and charges nothing', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    stability.decide((r) =>
      r.method === 'POST'
        ? { kind: 'error', status: 401, body: { id: 'x', name: 'unauthorized', errors: ['authorization: invalid or missing API key'] } }
        : { kind: 'default' },
    );
    try {
      const response = await post(accessToken, '/v1/ai/image', { model: 'stability/stable-image-core', prompt: 'a boat' });
      expect(response.statusCode).toBe(503);
      expect(json(response).error.code).toBe('PROVIDER_UNAVAILABLE');
    } finally {
      stability.decide(() => ({ kind: 'default' }));
    }
    expect(await walletState(t, user.id)).toEqual(before);
  });
});

describe('Ideogram through the gateway', () => {
  it('makes several images in one call and copies the expiring URLs into storage without their signature', async () => {
    const { accessToken, user } = await signUp(t.app);
    const calls = ideogram.generations().length;
    const response = await post(accessToken, '/v1/ai/image', {
      model: 'ideogram/v3-turbo',
      prompt: 'a poster that says OPEN',
      count: 3,
      width: 1024,
      height: 1024,
      seed: 8,
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(json(response).usage).toMatchObject({ imagesGenerated: 3 });
    const made = ideogram.generations().slice(calls);
    expect(made).toHaveLength(1);
    expect(made[0]!.body).toMatchObject({ rendering_speed: 'TURBO', num_images: '3', aspect_ratio: '1x1', seed: '8' });
    const stored = await t.platform.db.select().from(files).where(eq(files.ownerId, user.id));
    expect(stored).toHaveLength(3);
    for (const row of stored) {
      expect(row.contentType).toBe('image/png');
      expect(row.sourceUrl).toContain('/api/images/ephemeral/');
      expect(row.sourceUrl).not.toContain('sig=');
    }
  });

  it('remixes a source image', async () => {
    const { accessToken } = await signUp(t.app);
    const response = await post(accessToken, '/v1/ai/image', {
      model: 'ideogram/v3-quality',
      prompt: 'same scene at night',
      initImageUrl: sourceImage,
      strength: 0.7,
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(ideogram.generations().at(-1)).toMatchObject({
      path: '/v1/ideogram-v3/remix',
      body: { rendering_speed: 'QUALITY', image_weight: '30', image: { type: 'image/png' } },
    });
  });

  it('answers a failed safety check with 400 and Ideogram’s message, and refunds', async () => {
    await expectRefusedAndRefunded('/v1/ai/image', { model: 'ideogram/v3', prompt: 'something forbidden' }, IDEOGRAM_SAFETY_MESSAGE);
  });

  it('charges only the images that passed the safety check', async () => {
    const { accessToken } = await signUp(t.app);
    const response = await post(accessToken, '/v1/ai/image', { model: 'ideogram/v3', prompt: 'an unsafe idea', count: 2 });
    expect(response.statusCode, response.body).toBe(200);
    const body = json(response);
    expect(body.usage).toMatchObject({ imagesGenerated: 1, imagesRequested: 2 });
    const ledger = await ledgerOf(t, body.requestId);
    expect(ledger.reduce((sum, row) => sum + row.amount, 0)).toBe(-body.usage.creditsConsumed);
  });
});

describe('Recraft through the gateway', () => {
  it('makes raster images from the V3 size menu', async () => {
    const { accessToken } = await signUp(t.app);
    const response = await post(accessToken, '/v1/ai/image', { model: 'recraft/recraftv3', prompt: 'a tea cup', count: 2, width: 1920, height: 1080 });
    expect(response.statusCode, response.body).toBe(200);
    expect(json(response)).toMatchObject({ width: 1820, height: 1024, usage: { imagesGenerated: 2 } });
    expect(recraft.generations().at(-1)!.body).toMatchObject({ model: 'recraftv3', style: 'realistic_image', size: '1820x1024', n: 2 });
  });

  it('stores the vector model’s SVG as image/svg+xml and serves it sandboxed', async () => {
    const { accessToken, user } = await signUp(t.app);
    const response = await post(accessToken, '/v1/ai/image', { model: 'recraft/recraftv3-vector', prompt: 'a fox logo' });
    expect(response.statusCode, response.body).toBe(200);
    const [image] = json(response).images;
    expect(image.mimeType).toBe('image/svg+xml');
    expect(recraft.generations().at(-1)!.body).toMatchObject({ model: 'recraftv3', style: 'vector_illustration' });
    const file = await raw(image.url);
    expect(file.type).toContain('image/svg+xml');
    expect(file.bytes.toString('utf8')).toMatch(/^<svg /);
    // Served from our own origin: a script inside an SVG must never run there.
    expect(file.csp).toContain('sandbox');
    const [row] = await t.platform.db.select().from(files).where(eq(files.ownerId, user.id));
    expect(row!.contentType).toBe('image/svg+xml');
  });

  it('edits through imageToImage', async () => {
    const { accessToken } = await signUp(t.app);
    const response = await post(accessToken, '/v1/ai/image', { model: 'recraft/recraftv3', prompt: 'in watercolor', initImageUrl: sourceImage, strength: 0.2 });
    expect(response.statusCode, response.body).toBe(200);
    expect(recraft.generations().at(-1)).toMatchObject({ path: '/v1/images/imageToImage', body: { strength: '0.2', image: { type: 'image/png' } } });
  });

  it('answers a refused prompt with 400 and Recraft’s message, and refunds', async () => {
    await expectRefusedAndRefunded('/v1/ai/image', { model: 'recraft/recraftv3', prompt: 'something forbidden' }, RECRAFT_REFUSAL.message);
  });
});

describe('a rejected key fails over to the next account', () => {
  let f: TestApp;
  beforeAll(async () => {
    f = await createTestApp({
      env: {
        ...providerEnv('STABILITY', stability.baseUrl, ['sk-revoked', 'sk-stab-good']),
        ...providerEnv('IDEOGRAM', ideogram.baseUrl, ['ideo_revoked', 'ideo-good']),
        ...providerEnv('RECRAFT', recraft.baseUrl, ['rc_revoked', 'rc-good']),
        ALLOW_PRIVATE_NETWORK: 'true',
      },
    });
  });
  afterAll(async () => f?.close());

  it.each([
    [
      'stability/stable-image-core',
      () => stability.generations(),
      (r: { headers: Record<string, unknown> }) => r.headers.authorization === 'Bearer sk-revoked',
    ],
    ['ideogram/v3-turbo', () => ideogram.generations(), (r: { headers: Record<string, unknown> }) => r.headers['api-key'] === 'ideo_revoked'],
    ['recraft/recraftv3', () => recraft.generations(), (r: { headers: Record<string, unknown> }) => r.headers.authorization === 'Bearer rc_revoked'],
  ])('%s', async (model, generations, revoked) => {
    // The start-up key check put the revoked account at the back of the queue; once that has worn off, one of two
    // calls starts with it, fails with 401 and moves on to the good account.
    f.clock.advance(60_000);
    const { accessToken } = await signUp(f.app);
    const calls = generations().length;
    for (const prompt of ['first', 'second']) {
      const response = await f.app.inject({ method: 'POST', url: '/v1/ai/image', headers: bearer(accessToken), payload: { model, prompt } });
      expect(response.statusCode, response.body).toBe(200);
      const [usage] = await f.platform.db
        .select()
        .from(usageRecords)
        .where(eq(usageRecords.requestId, json(response).requestId));
      const [account] = await f.platform.db.select().from(providerAccounts).where(eq(providerAccounts.id, usage!.providerAccountId!));
      expect(account!.label).toMatch(/_API_KEY #2$/);
    }
    const made = generations().slice(calls);
    expect(made.filter(revoked)).toHaveLength(1);
    expect(made).toHaveLength(3);
  });
});
