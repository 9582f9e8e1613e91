import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BuiltApp } from '../src/app.js';
import { jobs } from '../src/db/schema/jobs.js';
import { setBalance, setPlan, walletState } from './helpers/gateway.js';
import { sharedDatabase, type SharedDatabase } from './helpers/shared-database.js';
import { bearer, json, signUp } from './helpers/test-app.js';

/**
 * A media job's row, its reservation and its queue message commit in one transaction: an instance that stops right
 * after answering leaves a message another instance runs, and a refused submission leaves neither row nor message.
 */
let shared: SharedDatabase;

beforeAll(async () => {
  shared = await sharedDatabase('enqueue');
});
afterAll(async () => shared?.close());

/** An instance whose job runner is started with or without workers (without: it only queues). */
async function instance(options: { workers: boolean }): Promise<BuiltApp> {
  const built = await shared.instance();
  await built.platform.jobs.start({ workers: options.workers });
  return built;
}

const count = async (on: BuiltApp, where: string, values: unknown[] = []) =>
  Number(
    (await on.platform.database.query<{ n: string | number }>(`select count(*) as n from pgboss.job where name = 'media.job-run'${where}`, values)).rows[0]!.n,
  );
const queued = (on: BuiltApp, jobId: string) => count(on, ` and data->>'jobId' = $1`, [jobId]);
const allQueued = (on: BuiltApp) => count(on, '');

describe('a media job and its queue message commit together', () => {
  it('an instance that stops before any worker ran the job leaves it to the next instance, which finishes it', async () => {
    const first = await instance({ workers: false });
    const { accessToken, user } = await signUp(first.app);
    // Two jobs open at once: more than the free plan runs.
    await setPlan(first, user.id, 'studio');
    const submitted = (payload: Record<string, unknown>) =>
      first.app.inject({ method: 'POST', url: payload.count ? '/v1/ai/image' : '/v1/ai/video', headers: bearer(accessToken), payload });
    const video = json(await submitted({ model: 'local/video', prompt: 'a lighthouse at dusk', durationSeconds: 1 }));
    const image = json(await submitted({ model: 'local/image', prompt: 'a lighthouse at dawn', count: 1, width: 64, height: 64, async: true }));
    for (const { jobId } of [video, image]) expect(await queued(first, jobId)).toBe(1);
    await first.app.close();

    const second = await instance({ workers: true });
    try {
      for (const { jobId } of [video, image]) {
        for (let i = 0; ; i++) {
          const [job] = await second.platform.db.select().from(jobs).where(eq(jobs.id, jobId));
          if (job!.status === 'SUCCEEDED') break;
          if (job!.status === 'FAILED' || i > 300) throw new Error(`job ${jobId} did not finish: ${JSON.stringify(job)}`);
          shared.clock.advance(5_000);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      const wallet = await walletState({ platform: second.platform } as never, user.id);
      expect(wallet.balance).toBe(wallet.ledgerSum);
    } finally {
      await second.app.close();
    }
  });

  it('a submission refused inside its transaction (the wallet is short) leaves no job and no message', async () => {
    const app = await instance({ workers: false });
    try {
      const { accessToken, user } = await signUp(app.app);
      await setBalance(app as never, user.id, 0);
      const before = await allQueued(app);
      const refused = await app.app.inject({
        method: 'POST',
        url: '/v1/ai/video',
        headers: bearer(accessToken),
        payload: { model: 'local/video', prompt: 'nothing to pay with', durationSeconds: 1 },
      });
      expect(refused.statusCode).toBe(429);
      expect(json(refused).error.code).toBe('QUOTA_EXCEEDED');
      expect(await allQueued(app)).toBe(before);
      expect(await app.platform.db.select().from(jobs).where(eq(jobs.userId, user.id))).toEqual([]);
    } finally {
      await app.app.close();
    }
  });
});
