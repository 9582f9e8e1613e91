import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { createTestApp, json, type TestApp } from '../helpers/test-app.js';
import { allPages, member, publish, relogin, type Member } from '../helpers/community.js';
import { TRENDING_JOB } from '../../src/modules/community/jobs.js';

let t: TestApp;
let alice: Member;
let bob: Member;
let carol: Member;

beforeAll(async () => {
  t = await createTestApp();
  [alice, bob, carol] = [await member(t, 'Alice'), await member(t, 'Bob'), await member(t, 'Carol')];
});
afterAll(async () => t?.close());

const req = (method: 'GET' | 'POST' | 'DELETE', url: string, who?: Member | null, payload?: unknown) =>
  t.app.inject({ method, url, headers: who ? who.headers : {}, ...(payload === undefined ? {} : { payload: payload as object }) });
const ids = (items: Array<{ id: string }>) => items.map((p) => p.id);
const minute = 60_000;

describe('recent feed', () => {
  it('lists newest first, filters by hashtag, and fills likedByMe only for the signed-in viewer', async () => {
    const a = await publish(t, alice, { tags: ['Sunset'] });
    t.clock.advance(minute);
    const b = await publish(t, bob, { tags: ['city'] });
    t.clock.advance(minute);
    const c = await publish(t, carol, { tags: ['sunset', 'sea'] });
    await req('POST', `/v1/community/posts/${a.id}/like`, bob);
    const feed = json(await req('GET', '/v1/community/feed/recent?limit=50', bob));
    expect(ids(feed.items).slice(0, 3)).toEqual([c.id, b.id, a.id]);
    expect(feed.items.find((p: any) => p.id === a.id).likedByMe).toBe(true);
    expect(json(await req('GET', '/v1/community/feed/recent?limit=50')).items.find((p: any) => p.id === a.id).likedByMe).toBe(false);
    for (const tag of ['sunset', '%23Sunset', 'SUNSET']) {
      expect(ids(json(await req('GET', `/v1/community/feed/recent?tag=${tag}`)).items)).toEqual([c.id, a.id]);
    }
  });

  it('returns every row exactly once while posts are inserted between pages', async () => {
    const before = ids(await allPages(t, '/v1/community/feed/recent', {}, 50));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = json(await req('GET', `/v1/community/feed/recent?limit=2${cursor ? `&cursor=${cursor}` : ''}`));
      seen.push(...ids(page.items));
      cursor = page.nextCursor;
      // others publish while we page (newer rows land before the cursor, never inside the remaining pages)
      await Promise.all([publish(t, alice), publish(t, bob)]);
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.filter((id) => before.includes(id))).toEqual(before);
  });

  it('rejects unknown query keys, bad limits and bad cursors with 400', async () => {
    for (const query of ['foo=1', 'limit=0', 'limit=51', 'cursor=%%%', 'cursor=bm9wZQ']) {
      const response = await req('GET', `/v1/community/feed/recent?${query}`);
      expect(response.statusCode, query).toBe(400);
      expect(json(response).error.code).toBe('BAD_REQUEST');
    }
    expect((await req('GET', '/v1/community/feed/trending?tag=x')).statusCode).toBe(400);
  });
});

