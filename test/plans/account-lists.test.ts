// A user's account and community lists at 100k rows a table over 20k users are index-served: the signed-in user owns
// 2,000 rows of each (50 blocks), a post has 3,000 comments and 3,000 replies, and every SELECT a request sends is
// explained as sent (see test/helpers/plan-guard.ts): it must not read all of a large table, sort more than a page, go
// parallel or expect more rows than a page. PostgreSQL only (CI's PostgreSQL pass); PGlite holds no table of this size.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { member, type Member } from '../helpers/community.js';
import {
  OWNER_WEBHOOK_SQL,
  THREAD_POST_SQL,
  seedBlocks,
  seedComments,
  seedJobs,
  seedSecurityEvents,
  seedUsers,
  seedWebhookDeliveries,
  type ListsScale,
} from '../helpers/lists-scale.js';
import { testDatabaseUrl } from '../helpers/pg-admin.js';
import { openPlanGuard, type PlanGuard } from '../helpers/plan-guard.js';
import { createTestApp, type TestApp } from '../helpers/test-app.js';

const LARGE_TABLES = new Set([
  'users',
  'community_comments',
  'jobs',
  'user_blocks',
  'security_events',
  'webhook_endpoints',
  'webhook_deliveries',
  'webhook_attempts',
]);

describe.runIf(testDatabaseUrl())(
  "a user's jobs, comments, blocks, security events and webhook deliveries at 100k rows a table are index-served (PostgreSQL)",
  () => {
    let t: TestApp;
    let owner: Member;
    let guard: PlanGuard;
    let threadId: string;
    let webhookId: string;
    const idOf = async (expression: string) => (await t.platform.database.query<{ id: string }>(`select ${expression} as id`)).rows[0]!.id;

    beforeAll(async () => {
      t = await createTestApp();
      owner = await member(t, 'Owner');
      const scale: ListsScale = { users: 20_000, rows: 100_000, ownerId: owner.id };
      const db = t.platform.database;
      await seedUsers(db, scale);
      await seedComments(db, { ...scale, posts: 2_000, threadComments: 3_000 });
      await seedJobs(db, scale);
      await seedBlocks(db, scale);
      await seedSecurityEvents(db, scale);
      await seedWebhookDeliveries(db, scale);
      await db.query('analyze');
      threadId = await idOf(THREAD_POST_SQL);
      webhookId = await idOf(OWNER_WEBHOOK_SQL);
      guard = await openPlanGuard(t, LARGE_TABLES);
    }, 180_000);

    afterAll(async () => {
      await guard?.close();
      await t?.close();
    });

    // Not paged but bounded: 100 top-level comments of the 3,000, each with up to 100 replies (the first has 1,500).
    it.each([
      ['signed in (blocked and muted authors left out)', true],
      ['anonymous', false],
    ])('the comments of a post with 3,000 comments and 3,000 replies, %s', async (_, signedIn) => {
      const comments = await guard.expectStatementsIndexServed(`/v1/community/posts/${threadId}/comments`, signedIn ? owner.headers : {});
      expect(comments.items).toHaveLength(100);
      expect(comments.items[0].replies).toHaveLength(100);
    });

    /** One test per list and filter, so a report names every one that fails. */
    const pages: Array<[string, () => string]> = [
      ['jobs: every job', () => '/v1/jobs'],
      ['jobs: by status', () => '/v1/jobs?status=FAILED'],
      ['jobs: by kind', () => '/v1/jobs?kind=VIDEO'],
      ['blocked and muted users', () => '/v1/account/blocks'],
      ['security events', () => '/v1/account/security/events'],
      ["a webhook's deliveries, with their attempts", () => `/v1/webhooks/${webhookId}/deliveries`],
    ];
    it.each(pages)('%s', (_, url) => guard.expectIndexServed(url(), owner.headers));
  },
);
