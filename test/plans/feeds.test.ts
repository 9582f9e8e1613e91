// The community feeds at 100k posts use their indexes: every SELECT a feed page sends is explained as sent (same
// connection settings, same values, through the plan cache) and must not read all of a large table, sort more than a
// page, go parallel or expect more rows than a page. A connection setting or a query change that loses an index fails
// here, whatever the machine's speed. PostgreSQL only (CI's PostgreSQL pass); PGlite holds no table of this size.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { member, type Member } from '../helpers/community.js';
import { seedCommunity } from '../helpers/community-scale.js';
import { testDatabaseUrl } from '../helpers/pg-admin.js';
import { openPlanGuard, type PlanGuard } from '../helpers/plan-guard.js';
import { planConnection, planProblems, selectsSentDuring } from '../helpers/plans.js';
import { createTestApp, type TestApp } from '../helpers/test-app.js';

const LARGE_TABLES = new Set([
  'users',
  'generations',
  'community_posts',
  'community_post_scores',
  'community_works',
  'community_post_likes',
  'community_follows',
]);
const POSTS = 100_000;

describe.runIf(testDatabaseUrl())('feed statements at 100k posts are index-served (PostgreSQL)', () => {
  let t: TestApp;
  let viewer: Member;
  let guard: PlanGuard;

  beforeAll(async () => {
    t = await createTestApp();
    viewer = await member(t, 'Viewer');
    await seedCommunity(t.platform.database, { posts: POSTS, users: 20_000, viewerIds: [viewer.id], followsPerViewer: 200 });
    await t.services.community.feeds.recomputeTrending();
    await t.platform.database.query('analyze community_post_scores');
    guard = await openPlanGuard(t, LARGE_TABLES);
  }, 180_000);

  afterAll(async () => {
    await guard?.close();
    await t?.close();
  });

  const expectIndexServed = (url: string, headers: Record<string, string> = {}, maxSortRows?: number) => guard.expectIndexServed(url, headers, { maxSortRows });

  it('recent, signed in (hidden authors left out, likes read)', () => expectIndexServed('/v1/community/feed/recent', viewer.headers));
  it('recent, anonymous', () => expectIndexServed('/v1/community/feed/recent'));
  it('recent by tag (2% of posts), signed in and anonymous', async () => {
    await expectIndexServed('/v1/community/feed/recent?tag=tag7', viewer.headers);
    await expectIndexServed('/v1/community/feed/recent?tag=tag7');
  });
  it('trending, signed in and anonymous', async () => {
    await expectIndexServed('/v1/community/feed/trending', viewer.headers);
    await expectIndexServed('/v1/community/feed/trending');
  });
  // The newest page of each of the 200 followees, merged: the sort grows with the followees, never with the posts.
  it('following (200 followees)', () => expectIndexServed('/v1/community/feed/following', viewer.headers, 200 * 21));
  it("a user's posts (an author of 10k posts)", () => expectIndexServed('/v1/community/users/scale_u1/posts', viewer.headers));
  it('remixes of a post', async () => {
    const [original] = (await t.platform.database.query<{ id: string }>(`select md5('p' || 1)::uuid as id`)).rows;
    await expectIndexServed(`/v1/community/posts/${original!.id}/remixes`, viewer.headers);
  });
  it('the gallery: recent, top, by content type and by source', async () => {
    await expectIndexServed('/v1/community/works', viewer.headers);
    await expectIndexServed('/v1/community/works?sort=top');
    await expectIndexServed('/v1/community/works?contentType=video', viewer.headers);
    await expectIndexServed('/v1/community/works?source=NATIVE&sort=top');
  });

  it('would catch a generic plan: the same recent page planned generically expects more than a page', async () => {
    const sent = await selectsSentDuring(t.platform.database, () =>
      t.app.inject({ method: 'GET', url: '/v1/community/feed/recent?limit=20', headers: viewer.headers }),
    );
    const page = sent.find((s) => s.text.includes('order by p.published_at desc'))!;
    const generic = await planConnection(t.platform.config.databaseUrl!, '-c plan_cache_mode=force_generic_plan');
    try {
      expect(planProblems(await generic.explain(page), LARGE_TABLES).join('\n')).toMatch(/more than a page/);
    } finally {
      await generic.close();
    }
  });
});
