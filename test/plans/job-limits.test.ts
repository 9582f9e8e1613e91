// The plan's concurrentJobs is counted at every job submit: at 100k jobs over 20k users (the owner holding 2,000, all
// finished) the count of the owner's open jobs must not read all of the jobs table. PostgreSQL only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { member, type Member } from '../helpers/community.js';
import { seedJobs, seedUsers } from '../helpers/lists-scale.js';
import { testDatabaseUrl } from '../helpers/pg-admin.js';
import { planConnection, planProblems, selectsSentDuring, tablesRead } from '../helpers/plans.js';
import { createTestApp, json, type TestApp } from '../helpers/test-app.js';

describe.runIf(testDatabaseUrl())('the open-jobs count of a job submit at 100k jobs is index-served (PostgreSQL)', () => {
  let t: TestApp;
  let owner: Member;

  beforeAll(async () => {
    t = await createTestApp();
    await t.platform.jobs.start({ workers: false });
    owner = await member(t, 'Owner');
    await seedUsers(t.platform.database, { users: 20_000 });
    await seedJobs(t.platform.database, { users: 20_000, rows: 100_000, ownerId: owner.id });
    await t.platform.database.query('analyze');
  }, 180_000);

  afterAll(async () => t?.close());

  it('POST /v1/ai/video reads the open jobs from jobs_open_idx', async () => {
    const plans = await planConnection(t.platform.config.databaseUrl!);
    try {
      const sent = await selectsSentDuring(t.platform.database, async () => {
        const response = await t.app.inject({
          method: 'POST',
          url: '/v1/ai/video',
          headers: owner.headers,
          payload: { model: 'local/video', prompt: 'counted', durationSeconds: 1 },
        });
        expect(response.statusCode, response.body).toBe(200);
        expect(json(response).status).toBe('QUEUED');
      });
      const counts = sent.filter((statement) => /count\(\*\)/i.test(statement.text) && /"jobs"/.test(statement.text));
      expect(counts).toHaveLength(1);
      const plan = await plans.explain(counts[0]!);
      expect(planProblems(plan, new Set(['jobs']))).toEqual([]);
      expect(JSON.stringify(plan)).toContain('jobs_open_idx');
      expect(tablesRead(plan)).toEqual(['Index Scan on jobs']);
    } finally {
      await plans.close();
    }
  });
});