describe('following feed and follows', () => {
  it('is empty when following nobody, then shows only followed authors; follow/unfollow idempotent; NEW_FOLLOWER once', async () => {
    const dan = await member(t, 'Dan');
    expect((await req('GET', '/v1/community/feed/following', null)).statusCode).toBe(401);
    expect(json(await req('GET', '/v1/community/feed/following', dan))).toEqual({ items: [], nextCursor: null });
    for (let i = 0; i < 2; i++) expect(json(await req('POST', `/v1/community/users/${alice.handle}/follow`, dan))).toEqual({ ok: true });
    const followers = json(await req('GET', '/v1/notifications?limit=100', alice)).items.filter(
      (n: any) => n.type === 'NEW_FOLLOWER' && n.payload.handle === dan.handle,
    );
    expect(followers.length).toBe(1);
    const feed = await allPages(t, '/v1/community/feed/following', dan.headers);
    expect(feed.length).toBeGreaterThan(0);
    expect(feed.every((p) => p.author.id === alice.id)).toBe(true);
    const profile = json(await req('GET', `/v1/community/users/${alice.handle}`, dan));
    expect(profile).toMatchObject({ handle: alice.handle, followingThem: true, _count: { followers: 1, following: 0 } });
    expect(profile._count.posts).toBe((await allPages(t, `/v1/community/users/${alice.handle}/posts`)).length);
    expect(json(await req('GET', `/v1/community/users/${alice.handle}`)).followingThem).toBe(false);
    for (let i = 0; i < 2; i++) expect((await req('DELETE', `/v1/community/users/${alice.handle}/follow`, dan)).statusCode).toBe(200);
    expect(json(await req('GET', '/v1/community/feed/following', dan)).items).toEqual([]);
    expect((await req('POST', `/v1/community/users/${dan.handle}/follow`, dan)).statusCode).toBe(400);
    expect((await req('POST', '/v1/community/users/nobody_here/follow', dan)).statusCode).toBe(404);
    expect((await req('GET', '/v1/community/users/nobody_here')).statusCode).toBe(404);
  });

  it("pages exactly the followed authors' posts of the recent feed, at every page size, whoever posted a page alone", async () => {
    const reader = await member(t, 'Reader');
    const authors = [await member(t, 'F1'), await member(t, 'F2'), await member(t, 'F3'), await member(t, 'Unfollowed')];
    for (const followed of authors.slice(0, 3)) expect((await req('POST', `/v1/community/users/${followed.handle}/follow`, reader)).statusCode).toBe(200);
    // A fixed mix: runs by one author longer than a page, interleavings, and posts sharing a publishing time.
    const order = [0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 1, 3, 2, 2, 0, 1, 1, 1, 1, 1, 1, 3, 3, 0, 2];
    for (const [i, who] of order.entries()) {
      await publish(t, authors[who]!);
      if (i % 3 !== 0) t.clock.advance(1000);
    }
    const followed = new Set(authors.slice(0, 3).map((a) => a.id));
    const expected = (await allPages(t, '/v1/community/feed/recent', reader.headers, 50)).filter((p) => followed.has(p.author.id)).map((p) => p.id);
    expect(expected.length).toBeGreaterThanOrEqual(order.filter((who) => who < 3).length);
    for (const limit of [1, 2, 3, 5, 7, 20]) {
      expect(
        (await allPages(t, '/v1/community/feed/following', reader.headers, limit)).map((p) => p.id),
        `limit ${limit}`,
      ).toEqual(expected);
    }
  });
});

