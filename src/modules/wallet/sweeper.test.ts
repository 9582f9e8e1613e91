import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SWEEP_RESERVATIONS_JOB } from './jobs.js';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ startJobs: true });
});
afterAll(async () => t?.close());

async function until<T>(probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await probe();
    if (done(value) || Date.now() - started > timeoutMs) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

it('the pg-boss sweeper job settles a reservation a crashed process left open', async () => {
  const { user } = await signUp(t.app);
  const wallet = t.services.wallet;
  const crashed = `req_${randomUUID()}`;
  const streaming = `req_${randomUUID()}`;
  await wallet.reserve({ userId: user.id, tokens: 200_000, requestId: crashed });
  await wallet.reserve({ userId: user.id, tokens: 200_000, requestId: streaming });
  await wallet.markInFlight({ requestId: streaming, usedTokens: 12_345 });

  // The process "dies" here: nobody settles. Once the lease is over the sweeper takes over.
  t.clock.advance(16 * 60_000);
  await t.platform.jobs.send(SWEEP_RESERVATIONS_JOB, {});
  const swept = await until(
    async () => [await wallet.reservation(crashed), await wallet.reservation(streaming)],
    ([a, b]) => a?.status === 'RELEASED' && b?.status === 'SETTLED',
  );
  expect(swept[0]).toMatchObject({ status: 'RELEASED', chargedTokens: 0 });
  expect(swept[1]).toMatchObject({ status: 'SETTLED', chargedTokens: 12_345 });
  const balance = await wallet.balance({ userId: user.id });
  expect(balance.tokens).toBe(1_000_000 - 12_345);
  expect(await wallet.findImbalances()).toEqual([]);
});
