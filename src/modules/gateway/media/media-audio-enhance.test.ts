import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { generations } from '../../../db/schema/library.js';
import { walletReservations } from '../../../db/schema/wallet.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../../test/helpers/test-app.js';
import { setBalance, walletState } from '../../../../test/helpers/gateway.js';
import { pathOf, samplePng } from '../../../../test/helpers/files.js';
import { settleDelivered } from './common.js';

let t: TestApp;
let strict: TestApp;
let server: Server;
let origin: string;
const png = samplePng(64, 9);

beforeAll(async () => {
  // A remote image host on loopback (reachable only with ALLOW_PRIVATE_NETWORK=true).
  server = createServer((req, res) => {
    if (req.url === '/ok.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end(png);
    if (req.url === '/missing.png') return void res.writeHead(404, { 'content-type': 'text/plain' }).end('nope');
    if (req.url === '/big.png') {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end(Buffer.alloc(16 * 1024 * 1024 + 10));
      return;
    }
    if (req.url === '/slow.png') return; // never answers
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  [t, strict] = await Promise.all([createTestApp({ env: { ALLOW_PRIVATE_NETWORK: 'true' } }), createTestApp()]);
});
afterAll(async () => {
  await Promise.all([t?.close(), strict?.close()]);
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const post = (app: TestApp, token: string, url: string, payload: unknown) =>
  app.app.inject({ method: 'POST', url, headers: bearer(token), payload: payload as object });

describe('POST /v1/ai/audio', () => {
  it('speech models return WAV, billed by characters, saved to the library', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const response = await post(t, accessToken, '/v1/ai/audio', { model: 'local/speech', text: 'Good morning, listeners.', voice: 'bright' });
    expect(response.statusCode, response.body).toBe(200);
    const body = json(response);
    expect(body).toMatchObject({ model: 'local/speech', audio: { mimeType: 'audio/wav', durationSeconds: expect.any(Number) }, usage: { characters: 24 } });
    const file = await t.app.inject({ method: 'GET', url: pathOf(body.audio.url) });
    expect(file.headers['content-type']).toContain('audio/wav');
    expect(file.rawPayload.toString('latin1', 0, 4)).toBe('RIFF');
    expect((await walletState(t, user.id)).balance).toBe(before.balance - body.usage.creditsConsumed);
    const [saved] = await t.platform.db.select().from(generations).where(eq(generations.requestId, body.requestId));
    expect(saved).toMatchObject({ kind: 'AUDIO', prompt: 'Good morning, listeners.', output: { audio: { url: body.audio.url } } });
  });

  it('honours Idempotency-Key: a replay returns the first answer without charging again', async () => {
    const { accessToken, user } = await signUp(t.app);
    const headers = { ...bearer(accessToken), 'idempotency-key': 'speech-once-1' };
    const payload = { model: 'local/speech', text: 'Say this once.' };
    const first = await t.app.inject({ method: 'POST', url: '/v1/ai/audio', headers, payload });
    expect(first.statusCode, first.body).toBe(200);
    const afterFirst = await walletState(t, user.id);
    const replay = await t.app.inject({ method: 'POST', url: '/v1/ai/audio', headers, payload });
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(json(replay)).toEqual(json(first));
    expect((await walletState(t, user.id)).balance).toBe(afterFirst.balance);
    expect(await t.platform.db.$count(generations, eq(generations.userId, user.id))).toBe(1);
    const other = await t.app.inject({ method: 'POST', url: '/v1/ai/audio', headers, payload: { ...payload, text: 'Something else.' } });
    expect(other.statusCode).toBe(409);
    expect(json(other).error.code).toBe('CONFLICT');
  });

  it('music models take a description, and no voice and no duration', async () => {
    const { accessToken } = await signUp(t.app);
    const ok = await post(t, accessToken, '/v1/ai/audio', { model: 'local/music', description: 'slow piano with soft rain' });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(json(ok).usage.characters).toBeNull();
    for (const [payload, word] of [
      [{ description: 'x', voice: 'deep' }, 'voice'],
      [{ description: 'x', durationSeconds: 30 }, 'length'],
      [{ text: 'x' }, 'description'],
    ] as const) {
      const response = await post(t, accessToken, '/v1/ai/audio', { model: 'local/music', ...payload });
      expect(response.statusCode).toBe(400);
      expect(json(response).error.message).toContain(word);
    }
  });

  it('refuses bad speech input with 400', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    for (const payload of [
      {},
      { text: '' },
      { text: 'x', voice: 'robot' },
      { description: 'x' },
      { text: 'x', durationSeconds: 3 },
      { text: 'x', speed: 2 },
      { text: 'x'.repeat(5001) },
      { text: 'x', colour: 1 },
    ]) {
      expect((await post(t, accessToken, '/v1/ai/audio', { model: 'local/speech', ...payload })).statusCode, JSON.stringify(payload).slice(0, 60)).toBe(400);
    }
    expect((await post(t, accessToken, '/v1/ai/audio', { model: 'local/image', text: 'x' })).statusCode).toBe(400);
    expect(await walletState(t, user.id)).toEqual(before);
  });
});

describe('POST /v1/ai/enhance/image', () => {
  it('enhances a remote https-or-http image and saves the result tagged enhanced with a neutral caption', async () => {
    const { accessToken } = await signUp(t.app);
    const response = await post(t, accessToken, '/v1/ai/enhance/image', { model: 'local/image', imageUrl: `${origin}/ok.png` });
    expect(response.statusCode, response.body).toBe(200);
    const body = json(response);
    expect(body).toMatchObject({ images: [{ mimeType: 'image/png' }], usage: { imagesGenerated: 1 }, width: 64, height: 64 });
    const [saved] = await t.platform.db.select().from(generations).where(eq(generations.requestId, body.requestId));
    expect(saved).toMatchObject({ kind: 'IMAGE', tags: ['enhanced'], prompt: 'Enhanced image' });
    const dataUrl = await post(t, accessToken, '/v1/ai/enhance/image', {
      model: 'local/image',
      imageUrl: `data:image/png;base64,${png.toString('base64')}`,
      instruction: 'brighter',
    });
    expect(dataUrl.statusCode).toBe(200);
  });

  it('a remote image that 404s, is too large or times out gives 400 naming the fetch problem, and nothing is charged', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const missing = await post(t, accessToken, '/v1/ai/enhance/image', { model: 'local/image', imageUrl: `${origin}/missing.png` });
    expect(missing.statusCode).toBe(400);
    expect(json(missing).error.message).toContain('404');
    const big = await post(t, accessToken, '/v1/ai/enhance/image', { model: 'local/image', imageUrl: `${origin}/big.png` });
    expect(big.statusCode).toBe(400);
    expect(json(big).error.message).toMatch(/15 MB|too large|larger/i);
    const slow = await post(t, accessToken, '/v1/ai/enhance/image', { model: 'local/image', imageUrl: `${origin}/slow.png` });
    expect(slow.statusCode).toBe(400);
    expect(json(slow).error.message).toMatch(/8 s|time/i);
    expect(await walletState(t, user.id)).toEqual(before);
  }, 20_000);

  it('refuses SSRF attempts: loopback and private ranges', async () => {
    const { accessToken } = await signUp(strict.app);
    for (const imageUrl of [
      `${origin}/ok.png`,
      'http://localhost/a.png',
      'http://10.0.0.1/a.png',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]/a.png',
      'http://192.168.1.1/a.png',
    ]) {
      const response = await post(strict, accessToken, '/v1/ai/enhance/image', { model: 'local/image', imageUrl });
      expect(response.statusCode, imageUrl).toBe(400);
      expect(json(response).error.code).toBe('BAD_REQUEST');
    }
    const init = await post(strict, accessToken, '/v1/ai/image', { model: 'local/image', prompt: 'x', initImageUrl: 'http://127.0.0.1/a.png' });
    expect(init.statusCode).toBe(400);
  });

  it('404 for an unknown model before anything is fetched; 400 for a non-image model', async () => {
    const { accessToken } = await signUp(t.app);
    expect((await post(t, accessToken, '/v1/ai/enhance/image', { model: 'local/none', imageUrl: `${origin}/ok.png` })).statusCode).toBe(404);
    expect((await post(t, accessToken, '/v1/ai/enhance/image', { model: 'local/text', imageUrl: `${origin}/ok.png` })).statusCode).toBe(400);
    expect((await post(t, accessToken, '/v1/ai/enhance/image', { model: 'local/image' })).statusCode).toBe(400);
  });
});

describe('an under-estimated reservation', () => {
  it('never drives the balance negative: settlement takes what the balance holds, records the shortfall, and the next call is refused', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setBalance(t, user.id, 1_000);
    const requestId = `under-${user.id}`;
    await t.services.wallet.reserve({ userId: user.id, tokens: 600, requestId });
    const model = await t.services.catalog.resolveForGateway('local/image');
    const settled = await t.platform.db.transaction((tx) =>
      settleDelivered({ metering: t.services.gateway.metering }, tx, {
        userId: user.id,
        subscriptionId: null,
        model,
        requestId,
        operation: 'image.generate',
        status: 'SUCCESS',
        chargeTokens: 1_500,
        providerCostCents: 0,
        inputUnits: 1,
        outputUnits: 1,
        latencyMs: 1,
        accountId: null,
        metadata: {},
        generation: null,
      }),
    );
    expect(settled).toMatchObject({ chargedTokens: 1_000, shortfallTokens: 500 });
    expect(await walletState(t, user.id)).toEqual({ balance: 0, ledgerSum: 0 });
    const [reservation] = await t.platform.db.select().from(walletReservations).where(eq(walletReservations.requestId, requestId));
    expect(reservation!.shortfallTokens).toBe(500);
    const refused = await post(t, accessToken, '/v1/ai/image', { model: 'local/image', prompt: 'x', width: 64, height: 64 });
    expect(refused.statusCode).toBe(429);
    expect(json(refused).error.code).toBe('QUOTA_EXCEEDED');
    await setBalance(t, user.id, 100_000);
    // The unpaid overrun was collected from the new tokens first; a call is allowed again once it is covered.
    const next = await post(t, accessToken, '/v1/ai/image', { model: 'local/image', prompt: 'x', width: 64, height: 64 });
    expect(next.statusCode).toBe(200);
  });
});