describe('blocks and mutes', () => {
  it('blocked and muted authors never appear for the viewer, in any feed or list; a block drops follows both ways', async () => {
    const eve = await member(t, 'Eve');
    const viewer = await member(t, 'Viewer');
    const original = await publish(t, alice);
    const evePost = await publish(t, eve, { tags: ['blocktest'], remixOfPostId: original.id });
    const comment = json(await req('POST', `/v1/community/posts/${original.id}/comments`, eve, { body: 'from eve' }));
    await req('POST', `/v1/community/users/${eve.handle}/follow`, viewer);
    await req('POST', `/v1/community/users/${viewer.handle}/follow`, eve);
    await t.services.community.feeds.recomputeTrending();

    const lists = async () => ({
      recent: ids(await allPages(t, '/v1/community/feed/recent', viewer.headers, 50)),
      tagged: ids(await allPages(t, '/v1/community/feed/recent?tag=blocktest', viewer.headers, 50)),
      trending: ids(await allPages(t, '/v1/community/feed/trending', viewer.headers, 50)),
      following: ids(await allPages(t, '/v1/community/feed/following', viewer.headers, 50)),
      userPosts: ids(await allPages(t, `/v1/community/users/${eve.handle}/posts`, viewer.headers, 50)),
      remixes: ids(await allPages(t, `/v1/community/posts/${original.id}/remixes`, viewer.headers, 50)),
      comments: ids(json(await req('GET', `/v1/community/posts/${original.id}/comments`, viewer)).items),
      works: (await allPages(t, '/v1/community/works', viewer.headers, 50)).map((w) => w.userWork.userProfile.userId as string),
    });
    const visible = await lists();
    for (const key of ['recent', 'tagged', 'trending', 'following', 'userPosts', 'remixes'] as const) expect(visible[key], key).toContain(evePost.id);
    expect(visible.comments).toContain(comment.id);
    expect(visible.works).toContain(eve.id);

    for (const kind of ['MUTE', 'BLOCK']) {
      expect((await req('POST', '/v1/account/blocks', viewer, { handle: eve.handle, kind })).statusCode).toBeLessThan(300);
      const hidden = await lists();
      for (const key of ['recent', 'tagged', 'trending', 'following', 'userPosts', 'remixes'] as const)
        expect(hidden[key], `${kind} ${key}`).not.toContain(evePost.id);
      expect(hidden.comments).not.toContain(comment.id);
      expect(hidden.works).not.toContain(eve.id);
    }
    // the block removed both follows
    expect(json(await req('GET', `/v1/community/users/${eve.handle}`, viewer))).toMatchObject({ followingThem: false, _count: { followers: 0, following: 0 } });
    expect((await req('GET', `/v1/community/posts/${evePost.id}`, viewer)).statusCode).toBe(404);
    expect((await req('POST', `/v1/community/users/${eve.handle}/follow`, viewer)).statusCode).toBe(403);
    // the blocked user no longer sees the blocker's posts either
    const viewerPost = await publish(t, viewer);
    expect(ids(await allPages(t, '/v1/community/feed/recent', eve.headers, 50))).not.toContain(viewerPost.id);
    expect((await req('POST', `/v1/community/posts/${viewerPost.id}/like`, eve)).statusCode).toBe(404);
    // anonymous readers and other users still see everything
    expect(ids(await allPages(t, '/v1/community/feed/recent', {}, 50))).toContain(evePost.id);
    // unblocking shows the author again
    await req('DELETE', `/v1/account/blocks/${eve.handle}`, viewer);
    expect(ids(await allPages(t, '/v1/community/feed/recent', viewer.headers, 50))).toContain(evePost.id);
  });
});

describe('account deletion', () => {
  it("a remix of a blocked or muted author's post shows no original author to that viewer, in feeds and on the post", async () => {
    const maker = await member(t, 'Maker');
    const remixer = await member(t, 'Remixer');
    const blocker = await member(t, 'Blocker');
    const original = await publish(t, maker);
    const remix = await publish(t, remixer, { remixOfPostId: original.id });
    const remixSeenBy = async (who: Member | null) => {
      const feed = await allPages(t, '/v1/community/feed/recent', who?.headers ?? {}, 50);
      const single = json(await req('GET', `/v1/community/posts/${remix.id}`, who));
      const byRemixer = await allPages(t, `/v1/community/users/${remixer.handle}/posts`, who?.headers ?? {}, 50);
      return [feed.find((p) => p.id === remix.id).remixOf, single.remixOf, byRemixer.find((p) => p.id === remix.id).remixOf];
    };
    for (const seen of await remixSeenBy(blocker)) expect(seen).toEqual({ id: original.id, author: expect.objectContaining({ handle: maker.handle }) });
    for (const kind of ['MUTE', 'BLOCK']) {
      expect((await req('POST', '/v1/account/blocks', blocker, { handle: maker.handle, kind })).statusCode).toBeLessThan(300);
      for (const seen of await remixSeenBy(blocker)) expect(seen, kind).toEqual({ id: original.id, author: null });
    }
    // everyone else still sees who made the original
    for (const seen of await remixSeenBy(null)) expect(seen.author.handle).toBe(maker.handle);
  });

  it("a deleted account's posts and works leave every list, and its follows go", async () => {
    const gone = await member(t, 'Gone');
    const post = await publish(t, gone);
    await req('POST', `/v1/community/users/${alice.handle}/follow`, gone);
    const followers = json(await req('GET', `/v1/community/users/${alice.handle}`))._count.followers;
    expect((await req('POST', '/v1/account/delete', gone, { password: gone.password })).statusCode).toBe(200);
    expect(ids(await allPages(t, '/v1/community/feed/recent', {}, 50))).not.toContain(post.id);
    expect((await req('GET', `/v1/community/posts/${post.id}`)).statusCode).toBe(404);
    expect((await allPages(t, '/v1/community/works', {}, 50)).some((w) => w.userWork?.userProfile.userId === gone.id)).toBe(false);
    expect((await req('GET', `/v1/community/users/${gone.handle}`)).statusCode).toBe(404);
    expect(json(await req('GET', `/v1/community/users/${alice.handle}`))._count.followers).toBe(followers - 1);
  });
});

