import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { generations } from '../src/db/schema/library.js';
import { usageRecords } from '../src/db/schema/usage.js';
import { walletReservations, wallets } from '../src/db/schema/wallet.js';
import { MINUTE_MS } from '../src/platform/clock/clock.js';
import { walletJobs } from '../src/modules/wallet/jobs.js';
import { startFakeOpenAi, type Decide, type FakeUpstream } from './helpers/fake-upstreams.js';
import { createApiKey, ledgerOf, parseSse, providerEnv, setBalance, setPlan, walletState } from './helpers/gateway.js';
import { bearer, createTestApp, json, signUp, type TestApp } from './helpers/test-app.js';

/** Streams over a real socket: a client that leaves mid-stream, and a reservation left open by a stalled process. */
let fake: FakeUpstream;
let t: TestApp;
let baseUrl: string;
let decide: Decide = () => ({ kind: 'ok' });

beforeAll(async () => {
  fake = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : decide(request)));
  t = await createTestApp({ env: providerEnv('OPENAI', fake.baseUrl, ['sk-stream-0001']) });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const model = 'openai/gpt-4o-mini';
const words = Array.from({ length: 30 }, (_, i) => `word${i}`).join(' ');

async function until<T>(probe: () => Promise<T | undefined | null | false>, what: string): Promise<T> {
  for (let i = 0; i < 1000; i++) {
    const value = await probe();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Opens a streamed call over HTTP, reads until the first text event, then drops the connection. */
function streamAndLeave(token: string): Promise<{ status: number; requestId: string; firstChunk: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${baseUrl}/v1/ai/text`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' } }, (res) => {
      let received = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        received += chunk;
        if (received.includes('"type":"text"')) {
          res.destroy();
          req.destroy();
          resolve({ status: res.statusCode!, requestId: String(res.headers['x-ai-request-id']), firstChunk: received });
        }
      });
      res.on('error', () => undefined);
    });
    req.on('error', (err) => {
      if (!req.destroyed) reject(err);
    });
    req.end(JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'Recite the words' }] }));
  });
}

describe('a client that disconnects mid-stream', () => {
  it('is still metered: the answer is read to its end and settled exactly once', async () => {
    decide = () => ({ kind: 'ok', text: words, chunkDelayMs: 15, usage: { inputTokens: 210, outputTokens: 30 } });
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const left = await streamAndLeave(accessToken);
    expect(left.status).toBe(200);
    expect(left.firstChunk).toContain('data: ');

    const usage = await until(
      async () => (await t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, left.requestId)))[0],
      'the usage record',
    );
    const resolved = await t.services.catalog.resolveForGateway(model);
    const price = await t.services.catalog.priceUsage(resolved, { inputTokens: 210, outputTokens: 30 });
    // Billed on the provider's final usage: the whole answer was read although nobody was listening.
    expect(usage).toMatchObject({ status: 'SUCCESS', inputUnits: 210, outputUnits: 30, tokensConsumed: price.tokens });
    expect(usage.metadata).toMatchObject({ clientDisconnected: true, usageSource: 'provider' });

    const ledger = await ledgerOf(t, left.requestId);
    expect(ledger.map((r) => r.kind)).toEqual(['USAGE', 'REFUND']);
    expect(-ledger.reduce((sum, r) => sum + r.amount, 0)).toBe(price.tokens);
    const [reservation] = await t.platform.db.select().from(walletReservations).where(eq(walletReservations.requestId, left.requestId));
    expect(reservation).toMatchObject({ status: 'SETTLED', chargedTokens: price.tokens });
    const after = await walletState(t, user.id);
    expect(before.balance - after.balance).toBe(price.tokens);
    expect(after.ledgerSum).toBe(after.balance);
    const [saved] = await t.platform.db.select().from(generations).where(eq(generations.requestId, left.requestId));
    expect(saved!.output).toEqual({ text: words });
  });
});

/** The usage records of one request (a request has exactly one, whoever settled it). */
const usageOfRequest = (requestId: string) => t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, requestId));

describe('a reservation the sweeper closed while its request still ran', () => {
  it('a stream swept on its progress is charged the rest when it ends: never delivered free', async () => {
    let resume!: () => void;
    const paused = new Promise<void>((resolve) => (resume = resolve));
    decide = () => ({ kind: 'ok', text: words, pauseAfter: { chunks: 5, until: paused }, usage: { inputTokens: 210, outputTokens: 30 } });
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const streaming = t.app.inject({
      method: 'POST',
      url: '/v1/ai/text',
      headers: bearer(accessToken),
      payload: { model, stream: true, messages: [{ role: 'user', content: 'Recite' }] },
    });

    // The gateway reports progress on its reservation while streaming.
    const reservation = await until(async () => {
      const rows = await t.platform.db.select().from(walletReservations).where(eq(walletReservations.status, 'IN_FLIGHT'));
      return rows.find((r) => r.usedTokens !== null);
    }, 'an in-flight reservation with progress');
    expect(reservation.usedTokens!).toBeGreaterThan(0);
    expect(reservation.usedTokens!).toBeLessThan(reservation.tokens);

    // The process stalls past its lease: the wallet's sweeper job settles the reservation on the progress reported.
    t.clock.advance(16 * MINUTE_MS);
    const [sweeper] = walletJobs(t.services.wallet);
    await sweeper!.handler({}, { id: 'test', retryCount: 0 });
    const swept = await t.services.wallet.reservation(reservation.requestId);
    expect(swept).toMatchObject({ status: 'SETTLED', chargedTokens: reservation.usedTokens });
    const afterSweep = await walletState(t, user.id);
    expect(before.balance - afterSweep.balance).toBe(reservation.usedTokens);

    resume();
    const response = await streaming;
    expect(parseSse(response.body).at(-1)).toEqual({ type: 'finish', finishReason: 'stop' });
    // The rest of the delivered answer is charged late, and the call keeps one usage record: the real one.
    const ledger = await ledgerOf(t, reservation.requestId);
    expect(ledger.map((r) => r.kind)).toEqual(['USAGE', 'REFUND', 'USAGE']);
    const final = await walletState(t, user.id);
    const [record, ...others] = await usageOfRequest(reservation.requestId);
    expect(others).toEqual([]);
    expect(record).toMatchObject({ status: 'SUCCESS', outputUnits: 30 });
    expect(record!.tokensConsumed).toBeGreaterThan(reservation.usedTokens!);
    expect(before.balance - final.balance).toBe(record!.tokensConsumed);
    expect(final.ledgerSum).toBe(final.balance);
    expect(await t.services.wallet.reservation(reservation.requestId)).toMatchObject({ status: 'SETTLED', chargedTokens: record!.tokensConsumed });
  });

  it('a stream refunded before its first byte is charged in full when it ends, into debt past the balance', async () => {
    let resume!: () => void;
    const held = new Promise<void>((resolve) => (resume = resolve));
    decide = () => ({ kind: 'ok', text: words, waitFor: held, usage: { inputTokens: 210, outputTokens: 30 } });
    const { accessToken, user } = await signUp(t.app);
    const streaming = t.app.inject({
      method: 'POST',
      url: '/v1/ai/text',
      headers: bearer(accessToken),
      payload: { model, stream: true, messages: [{ role: 'user', content: 'Recite' }] },
    });
    const reservation = await until(
      async () => (await t.platform.db.select().from(walletReservations).where(eq(walletReservations.status, 'OPEN')))[0],
      'an open reservation',
    );
    t.clock.advance(16 * MINUTE_MS);
    expect(await t.services.wallet.sweepExpired()).toMatchObject({ released: 1 });
    expect(await usageOfRequest(reservation.requestId)).toMatchObject([{ status: 'FAILED', tokensConsumed: 0 }]);
    // The customer spends the refunded tokens meanwhile: what the late charge cannot take becomes debt.
    await setBalance(t, user.id, 10);

    resume();
    const response = await streaming;
    expect(parseSse(response.body).at(-1)).toEqual({ type: 'finish', finishReason: 'stop' });
    const [record, ...others] = await usageOfRequest(reservation.requestId);
    expect(others).toEqual([]);
    expect(record).toMatchObject({ status: 'SUCCESS', outputUnits: 30 });
    const price = await t.services.catalog.priceUsage(await t.services.catalog.resolveForGateway(model), { inputTokens: 210, outputTokens: 30 });
    const closed = await t.services.wallet.reservation(reservation.requestId);
    expect(closed).toMatchObject({ status: 'SETTLED', chargedTokens: 10, shortfallTokens: price.tokens - 10 });
    expect(record!.tokensConsumed).toBe(10);
    const [wallet] = await t.platform.db.select().from(wallets).where(eq(wallets.ownerId, user.id));
    expect(wallet).toMatchObject({ balance: 0, debt: price.tokens - 10 });
    expect((await walletState(t, user.id)).ledgerSum).toBe(0);
  });

  it("a late charge counts in the key's budget spend", async () => {
    let resume!: () => void;
    const paused = new Promise<void>((resolve) => (resume = resolve));
    decide = () => ({ kind: 'ok', text: words, pauseAfter: { chunks: 5, until: paused }, usage: { inputTokens: 210, outputTokens: 30 } });
    const { accessToken, user } = await signUp(t.app);
    await setPlan(t, user.id, 'starter');
    const key = await createApiKey(t, accessToken, ['ai:text'], { budget: { tokens: 1_000_000, period: 'day' } });
    const before = await walletState(t, user.id);
    const streaming = t.app.inject({
      method: 'POST',
      url: '/v1/ai/text',
      headers: bearer(key.key),
      payload: { model, stream: true, messages: [{ role: 'user', content: 'Recite' }] },
    });
    await until(
      async () => (await t.platform.db.select().from(walletReservations).where(eq(walletReservations.status, 'IN_FLIGHT'))).find((r) => r.usedTokens !== null),
      'progress',
    );
    t.clock.advance(16 * MINUTE_MS);
    expect(await t.services.wallet.sweepExpired()).toMatchObject({ settled: 1 });
    resume();
    await streaming;
    const charged = before.balance - (await walletState(t, user.id)).balance;
    // Read through the service: the access token has expired on the advanced clock.
    const listed = await t.services.apiKeys.list(user.id);
    expect(listed.items.find((k) => k.id === key.id)!.budget).toMatchObject({ spentTokens: charged, reservedTokens: 0 });
  });

  it('an answer not yet delivered is withheld with a retryable 503, and nothing is charged', async () => {
    let resume!: () => void;
    const held = new Promise<void>((resolve) => (resume = resolve));
    decide = () => ({ kind: 'ok', text: 'late', waitFor: held });
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const pending = t.app.inject({
      method: 'POST',
      url: '/v1/ai/text',
      headers: bearer(accessToken),
      payload: { model, messages: [{ role: 'user', content: 'Hello' }] },
    });
    const reservation = await until(
      async () => (await t.platform.db.select().from(walletReservations).where(eq(walletReservations.status, 'OPEN')))[0],
      'an open reservation',
    );
    t.clock.advance(16 * MINUTE_MS);
    expect(await t.services.wallet.sweepExpired()).toMatchObject({ released: 1 });
    expect(await walletState(t, user.id)).toEqual(before);
    resume();
    const response = await pending;
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('1');
    expect(json(response).error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { retryable: true } });
    expect(response.body).not.toContain('late');
    expect((await ledgerOf(t, reservation.requestId)).map((r) => r.kind)).toEqual(['USAGE', 'REFUND']);
    expect(await usageOfRequest(reservation.requestId)).toMatchObject([{ status: 'FAILED', tokensConsumed: 0 }]);
    expect(await walletState(t, user.id)).toEqual(before);
  });
});
