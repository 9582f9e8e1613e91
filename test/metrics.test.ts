import type { AddressInfo } from 'node:net';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { emitDomainEvent } from '../src/platform/events/outbox.js';
import { freePort } from './helpers/free-port.js';
import { startFakeOpenAi, type FakeUpstream } from './helpers/fake-upstreams.js';
import { providerEnv, setBalance } from './helpers/gateway.js';
import { PAYMENT_TEST_ENV, paymentFixtures } from './helpers/payments.js';
import { bearer, createTestApp, json, signUp, type TestApp } from './helpers/test-app.js';
import { eventually, startReceiver, type Receiver } from './helpers/webhook-receiver.js';

/** One sample of a Prometheus text scrape: the series `name` whose labels include `labels`, or undefined. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const own = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([key, value]) => own[key] === value)) return Number(match[3]);
  }
  return undefined;
}

/** Tests that start an app of their own (a few seconds, more on a loaded machine). */
const APP_TIMEOUT_MS = 180_000;

let t: TestApp;
let receiver: Receiver;
let upstream: FakeUpstream;
let metricsUrl: string;

beforeAll(async () => {
  // An OpenAI upstream whose key checks pass and whose completions fail with a 500.
  upstream = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : { kind: 'error', status: 500, message: 'upstream broke' }));
  const env = { ALLOW_PRIVATE_NETWORK: 'true', ...PAYMENT_TEST_ENV, ...providerEnv('OPENAI', upstream.baseUrl, ['sk-metrics-1']) };
  [t, receiver] = await Promise.all([createTestApp({ env, startJobs: true }), startReceiver()]);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  metricsUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/metrics`;
}, 180_000);
afterAll(async () => {
  await t?.close();
  await receiver?.close();
  await upstream?.close();
});

/** A scrape as Prometheus makes it: GET /metrics over HTTP. */
async function scrape(url = metricsUrl, headers: Record<string, string> = {}): Promise<string> {
  const response = await fetch(url, { headers });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return response.text();
}

/** How much a series grew between two scrapes (a series not there yet counts as 0). */
const grew = (before: string, after: string, name: string, labels: Record<string, string>) =>
  (sample(after, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);

/** A text generation by a new user with tokens to spend, between two scrapes. */
async function generateBetweenScrapes(model: string, maxTokens: number) {
  const { accessToken, user } = await signUp(t.app);
  await setBalance(t, user.id, 1_000_000);
  const before = await scrape();
  const response = await t.app.inject({
    method: 'POST',
    url: '/v1/ai/text',
    headers: bearer(accessToken),
    payload: { model, messages: [{ role: 'user', content: 'Explain how tides work' }], maxTokens },
  });
  return { accessToken, response, before, after: await scrape() };
}

const tokens = (text: string, movement: string) => sample(text, 'storefront_wallet_reservation_tokens_total', { movement }) ?? NaN;

describe('GET /metrics after real work', () => {
  it('counts a generation: request latency by route pattern, the call by provider/model/outcome, upstream latency, tokens moved', async () => {
    const { accessToken, response, before, after } = await generateBetweenScrapes('local/text', 200);
    expect(response.statusCode, response.body).toBe(200);
    const charged = json(response).usage.creditsConsumed as number;
    const reservation = (await t.services.wallet.reservation(json(response).requestId as string))!;

    const call = { provider: 'local', model: 'local/text', operation: 'text.generate', outcome: 'success' };
    expect(grew(before, after, 'storefront_gateway_calls_total', call)).toBe(1);
    const upstream = { provider: 'local', outcome: 'ok' };
    expect(grew(before, after, 'storefront_gateway_upstream_duration_seconds_count', upstream)).toBe(1);
    expect(sample(after, 'storefront_gateway_upstream_duration_seconds_bucket', { ...upstream, le: '+Inf' })).toBeGreaterThanOrEqual(1);
    expect(tokens(after, 'reserved') - tokens(before, 'reserved')).toBe(reservation.tokens);
    expect(tokens(after, 'charged') - tokens(before, 'charged')).toBe(charged);
    expect(tokens(after, 'refunded') - tokens(before, 'refunded')).toBe(reservation.tokens - charged);
    expect(reservation.tokens).toBeGreaterThan(charged);
    // the route pattern, never the raw URL
    expect(sample(after, 'http_request_duration_seconds_count', { method: 'POST', route: '/v1/ai/text', status_code: '200' })).toBe(1);
    await t.app.inject({ method: 'GET', url: `/v1/usage/${uuidv7()}`, headers: bearer(accessToken) });
    const routes = await scrape();
    expect(routes).not.toMatch(/route="\/v1\/usage\/[0-9a-f]{8}-/);
  });

  it('counts a failed upstream call by its error code, with its upstream latency, and refunds its tokens', async () => {
    const { response, before, after } = await generateBetweenScrapes('openai/gpt-4o-mini', 50);
    expect(response.statusCode, response.body).toBe(503);
    const call = { provider: 'openai', model: 'openai/gpt-4o-mini', outcome: 'provider_unavailable' };
    expect(grew(before, after, 'storefront_gateway_calls_total', call)).toBe(1);
    expect(grew(before, after, 'storefront_gateway_upstream_duration_seconds_count', { provider: 'openai', outcome: 'server' })).toBe(upstream.calls().length);
    expect(upstream.calls().length).toBeGreaterThanOrEqual(1);
    expect(tokens(after, 'reserved') - tokens(before, 'reserved')).toBeGreaterThan(0);
    expect(tokens(after, 'refunded') - tokens(before, 'refunded')).toBe(tokens(after, 'reserved') - tokens(before, 'reserved'));
  });

  it('counts payment outcomes by channel', async () => {
    const f = paymentFixtures(t);
    const starter = await f.planId('starter');
    const before = await scrape();
    const paid = await signUp(t.app);
    const session = await f.checkoutOk(paid.accessToken, { planId: starter, provider: 'card_global' });
    await f.pressSandbox(session.redirectUrl, 'pay');
    await f.eventually(async () => expect((await f.payment(session.paymentId)).status).toBe('SUCCEEDED'));
    const failed = await signUp(t.app);
    const failing = await f.checkoutOk(failed.accessToken, { planId: starter, provider: 'card_global' });
    await f.pressSandbox(failing.redirectUrl, 'fail');
    await f.eventually(async () => expect((await f.payment(failing.paymentId)).status).toBe('FAILED'));

    const after = await scrape();
    const delta = (outcome: string) => grew(before, after, 'storefront_payments_outcomes_total', { channel: 'card_global', outcome });
    expect(delta('succeeded')).toBe(1);
    expect(delta('failed')).toBe(1);
  });

  it('counts a failed webhook delivery attempt', async () => {
    const { accessToken, user } = await signUp(t.app);
    receiver.answer('/down', () => ({ status: 500 }));
    const registered = await t.app.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: bearer(accessToken),
      payload: { url: receiver.url('/down'), events: ['job.succeeded'] },
    });
    expect(registered.statusCode).toBe(201);
    const before = sample(await scrape(), 'storefront_webhook_delivery_attempts_total', { outcome: 'failed' })!;
    await t.platform.db.transaction(async (tx) =>
      emitDomainEvent(tx, 'job.succeeded', { jobId: uuidv7(), status: 'SUCCEEDED' }, { userId: user.id, at: t.clock.now() }),
    );
    await eventually(() => receiver.to('/down').length === 1, 'the first attempt');
    const failed = await eventually(async () => {
      const value = sample(await scrape(), 'storefront_webhook_delivery_attempts_total', { outcome: 'failed' })!;
      return value > before ? value : undefined;
    }, 'the failed attempt counted');
    expect(failed - before).toBe(1);
    expect(sample(await scrape(), 'storefront_webhook_delivery_attempts_total', { outcome: 'exhausted' })).toBe(0);
  });

  it('counts the sweeper releasing a reservation a dead process left open', async () => {
    const { user } = await signUp(t.app);
    await setBalance(t, user.id, 10_000);
    const before = await scrape();
    const requestId = uuidv7();
    await t.services.wallet.reserve({ userId: user.id, tokens: 700, requestId, leaseSeconds: 30 });
    t.clock.advance(10 * 60_000);
    await t.services.wallet.sweepExpired();
    expect((await t.services.wallet.reservation(requestId))!.status).toBe('RELEASED');
    const after = await scrape();
    const released = (text: string) => sample(text, 'storefront_wallet_sweeper_reservations_total', { action: 'released' })!;
    expect(released(after) - released(before)).toBe(1);
    expect(tokens(after, 'reserved') - tokens(before, 'reserved')).toBe(700);
    expect(tokens(after, 'refunded') - tokens(before, 'refunded')).toBe(700);
  });

  it('reports every queue of the job runner with its depth and oldest age', async () => {
    const text = await scrape();
    for (const queue of ['webhooks.deliver', 'wallet.sweep-reservations', 'mail.deliver']) {
      expect(sample(text, 'storefront_jobs_waiting', { queue })).toBeGreaterThanOrEqual(0);
      expect(sample(text, 'storefront_jobs_oldest_waiting_seconds', { queue })).toBeGreaterThanOrEqual(0);
    }
  });
});

describe('job queue depth and age', () => {
  it(
    'counts jobs waiting on a queue no worker takes, and their age',
    async () => {
      const q = await createTestApp();
      try {
        await q.platform.jobs.start({ workers: false });
        const empty = await q.platform.metrics.registry.metrics();
        expect(sample(empty, 'storefront_jobs_waiting', { queue: 'mail.deliver' })).toBe(0);
        expect(sample(empty, 'storefront_jobs_oldest_waiting_seconds', { queue: 'mail.deliver' })).toBe(0);
        await q.platform.jobs.send('mail.deliver', { mailId: uuidv7() });
        await q.platform.jobs.send('mail.deliver', { mailId: uuidv7() });
        await q.platform.jobs.send('mail.deliver', { mailId: uuidv7() }, { startAfterSeconds: 3600 }); // delayed on purpose: not waiting
        await new Promise((resolve) => setTimeout(resolve, 1100));
        const text = await q.platform.metrics.registry.metrics();
        expect(sample(text, 'storefront_jobs_waiting', { queue: 'mail.deliver' })).toBe(2);
        const age = sample(text, 'storefront_jobs_oldest_waiting_seconds', { queue: 'mail.deliver' })!;
        expect(age).toBeGreaterThanOrEqual(1);
        expect(age).toBeLessThan(120);
      } finally {
        await q.close();
      }
    },
    APP_TIMEOUT_MS,
  );
});

describe('protecting /metrics', () => {
  const TOKEN = 'metrics-token-0123456789abcdef';

  it(
    'METRICS_TOKEN: a scrape without the bearer token, or with another, is a 401 in the error envelope',
    async () => {
      const p = await createTestApp({ env: { METRICS_TOKEN: TOKEN } });
      try {
        const missing = await p.app.inject({ method: 'GET', url: '/metrics' });
        expect(missing.statusCode).toBe(401);
        expect(json(missing).error).toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringContaining('METRICS_TOKEN') });
        expect((await p.app.inject({ method: 'GET', url: '/metrics', headers: bearer(`${TOKEN}x`) })).statusCode).toBe(401);
        const ok = await p.app.inject({ method: 'GET', url: '/metrics', headers: bearer(TOKEN) });
        expect(ok.statusCode).toBe(200);
        expect(ok.body).toContain('# TYPE storefront_gateway_calls_total counter');
      } finally {
        await p.close();
      }
    },
    APP_TIMEOUT_MS,
  );

  it(
    'METRICS_PORT: /metrics moves to its own port (opened while the service listens), the main port no longer serves it',
    async () => {
      const port = await freePort();
      const p = await createTestApp({ env: { METRICS_PORT: String(port), METRICS_TOKEN: TOKEN } });
      try {
        await p.app.listen({ port: 0, host: '127.0.0.1' });
        const main = `http://127.0.0.1:${(p.app.server.address() as AddressInfo).port}`;
        expect((await fetch(`${main}/metrics`, { headers: bearer(TOKEN) })).status).toBe(404);
        expect((await fetch(`${main}/healthz`)).status).toBe(200);
        const internal = `http://127.0.0.1:${port}`;
        const refused = await fetch(`${internal}/metrics`);
        expect(refused.status).toBe(401);
        expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED');
        expect((await fetch(`${internal}/v1/models`, { headers: bearer(TOKEN) })).status).toBe(404);
        const text = await scrape(`${internal}/metrics`, bearer(TOKEN));
        expect(sample(text, 'http_request_duration_seconds_count', { method: 'GET', route: '/healthz', status_code: '200' })).toBe(1);
      } finally {
        await p.close();
      }
      // closed with the service
      await expect(fetch(`http://127.0.0.1:${port}/metrics`)).rejects.toThrow();
    },
    APP_TIMEOUT_MS,
  );

  it('refuses a METRICS_PORT equal to PORT and a short METRICS_TOKEN at start, naming both', () => {
    expect(() => loadConfig({ PORT: '3000', METRICS_PORT: '3000', METRICS_TOKEN: 'short', JWT_SECRET: 'x'.repeat(40) })).toThrow(
      /METRICS_PORT must differ from PORT[\s\S]*METRICS_TOKEN must be at least 16 characters/,
    );
    expect(loadConfig({ JWT_SECRET: 'x'.repeat(40), DATA_DIR: '/tmp/unused-metrics-config' }).metrics).toEqual({ port: null, token: null });
  });
});
