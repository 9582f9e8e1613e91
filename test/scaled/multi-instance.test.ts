import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BuiltApp } from '../../src/app.js';
import { auditWriterFor, CLI_ACTOR } from '../../src/modules/audit/service.js';
import { setPlan } from '../helpers/gateway.js';
import { eventually } from '../helpers/webhook-receiver.js';
import { startRoundRobinProxy, type RoundRobinProxy } from '../helpers/round-robin-proxy.js';
import { sharedDatabase, type SharedDatabase } from '../helpers/shared-database.js';

/**
 * Three instances of the service on one PostgreSQL database and one Redis, behind a round-robin proxy: what a scaled
 * deployment promises, checked through the proxy. Instance A runs no job workers, so every job runs on B or C while
 * its stream may be read on A.
 */
const databaseUrl = process.env.TEST_DATABASE_URL?.trim();
const redisUrl = process.env.TEST_REDIS_URL?.trim();
const skipReason = !databaseUrl ? 'TEST_DATABASE_URL is not set (PostgreSQL)' : !redisUrl ? 'TEST_REDIS_URL is not set (Redis)' : null;
if (skipReason) console.log(`multi-instance test skipped: ${skipReason}`);

const RATE_LIMIT = 30;
let shared: SharedDatabase;
let proxy: RoundRobinProxy;
const instances: BuiltApp[] = [];
const urls: string[] = [];
const dirs: string[] = [];

/** A client address of its own per call unless one is named, so the per-IP limit only bites where a test wants it. */
const randomIp = () => `10.${randomBytes(1)[0]}.${randomBytes(1)[0]}.${1 + (randomBytes(1)[0]! % 250)}`;

interface CallOptions {
  token?: string;
  body?: unknown;
  ip?: string;
  headers?: Record<string, string>;
  /** An instance's base URL instead of the proxy. */
  base?: string;
}
async function call(method: string, url: string, options: CallOptions = {}) {
  const response = await fetch(`${options.base ?? proxy.url}${url}`, {
    method,
    headers: {
      'x-forwarded-for': options.ip ?? randomIp(),
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...options.headers,
    },
    body: options.body !== undefined ? JSON.stringify(options.body) : undefined,
  });
  const bytes = Buffer.from(await response.arrayBuffer());
  const text = bytes.toString('utf8');
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  return { status: response.status, headers: response.headers, bytes, json };
}

let counter = 0;
async function signUp() {
  const email = `multi.${process.pid}.${Date.now()}.${counter++}@example.com`;
  const response = await call('POST', '/v1/auth/signup', { body: { email, password: 'correct horse battery', name: 'Multi Instance' } });
  expect(response.status).toBe(201);
  return { ...(response.json as { accessToken: string; refreshToken: string; user: { id: string } }), email };
}

/** Every /v1/files/raw/ URL in a JSON answer. */
const fileUrls = (value: unknown) => [...JSON.stringify(value).matchAll(/https?:\/\/[^"]+\/v1\/files\/raw\/[^"]+/g)].map((m) => m[0]);

