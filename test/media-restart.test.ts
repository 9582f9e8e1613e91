import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { usageRecords } from '../src/db/schema/usage.js';
import { sharedDatabase, type SharedDatabase } from './helpers/shared-database.js';
import { bearer, json, signUp } from './helpers/test-app.js';
import { ledgerOf, walletState } from './helpers/gateway.js';

let shared: SharedDatabase;

beforeAll(async () => {
  shared = await sharedDatabase('restart');
});
afterAll(async () => shared?.close());

const instance = () => shared.instance({ startJobs: true });

describe('a job survives a server restart', () => {
  it('is picked up by the new instance, finishes and is charged exactly once', async () => {
    const first = await instance();
    const { accessToken, user } = await signUp(first.app);
    const before = await walletState({ platform: first.platform } as never, user.id);
    const submitted = await first.app.inject({
      method: 'POST',
      url: '/v1/ai/video',
      headers: bearer(accessToken),
      payload: { model: 'local/video', prompt: 'survives', durationSeconds: 1 },
    });
    expect(submitted.statusCode).toBe(200);
    const { jobId, creditsReserved } = json(submitted);
    // Wait until the first instance submitted the task upstream (RUNNING, mid-run), then stop it.
    for (let i = 0; ; i++) {
      const job = json(await first.app.inject({ method: 'GET', url: `/v1/jobs/${jobId}`, headers: bearer(accessToken) }));
      if (job.status === 'RUNNING' && job.estimatedSeconds !== null) break;
      if (i > 150) throw new Error(`job never started: ${JSON.stringify(job)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await first.app.close();

    const second = await instance();
    try {
      shared.clock.advance(60_000);
      let job: any;
      for (let i = 0; ; i++) {
        job = json(await second.app.inject({ method: 'GET', url: `/v1/jobs/${jobId}`, headers: bearer(accessToken) }));
        if (job.status === 'SUCCEEDED' || job.status === 'FAILED') break;
        if (i > 150) throw new Error(`job stuck after restart: ${JSON.stringify(job)}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(job).toMatchObject({ status: 'SUCCEEDED', creditsConsumed: creditsReserved });
      const t = { platform: second.platform } as never;
      expect(await ledgerOf(t, jobId)).toHaveLength(1);
      const after = await walletState(t, user.id);
      expect(after.balance).toBe(before.balance - creditsReserved);
      expect(after.ledgerSum).toBe(after.balance);
      expect(await second.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, jobId))).toHaveLength(1);
    } finally {
      await second.app.close();
    }
  });
});