describe('trending', () => {
  const score = (p: { likes: number; comments: number; shares: number; remixes: number; views: number }, hours: number) =>
    (p.likes * 3 + p.comments * 4 + p.shares * 6 + p.remixes * 8 + p.views * 0.5) / Math.pow(hours, 1.5);

  it('orders by the spec formula, recomputed by the scheduled job every 15 minutes; paging survives one recompute', async () => {
    const job = t.services.community.jobs().find((j) => j.name === TRENDING_JOB)!;
    expect(job.options?.cron).toBe('*/15 * * * *');
    const f = await member(t, 'Fay');
    const g = await member(t, 'Gus');
    // four posts of different ages and engagement
    const plan = [
      { likes: 0, comments: 0, shares: 0, remixes: 0, views: 4 },
      { likes: 2, comments: 1, shares: 0, remixes: 0, views: 1 },
      { likes: 1, comments: 0, shares: 1, remixes: 1, views: 0 },
      { likes: 0, comments: 2, shares: 0, remixes: 0, views: 2 },
    ];
    const posts: Array<{ id: string; publishedAt: number; plan: (typeof plan)[number] }> = [];
    for (const p of plan) {
      const post = await publish(t, f);
      posts.push({ id: post.id, publishedAt: Date.parse(post.publishedAt), plan: p });
      t.clock.advance(37 * minute);
      await relogin(t, f);
    }
    await relogin(t, g, alice);
    for (const p of posts) {
      if (p.plan.likes >= 1) await req('POST', `/v1/community/posts/${p.id}/like`, g);
      if (p.plan.likes >= 2) await req('POST', `/v1/community/posts/${p.id}/like`, alice);
      for (let i = 0; i < p.plan.comments; i++) await req('POST', `/v1/community/posts/${p.id}/comments`, g, { body: 'c' });
      for (let i = 0; i < p.plan.shares; i++) await req('POST', `/v1/community/posts/${p.id}/share`);
      for (let i = 0; i < p.plan.views; i++) await req('GET', `/v1/community/posts/${p.id}`);
      if (p.plan.remixes) await publish(t, g, { remixOfPostId: p.id });
    }
    t.clock.advance(15 * minute);
    await job.handler({}, { id: 'test', retryCount: 0 });
    const now = t.clock.now().getTime();
    const feed = await allPages(t, '/v1/community/feed/trending', {}, 50);
    for (const p of posts) {
      const expected = score(p.plan, (now - p.publishedAt) / 3_600_000);
      expect(feed.find((x) => x.id === p.id).trendingScore).toBeCloseTo(expected, 9);
    }
    // the stored score shows the same on the post and in the other feeds
    const top = feed[0];
    expect(json(await req('GET', `/v1/community/posts/${top.id}`)).trendingScore).toBe(top.trendingScore);
    expect((await allPages(t, `/v1/community/users/${top.author.handle}/posts`, {}, 50)).find((p) => p.id === top.id).trendingScore).toBe(top.trendingScore);
    // the whole feed is in descending stored-score order
    const scores = feed.map((p) => p.trendingScore);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    const ours = feed.filter((x) => posts.some((p) => p.id === x.id)).map((x) => x.id);
    const expectedOrder = [...posts]
      .sort((a, b) => score(b.plan, (now - b.publishedAt) / 3_600_000) - score(a.plan, (now - a.publishedAt) / 3_600_000))
      .map((p) => p.id);
    expect(ours).toEqual(expectedOrder);

    // time moves and the order changes with it: a recompute while paging keeps every row exactly once
    const first: any = json(await req('GET', '/v1/community/feed/trending?limit=3'));
    t.clock.advance(15 * minute);
    await relogin(t, g);
    await req('POST', `/v1/community/posts/${posts[0]!.id}/like`, g);
    await t.services.community.feeds.recomputeTrending();
    const rest = await (async () => {
      const items: any[] = [];
      let cursor: string | null = first.nextCursor;
      while (cursor) {
        const page: any = json(await req('GET', `/v1/community/feed/trending?limit=3&cursor=${cursor}`));
        items.push(...page.items);
        cursor = page.nextCursor;
      }
      return items;
    })();
    const all = ids([...first.items, ...rest]);
    expect(new Set(all).size).toBe(all.length);
    expect(new Set(all)).toEqual(new Set(ids(feed)));
    // a cursor two recomputes old is refused with a clear message
    await t.services.community.feeds.recomputeTrending();
    const stale = await req('GET', `/v1/community/feed/trending?limit=3&cursor=${first.nextCursor}`);
    expect(stale.statusCode).toBe(400);
    expect(json(stale).error.message).toMatch(/Start again without a cursor/);
  });

  it('recomputes in chunks of short transactions: mid-way the feed answers on the old scores, then all move at once', async () => {
    const h = await member(t, 'Hal');
    const mine: Array<{ id: string }> = [];
    for (let i = 0; i < 3; i++) mine.push(await publish(t, h));
    await relogin(t, alice);
    for (const post of mine) await req('POST', `/v1/community/posts/${post.id}/like`, alice);
    const before = await allPages(t, '/v1/community/feed/trending', {}, 50);
    const seenMidway: number[][] = [];
    const result = await t.services.community.feeds.recomputeTrending({
      chunkRows: 2,
      onChunk: async () => {
        // between two chunks no transaction is open: the feed answers, still on the epoch in force
        const page = await allPages(t, '/v1/community/feed/trending', {}, 50);
        seenMidway.push(mine.map((p) => page.find((x) => x.id === p.id).trendingScore));
      },
    });
    expect(result.moved).toBe(true);
    expect(seenMidway.length).toBeGreaterThan(1);
    const old = mine.map((p) => before.find((x) => x.id === p.id).trendingScore);
    for (const midway of seenMidway) expect(midway).toEqual(old);
    const after = await allPages(t, '/v1/community/feed/trending', {}, 50);
    for (const post of mine) expect(after.find((x) => x.id === post.id).trendingScore).toBeGreaterThan(0);
  });

  it('two overlapping recomputes move the epoch once; the one overtaken stops writing', async () => {
    const epochOf = async () =>
      Number((await t.platform.database.query<{ epoch: number }>('select epoch from community_trending_state where id = 1')).rows[0]!.epoch);
    const start = await epochOf();
    const results = await Promise.all([
      t.services.community.feeds.recomputeTrending({ chunkRows: 1 }),
      t.services.community.feeds.recomputeTrending({ chunkRows: 1 }),
    ]);
    expect(results.map((r) => r.moved).sort()).toEqual([false, true]);
    expect(await epochOf()).toBe(start + 1);
    const scrape = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(scrape.body).toMatch(/storefront_community_trending_recompute_seconds_count\{outcome="done"\} [1-9]/);
    expect(scrape.body).toMatch(/storefront_community_trending_recompute_seconds_count\{outcome="overtaken"\} [1-9]/);
  });

  it('never lists deleted or hidden (moderated) posts', async () => {
    await relogin(t, alice);
    const moderated = await publish(t, alice, { tags: ['moderated'] });
    await t.services.community.feeds.recomputeTrending();
    await t.platform.db.execute(sql`update community_posts set hidden_at = now() where id = ${moderated.id}`);
    for (const url of [
      '/v1/community/feed/recent',
      '/v1/community/feed/trending',
      '/v1/community/feed/recent?tag=moderated',
      `/v1/community/users/${alice.handle}/posts`,
    ]) {
      expect(ids(await allPages(t, url, {}, 50)), url).not.toContain(moderated.id);
    }
    expect((await req('GET', `/v1/community/posts/${moderated.id}`)).statusCode).toBe(404);
    const post = await publish(t, alice);
    await req('GET', `/v1/community/posts/${post.id}`);
    await t.services.community.feeds.recomputeTrending();
    expect(ids(await allPages(t, '/v1/community/feed/trending', {}, 50))).toContain(post.id);
    await req('DELETE', `/v1/community/posts/${post.id}`, alice);
    expect(ids(await allPages(t, '/v1/community/feed/trending', {}, 50))).not.toContain(post.id);
    expect(ids(await allPages(t, `/v1/community/users/${alice.handle}/posts`, {}, 50))).not.toContain(post.id);
  });
});