beforeAll(async () => {
  if (skipReason) return;
  proxy = await startRoundRobinProxy();
  shared = await sharedDatabase('multi-instance');
  for (const name of ['a', 'b', 'c']) {
    const dir = await mkdtemp(path.join(os.tmpdir(), `storefront-multi-${name}-`));
    dirs.push(dir);
    const instance = await shared.instance({
      startJobs: name !== 'a',
      env: { DATA_DIR: dir, REDIS_URL: redisUrl!, TRUST_PROXY: 'true', RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT), PUBLIC_BASE_URL: proxy.url },
    });
    await instance.app.listen({ port: 0, host: '127.0.0.1' });
    instances.push(instance);
    urls.push(`http://127.0.0.1:${(instance.app.server.address() as AddressInfo).port}`);
  }
  proxy.setBackends(urls);
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  for (const instance of instances) await instance.app.close();
  await shared?.close();
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe.skipIf(skipReason)('three instances behind a round-robin proxy', () => {
  it('spreads requests over all three instances', async () => {
    const before = urls.map((url) => proxy.served.get(url) ?? 0);
    for (let i = 0; i < 6; i++) expect((await call('GET', '/healthz')).status).toBe(200);
    expect(urls.map((url, i) => (proxy.served.get(url) ?? 0) - before[i]!)).toEqual([2, 2, 2]);
  });

  it('accepts a session on every instance, refreshes it on another, and a sign-out refuses it everywhere', async () => {
    const { accessToken, refreshToken } = await signUp();
    for (const base of urls) expect((await call('GET', '/v1/users/me', { token: accessToken, base })).status).toBe(200);
    const refreshed = await call('POST', '/v1/auth/refresh', { body: { refreshToken } });
    expect(refreshed.status).toBe(200);
    const next = refreshed.json as { accessToken: string; refreshToken: string };
    for (const base of urls) expect((await call('GET', '/v1/users/me', { token: next.accessToken, base })).status).toBe(200);
    expect((await call('POST', '/v1/auth/logout', { body: { refreshToken: next.refreshToken } })).status).toBe(200);
    for (const base of urls) {
      await eventually(async () => (await call('GET', '/v1/users/me', { token: next.accessToken, base })).status === 401, `sign-out seen by ${base}`, 3000);
      expect((await call('POST', '/v1/auth/refresh', { body: { refreshToken: next.refreshToken }, base })).status).toBe(401);
    }
  });

  it('shares the per-IP rate limit through Redis: the budget is spent across instances, then every instance answers 429', async () => {
    const ip = randomIp();
    const statuses: number[] = [];
    for (let i = 0; i < RATE_LIMIT; i++) statuses.push((await call('GET', '/v1/auth/config', { ip })).status);
    expect(statuses.every((s) => s === 200)).toBe(true);
    for (const base of urls) {
      const limited = await call('GET', '/v1/auth/config', { ip, base });
      expect(limited.status).toBe(429);
      expect(limited.json.error.code).toBe('RATE_LIMITED');
    }
    expect((await call('GET', '/v1/auth/config')).status).toBe(200);
  });

  it('streams a job read on instance A while B or C runs it', async () => {
    const { accessToken } = await signUp();
    const submitted = await call('POST', '/v1/ai/image', {
      token: accessToken,
      body: { model: 'local/image', prompt: 'a harbour at night', width: 64, height: 64, async: true },
    });
    expect(submitted.status).toBe(200);
    const { jobId } = submitted.json as { jobId: string };
    const stream = await fetch(`${urls[0]}/v1/jobs/${jobId}/stream`, {
      headers: { authorization: `Bearer ${accessToken}`, accept: 'text/event-stream', 'x-forwarded-for': randomIp() },
    });
    expect(stream.status).toBe(200);
    const text = await stream.text();
    const states = [...text.matchAll(/^data: (.+)$/gm)].map((m) => JSON.parse(m[1]!).job?.status as string);
    expect(states.at(-1)).toBe('SUCCEEDED');
    const job = (await call('GET', `/v1/jobs/${jobId}`, { token: accessToken })).json;
    for (const url of fileUrls(job.output)) expect((await call('GET', new URL(url).pathname)).status).toBe(200);
  }, 60_000);

  it('serves every generated file (image, audio, video) from every instance through the proxy', async () => {
    const { accessToken, user } = await signUp();
    await setPlan({ platform: instances[0]!.platform }, user.id, 'starter');
    const image = await call('POST', '/v1/ai/image', {
      token: accessToken,
      body: { model: 'local/image', prompt: 'three lighthouses', count: 2, width: 64, height: 64 },
    });
    expect(image.status).toBe(200);
    const audio = await call('POST', '/v1/ai/audio', { token: accessToken, body: { model: 'local/speech', text: 'Heard on every instance.' } });
    expect(audio.status).toBe(200);
    const video = await call('POST', '/v1/ai/video', { token: accessToken, body: { model: 'local/video', prompt: 'waves', durationSeconds: 1 } });
    expect(video.status).toBe(200);
    const videoJob = await eventually(
      async () => {
        shared.clock.advance(10_000);
        const job = (await call('GET', `/v1/jobs/${video.json.jobId}`, { token: accessToken })).json;
        return ['SUCCEEDED', 'FAILED', 'CANCELED'].includes(job.status) ? job : undefined;
      },
      'the video job',
      45_000,
    );
    expect(videoJob.status).toBe('SUCCEEDED');
    const generated = [...fileUrls(image.json), ...fileUrls(audio.json), ...fileUrls(videoJob.output)];
    expect(generated.length).toBeGreaterThanOrEqual(4);
    for (const url of generated) {
      expect(url.startsWith(proxy.url)).toBe(true);
      const copies: Buffer[] = [];
      for (let i = 0; i < 3; i++) {
        const response = await call('GET', new URL(url).pathname);
        expect(response.status, url).toBe(200);
        copies.push(response.bytes);
      }
      expect(copies[0]!.length).toBeGreaterThan(0);
      expect(copies.every((copy) => copy.equals(copies[0]!))).toBe(true);
      const range = await call('GET', new URL(url).pathname, { headers: { range: 'bytes=0-15' } });
      expect(range.status).toBe(206);
      expect(range.bytes.equals(copies[0]!.subarray(0, 16))).toBe(true);
    }
  }, 90_000);

  it('refuses a revoked API key on every instance at once, wherever it was revoked', async () => {
    const { accessToken, user } = await signUp();
    await setPlan({ platform: instances[0]!.platform }, user.id, 'starter');
    const created = await call('POST', '/v1/account/api-keys', { token: accessToken, body: { label: 'multi', scopes: ['ai:text'] } });
    expect(created.status).toBe(201);
    const text = (base: string) =>
      call('POST', '/v1/ai/text', { token: created.json.key, base, body: { model: 'local/text', messages: [{ role: 'user', content: 'hi' }], maxTokens: 8 } });
    for (const base of urls) expect((await text(base)).status).toBe(200);
    await instances[0]!.services.apiKeys.revoke(user.id, created.json.id);
    for (const base of urls) await eventually(async () => (await text(base)).status === 401, `the revoked key refused by ${base}`, 2000);
  });

  it("drops a disabled provider's models from /v1/models on every instance, and a plan change from /v1/plans/:slug/models", async () => {
    const listed = (await call('GET', '/v1/models')).json;
    // Any listed model will do (without upstream credentials only the `local` provider's are servable); it comes back below.
    const model = (listed.items as { slug: string }[])[0];
    expect(model, JSON.stringify(listed).slice(0, 500)).toBeDefined();
    const providerSlug = model!.slug.split('/')[0]!;
    const hasModel = async (base: string) => ((await call('GET', '/v1/models', { base })).json.items as { slug: string }[]).some((m) => m.slug === model!.slug);
    for (const base of urls) expect(await hasModel(base)).toBe(true);
    await instances[0]!.services.catalog.setProviderStatus(providerSlug, 'DISABLED');
    try {
      for (const base of urls) await eventually(async () => !(await hasModel(base)), `${model!.slug} gone from ${base}`, 2000);
    } finally {
      await instances[0]!.services.catalog.setProviderStatus(providerSlug, 'ACTIVE');
    }
    for (const base of urls) await eventually(() => hasModel(base), `${model!.slug} back on ${base}`, 2000);

    // A plan with a model list of its own (not `allModels`), made by an operator, gets a model on instance B: every
    // instance lists it at once.
    const audit = auditWriterFor(instances[1]!.services.audit, CLI_ACTOR);
    const servableSlugs = ((await call('GET', '/v1/models')).json.items as { slug: string }[]).map((m) => m.slug);
    const first = await instances[1]!.services.catalog.resolveForGateway(servableSlugs[0]!);
    const plan = await instances[1]!.services.plans.admin.create(
      { slug: `listed-${Date.now()}`, name: 'Listed models', interval: 'MONTHLY', priceCents: 900, currency: 'USD', allModels: false, modelIds: [first.id] },
      audit,
    );
    const planModels = async (base: string) => JSON.stringify((await call('GET', `/v1/plans/${plan.slug}/models`, { base })).json);
    // The new plan reaches instance A's plan cache through the change notification, like every change below.
    await eventually(async () => (await planModels(urls[0]!)).includes(`"${first.slug}"`), `${plan.slug} listed on ${urls[0]}`, 2000);
    const before = await planModels(urls[0]!);
    expect(before).toContain(`"${first.slug}"`);
    const extra = servableSlugs.find((slug) => !before.includes(`"${slug}"`));
    expect(extra, `a servable model outside ${plan.slug}`).toBeDefined();
    const added = await instances[1]!.services.catalog.resolveForGateway(extra!);
    await instances[1]!.services.plans.allowModel(plan.id, added.id);
    try {
      for (const base of urls)
        await eventually(async () => (await planModels(base)).includes(`"${extra}"`), `${extra} listed in ${plan.slug} on ${base}`, 2000);
    } finally {
      await instances[1]!.services.plans.disallowModel(plan.id, added.id);
    }
    for (const base of urls) await eventually(async () => !(await planModels(base)).includes(`"${extra}"`), `${extra} gone from ${plan.slug} on ${base}`, 2000);
  });

  it('runs each every-minute schedule once per minute across the instances (sweepers of reservations and jobs, reconciliation, subscription lifecycle)', async () => {
    const queues = ['wallet.sweep-reservations', 'payments.reconcile', 'subscriptions.lifecycle', 'jobs.resume-abandoned'];
    const db = instances[0]!.platform.database;
    const perMinute = async () =>
      (
        await db.query<{ name: string; minute: string; n: string }>(
          `SELECT name, date_trunc('minute', created_on)::text AS minute, count(*)::text AS n FROM pgboss.job WHERE name = ANY($1) GROUP BY 1, 2`,
          [queues],
        )
      ).rows;
    // A schedule fires at the next minute's start, when pg-boss's clock monitor next looks: up to about 90 s away.
    const rows = await eventually(
      async () => {
        const found = await perMinute();
        return queues.every((q) => found.some((r) => r.name === q)) ? found : undefined;
      },
      'a run of every schedule',
      100_000,
    );
    for (const row of rows) expect(Number(row.n), `${row.name} at ${row.minute}`).toBe(1);
  }, 110_000);
});
