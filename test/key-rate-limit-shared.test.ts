import { afterAll, describe, expect, it } from 'vitest';
import type { BuiltApp } from '../src/app.js';
import { createApiKey, setPlan } from './helpers/gateway.js';
import { sharedDatabase, type SharedDatabase } from './helpers/shared-database.js';
import { bearer, json, signUp } from './helpers/test-app.js';

/** An API key's requestsPerMinute counted once across two instances sharing Redis and the database. */
const redisUrl = process.env.TEST_REDIS_URL?.trim();

let shared: SharedDatabase | undefined;
const instances: BuiltApp[] = [];
afterAll(async () => {
  for (const instance of instances) await instance.app.close();
  await shared?.close();
});

describe.runIf(redisUrl)('per-key rate limit shared through Redis (REDIS_URL; skipped without TEST_REDIS_URL)', () => {
  it('holds across two instances', async () => {
    shared = await sharedDatabase('key-rate-limit');
    const env = { REDIS_URL: redisUrl! };
    const a = await shared.instance({ env });
    const b = await shared.instance({ env });
    instances.push(a, b);
    const { accessToken, user } = await signUp(a.app);
    await setPlan({ platform: a.platform }, user.id, 'starter');
    const { key } = await createApiKey({ app: a.app, platform: a.platform } as never, accessToken, ['ai:text'], { rateLimit: { requestsPerMinute: 3 } });
    const call = (on: BuiltApp) =>
      on.app.inject({
        method: 'POST',
        url: '/v1/ai/text',
        headers: bearer(key),
        payload: { model: 'local/text', messages: [{ role: 'user', content: 'hi' }], maxTokens: 8 },
      });
    expect([(await call(a)).statusCode, (await call(b)).statusCode, (await call(a)).statusCode]).toEqual([200, 200, 200]);
    for (const on of [b, a]) {
      const limited = await call(on);
      expect(limited.statusCode).toBe(429);
      expect(json(limited).error).toMatchObject({ code: 'RATE_LIMITED', details: { limit: 3 } });
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    }
  }, 120_000);
});
