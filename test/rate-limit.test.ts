import { afterAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { createTestApp, json, type TestApp } from './helpers/test-app.js';

const apps: TestApp[] = [];
afterAll(async () => {
  for (const app of apps) await app.close();
});

const config = async () => (await apps.at(-1)!.app.inject({ method: 'GET', url: '/v1/auth/config', remoteAddress: '203.0.113.7' })).statusCode;

describe('global per-IP rate limit (in memory)', () => {
  it('answers 429 in the envelope past RATE_LIMIT_PER_MINUTE, per IP, with Retry-After', async () => {
    const t = await createTestApp({ env: { RATE_LIMIT_PER_MINUTE: '5' } });
    apps.push(t);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push(await config());
    expect(statuses).toEqual([200, 200, 200, 200, 200]);

    const limited = await t.app.inject({ method: 'GET', url: '/v1/auth/config', remoteAddress: '203.0.113.7' });
    expect(limited.statusCode).toBe(429);
    expect(json(limited).error).toMatchObject({ code: 'RATE_LIMITED', message: expect.stringMatching(/Too many requests/), details: { limit: 5 } });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);

    // another address has its own budget; health probes are never limited
    expect((await t.app.inject({ method: 'GET', url: '/v1/auth/config', remoteAddress: '198.51.100.1' })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/healthz', remoteAddress: '203.0.113.7' })).statusCode).toBe(200);
  });

  it('defaults to 300 requests per minute', async () => {
    const t = await createTestApp({ env: { RATE_LIMIT_PER_MINUTE: '' } });
    apps.push(t);
    expect(t.platform.config.rateLimitPerMinute).toBe(300);
    const response = await t.app.inject({ method: 'GET', url: '/v1/auth/config' });
    expect(response.headers['x-ratelimit-limit']).toBe('300');
  });
});

const redisUrl = process.env.TEST_REDIS_URL?.trim();

describe.runIf(redisUrl)('rate limit shared through Redis (REDIS_URL)', () => {
  it('holds across two instances', async () => {
    const env = { RATE_LIMIT_PER_MINUTE: '4', REDIS_URL: redisUrl! };
    const a = await createTestApp({ env });
    const b = await createTestApp({ env });
    apps.push(a, b);
    const ip = `192.0.2.${randomBytes(1)[0]! % 250}`;
    const hit = (t: TestApp) => t.app.inject({ method: 'GET', url: '/v1/auth/config', remoteAddress: ip }).then((r) => r.statusCode);
    expect([await hit(a), await hit(b), await hit(a), await hit(b)]).toEqual([200, 200, 200, 200]);
    expect(await hit(a)).toBe(429);
    expect(await hit(b)).toBe(429);
  });
});
