import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { usageRecords } from '../../../db/schema/usage.js';
import { solidPng } from '../../../../test/helpers/fake-media-upstreams.js';
import { klingApiKey, startFakeKling, type KlingFake } from '../providers/kling/kling.fake.js';
import { ledgerOf, providerEnv, setBalance, walletState } from '../../../../test/helpers/gateway.js';
import { sharedDatabase, type SharedDatabase } from '../../../../test/helpers/shared-database.js';
import { bearer, json, signUp } from '../../../../test/helpers/test-app.js';

/** A Kling job submitted by one instance of the service and finished by the next one (same database). */
let shared: SharedDatabase;
let fake: KlingFake;
beforeAll(async () => {
  fake = await startFakeKling();
  shared = await sharedDatabase('kling-restart');
});
afterAll(async () => {
  await shared?.close();
  await fake?.close();
});

describe('a Kling job across a restart', () => {
  it('is polled to the end by the new instance and charged once', async () => {
    const settings = { ...providerEnv('KLING', fake.baseUrl, [klingApiKey('AKalpha0001')]), ALLOW_PRIVATE_NETWORK: 'true' };
    // Each instance stores queue messages; the job steps are run by hand, as its workers would.
    const first = await shared.instance({ env: settings });
    await first.platform.jobs.start({ workers: false });
    const { accessToken, user } = await signUp(first.app);
    const asTest = (built: typeof first) => ({ platform: built.platform, services: built.services }) as never;
    await setBalance(asTest(first), user.id, 100_000_000);
    const before = await walletState(asTest(first), user.id);
    const seedImageUrl = `data:image/png;base64,${solidPng(32, 18).toString('base64')}`;
    const submitted = await first.app.inject({
      method: 'POST',
      url: '/v1/ai/video',
      headers: bearer(accessToken),
      payload: { model: 'kling/kling-v2-1', prompt: 'survives a restart', seedImageUrl },
    });
    expect(submitted.statusCode, submitted.body).toBe(200);
    const { jobId, creditsReserved } = json(submitted);
    await first.services.media.runJob(jobId);
    await first.services.media.pollJob(jobId);
    const running = json(await first.app.inject({ method: 'GET', url: `/v1/jobs/${jobId}`, headers: bearer(accessToken) }));
    expect(running.status).toBe('RUNNING');
    await first.app.close();

    const second = await shared.instance({ env: settings });
    await second.platform.jobs.start({ workers: false });
    try {
      for (let i = 0; i < 3; i++) await second.services.media.pollJob(jobId);
      const job = json(await second.app.inject({ method: 'GET', url: `/v1/jobs/${jobId}`, headers: bearer(accessToken) }));
      expect(job).toMatchObject({
        status: 'SUCCEEDED',
        creditsConsumed: creditsReserved,
        output: { videos: [{ url: expect.stringContaining('/v1/files/raw/') }] },
      });
      // One task at Kling, read by both instances.
      const creates = fake.requests.filter((r) => r.method === 'POST');
      expect(creates).toHaveLength(1);
      const [task] = [...fake.tasks.values()];
      expect(fake.requests.filter((r) => r.path === `/v1/videos/image2video/${task!.id}`)).toHaveLength(4);
      expect(await ledgerOf(asTest(second), jobId)).toHaveLength(1);
      const after = await walletState(asTest(second), user.id);
      expect(after.balance).toBe(before.balance - creditsReserved);
      expect(after.ledgerSum).toBe(after.balance);
      expect(await second.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, jobId))).toHaveLength(1);
    } finally {
      await second.app.close();
    }
  });
});
