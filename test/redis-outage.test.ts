import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { within } from './helpers/eventually.js';
import { freePort } from './helpers/free-port.js';
import { createTestApp, json, type TestApp } from './helpers/test-app.js';

/**
 * A Redis outage (a Redis of the test's own, stopped and started again): /readyz reports it and stays ready
 * (`degraded`), and the rate limits keep applying, counted by the instance alone, until Redis answers again.
 */
const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0;

let port: number;
let redis: ChildProcess | null = null;
let t: TestApp;

const answers = (): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => {
      socket.destroy();
      resolve(String(data).startsWith('+PONG'));
    });
    socket.once('error', () => resolve(false));
  });

async function startRedis(): Promise<void> {
  redis = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  await within(answers, 10_000);
}

async function stopRedis(): Promise<void> {
  const exited = new Promise((resolve) => redis!.once('exit', resolve));
  redis!.kill('SIGKILL');
  await exited;
  redis = null;
}

beforeAll(async () => {
  if (!hasRedisServer) return;
  port = await freePort();
  await startRedis();
  t = await createTestApp({ env: { REDIS_URL: `redis://127.0.0.1:${port}`, RATE_LIMIT_PER_MINUTE: '3' }, startJobs: true });
});
afterAll(async () => {
  await t?.close();
  if (redis) await stopRedis();
});

const ready = async () => json<{ status: string; checks: Record<string, string> }>(await t.app.inject({ url: '/readyz' }));
const metric = async (name: string) => {
  const text = (await t.app.inject({ url: '/metrics' })).body;
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
};
const fromIp = (ip: string) => t.app.inject({ url: '/v1/auth/config', remoteAddress: ip }).then((r) => r.statusCode);

describe.runIf(hasRedisServer)('a Redis outage', () => {
  it('is reported by /readyz, which stays ready, and rate limits keep applying per instance until Redis is back', async () => {
    // The service's Redis client connects in the background after the start: ready once it has.
    await within(async () => (await ready()).status === 'ready', 10_000);
    expect(await ready()).toEqual({ status: 'ready', checks: { database: 'ok', jobs: 'ok', redis: 'ok' } });
    expect(await metric('storefront_rate_limit_redis_up')).toBe(1);

    await stopRedis();
    const readiness = await t.app.inject({ url: '/readyz' });
    expect(readiness.statusCode).toBe(200);
    expect(json(readiness)).toEqual({ status: 'degraded', checks: { database: 'ok', jobs: 'ok', redis: 'unavailable' } });

    // The limit of 3 a minute still applies, counted here.
    expect([await fromIp('198.51.100.7'), await fromIp('198.51.100.7'), await fromIp('198.51.100.7')]).toEqual([200, 200, 200]);
    expect(await fromIp('198.51.100.7')).toBe(429);
    expect(await fromIp('198.51.100.8')).toBe(200);
    expect(await metric('storefront_rate_limit_redis_up')).toBe(0);
    expect(await metric('storefront_rate_limit_local_counts_total')).toBeGreaterThanOrEqual(5);

    await startRedis();
    await within(async () => (await ready()).status === 'ready', 15_000);
    expect((await ready()).checks.redis).toBe('ok');
    // Counted in Redis again (a fresh count there), and shown so.
    expect(await fromIp('198.51.100.9')).toBe(200);
    expect(await metric('storefront_rate_limit_redis_up')).toBe(1);
  }, 60_000);
});
