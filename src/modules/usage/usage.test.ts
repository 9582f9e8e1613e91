import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

describe('usage.record', () => {
  it('writes a usage record with whole, non-negative units at the clock time', async () => {
    const { user } = await signUp(t.app);
    const row = await t.services.usage.record({
      userId: user.id,
      requestId: 'req-usage-1',
      operation: 'text.generate',
      status: 'PARTIAL',
      inputUnits: 12.6,
      outputUnits: -3,
      tokensConsumed: 40,
      latencyMs: 9.2,
      metadata: { note: 'x' },
    });
    expect(row).toMatchObject({
      userId: user.id,
      requestId: 'req-usage-1',
      operation: 'text.generate',
      status: 'PARTIAL',
      inputUnits: 13,
      outputUnits: 0,
      tokensConsumed: 40,
      latencyMs: 9,
      providerCostCents: 0,
      metadata: { note: 'x' },
      jobId: null,
      subscriptionId: null,
      providerAccountId: null,
    });
    expect(row.createdAt.toISOString()).toBe(t.clock.now().toISOString());
  });

  it('defaults the counters to zero and the metadata to an empty object', async () => {
    const { user } = await signUp(t.app);
    const row = await t.services.usage.record({ userId: user.id, requestId: 'req-usage-2', operation: 'prompt.enhance', status: 'FAILED' });
    expect(row).toMatchObject({ inputUnits: 0, outputUnits: 0, tokensConsumed: 0, providerCostCents: 0, latencyMs: 0, metadata: {} });
  });
});
