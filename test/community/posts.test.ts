import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { createTestApp, json, type TestApp } from '../helpers/test-app.js';
import { allPages, generation, member, publish, relogin, type Member } from '../helpers/community.js';

let t: TestApp;
let alice: Member;
let bob: Member;

beforeAll(async () => {
  t = await createTestApp();
  alice = await member(t, 'Alice');
  bob = await member(t, 'Bob');
});
afterAll(async () => t?.close());

const req = (method: 'GET' | 'POST' | 'DELETE', url: string, who?: Member | { headers: Record<string, string> } | null, payload?: unknown) =>
  t.app.inject({ method, url, headers: who ? who.headers : {}, ...(payload === undefined ? {} : { payload: payload as object }) });
const count = async (table: string): Promise<number> => {
  const result: any = await t.platform.db.execute(sql.raw(`select count(*)::int as n from ${table}`));
  return Number(result.rows[0].n);
};
const inbox = async (who: Member) => json(await req('GET', '/v1/notifications?limit=100', who)).items as any[];

describe('publishing', () => {
  it('publishes a generation: the post, PUBLIC visibility, and a NATIVE gallery work', async () => {
    const gen = await generation(t, alice.id, 'IMAGE');
    const response = await req('POST', '/v1/community/posts', alice, { generationId: gen.id, caption: 'Harbour at dawn', tags: ['#Sea', 'sea', ' Dawn '] });
    expect(response.statusCode).toBe(201);
    const post = json(response);
    expect(post).toMatchObject({
      caption: 'Harbour at dawn',
      tags: ['sea', 'dawn'],
      likeCount: 0,
      commentCount: 0,
      viewCount: 0,
      shareCount: 0,
      remixCount: 0,
      remixOf: null,
      trendingScore: 0,
      likedByMe: false,
      author: { id: alice.id, handle: alice.handle, name: 'Alice' },
      generation: { id: gen.id, kind: 'IMAGE', prompt: gen.prompt, model: { slug: 'local/image' } },
    });
    const library = json(await req('GET', `/v1/library/generations/${gen.id}`, alice));
    expect(library.visibility).toBe('PUBLIC');
    const works = json(await req('GET', '/v1/community/works?source=NATIVE&limit=50')).items;
    const work = works.find((w: any) => w.userWork.userProfile.userId === alice.id);
    expect(work).toMatchObject({
      type: 'WORK',
      userWork: { contentType: 'image', starNum: 0, userProfile: { handle: alice.handle }, _platform: { source: 'NATIVE', remixable: true, externalId: null } },
    });
  });

  it('publishes an image made through the gateway (local provider): the work shows the stored image', async () => {
    const made = await req('POST', '/v1/ai/image', bob, { model: 'local/image', prompt: 'a lighthouse at night', width: 64, height: 64 });
    expect(made.statusCode).toBe(200);
    const [item] = json(await req('GET', '/v1/library/generations?kind=IMAGE&limit=1', bob)).items;
    expect(item.prompt).toBe('a lighthouse at night');
    const post = json(await req('POST', '/v1/community/posts', bob, { generationId: item.id, caption: 'night shift' }));
    expect(post.generation).toMatchObject({
      id: item.id,
      kind: 'IMAGE',
      output: { images: [{ url: json(made).images[0].url }] },
      model: { slug: 'local/image' },
    });
    const work = (await allPages(t, '/v1/community/works?source=NATIVE', {}, 50)).find((w) => w.userWork.userProfile.userId === bob.id);
    expect(work.userWork.resource.resource).toBe(json(made).images[0].url);
    const image = await t.app.inject({ method: 'GET', url: new URL(work.userWork.resource.resource).pathname });
    expect(image.statusCode).toBe(200);
    expect(image.headers['content-type']).toBe('image/png');
  });

  it('republishing updates the same post and the same work, never duplicates', async () => {
    const gen = await generation(t, alice.id, 'VIDEO');
    const first = json(await req('POST', '/v1/community/posts', alice, { generationId: gen.id, caption: 'one' }));
    const [posts, works] = [await count('community_posts'), await count('community_works')];
    const again = await req('POST', '/v1/community/posts', alice, { generationId: gen.id, caption: 'two', tags: ['x'] });
    expect(again.statusCode).toBe(201);
    expect(json(again)).toMatchObject({ id: first.id, caption: 'two', tags: ['x'], publishedAt: first.publishedAt });
    expect([await count('community_posts'), await count('community_works')]).toEqual([posts, works]);
  });

  it('text and not-yet-rendered video make a post but no gallery work', async () => {
    const works = await count('community_works');
    await publish(t, alice, {}, 'TEXT');
    const pending = await generation(t, alice.id, 'VIDEO', { videos: [] });
    expect((await req('POST', '/v1/community/posts', alice, { generationId: pending.id })).statusCode).toBe(201);
    expect(await count('community_works')).toBe(works);
  });

  it('refuses bad input with 400 and changes nothing; a foreign or unknown generation is 404', async () => {
    const gen = await generation(t, alice.id);
    const before = await count('community_posts');
    for (const payload of [
      {},
      { generationId: gen.id, caption: 'x'.repeat(2001) },
      { generationId: gen.id, tags: Array.from({ length: 11 }, (_, i) => `t${i}`) },
      { generationId: gen.id, tags: ['x'.repeat(41)] },
      { generationId: gen.id, extra: true },
    ]) {
      const response = await req('POST', '/v1/community/posts', alice, payload);
      expect(response.statusCode).toBe(400);
      expect(json(response).error.code).toBe('BAD_REQUEST');
    }
    expect((await req('POST', '/v1/community/posts', bob, { generationId: gen.id })).statusCode).toBe(404);
    expect((await req('POST', '/v1/community/posts', alice, { generationId: 'nope' })).statusCode).toBe(404);
    expect((await req('POST', '/v1/community/posts', alice, { generationId: gen.id, remixOfPostId: '01900000-0000-7000-8000-000000000000' })).statusCode).toBe(
      404,
    );
    expect(await count('community_posts')).toBe(before);
    expect(json(await req('GET', `/v1/library/generations/${gen.id}`, alice)).visibility).not.toBe('PUBLIC');
    expect((await req('POST', '/v1/community/posts', null, { generationId: gen.id })).statusCode).toBe(401);
  });

  it('remixOfPostId credits the original once, however often the remix is republished', async () => {
    const original = await publish(t, alice);
    const gen = await generation(t, bob.id);
    for (let i = 0; i < 3; i++) {
      const remix = json(await req('POST', '/v1/community/posts', bob, { generationId: gen.id, remixOfPostId: original.id }));
      expect(remix.remixOf).toMatchObject({ id: original.id, author: { handle: alice.handle } });
    }
    const after = json(await req('GET', `/v1/community/posts/${original.id}`));
    expect(after.remixCount).toBe(1);
    const remixes = json(await req('GET', `/v1/community/posts/${original.id}/remixes`));
    expect(remixes.items.map((p: any) => p.generation.id)).toEqual([gen.id]);
    const work = json(await req('GET', '/v1/community/works?source=NATIVE&limit=50')).items.find(
      (w: any) => w.userWork.userProfile.userId === alice.id && w.userWork._platform.remixCount === 1,
    );
    expect(work).toBeDefined();
  });
});

describe('reading, deleting', () => {
  it('GET counts a view each time and fills likedByMe for a signed-in viewer', async () => {
    const post = await publish(t, alice);
    expect(json(await req('GET', `/v1/community/posts/${post.id}`)).viewCount).toBe(1);
    await req('POST', `/v1/community/posts/${post.id}/like`, bob);
    const seen = json(await req('GET', `/v1/community/posts/${post.id}`, bob));
    expect(seen).toMatchObject({ viewCount: 2, likeCount: 1, likedByMe: true });
    expect(json(await req('GET', `/v1/community/posts/${post.id}`, { headers: { authorization: 'Bearer garbage' } })).likedByMe).toBe(false);
  });

  it("another user's post cannot be deleted (403); the author's delete hides post and work (404 after)", async () => {
    const post = await publish(t, alice);
    const forbidden = await req('DELETE', `/v1/community/posts/${post.id}`, bob);
    expect(forbidden.statusCode).toBe(403);
    expect(json(forbidden).error.code).toBe('FORBIDDEN');
    expect((await req('GET', `/v1/community/posts/${post.id}`)).statusCode).toBe(200);
    const works = json(await req('GET', '/v1/community/works?source=NATIVE&limit=50')).items.length;
    expect((await req('DELETE', `/v1/community/posts/${post.id}`, alice)).statusCode).toBe(200);
    expect((await req('GET', `/v1/community/posts/${post.id}`)).statusCode).toBe(404);
    expect((await req('DELETE', `/v1/community/posts/${post.id}`, alice)).statusCode).toBe(404);
    expect(json(await req('GET', '/v1/community/works?source=NATIVE&limit=50')).items.length).toBe(works - 1);
    expect(json(await req('GET', '/v1/community/feed/recent?limit=50')).items.map((p: any) => p.id)).not.toContain(post.id);
    // republishing the generation brings the same post and work back
    const again = json(await req('POST', '/v1/community/posts', alice, { generationId: post.generation.id }));
    expect(again.id).toBe(post.id);
    expect((await req('GET', `/v1/community/posts/${post.id}`)).statusCode).toBe(200);
    expect(json(await req('GET', '/v1/community/works?source=NATIVE&limit=50')).items.length).toBe(works);
  });
});

describe('likes', () => {
  it('like and unlike are idempotent; the first like ever notifies the author once', async () => {
    const post = await publish(t, alice);
    const before = (await inbox(alice)).filter((n) => n.type === 'POST_LIKED').length;
    for (let i = 0; i < 2; i++) expect(json(await req('POST', `/v1/community/posts/${post.id}/like`, bob))).toEqual({ ok: true });
    expect(json(await req('GET', `/v1/community/posts/${post.id}`)).likeCount).toBe(1);
    for (let i = 0; i < 2; i++) expect((await req('DELETE', `/v1/community/posts/${post.id}/like`, bob)).statusCode).toBe(200);
    expect(json(await req('GET', `/v1/community/posts/${post.id}`)).likeCount).toBe(0);
    await req('POST', `/v1/community/posts/${post.id}/like`, bob);
    const liked = (await inbox(alice)).filter((n) => n.type === 'POST_LIKED');
    expect(liked.length - before).toBe(1);
    expect(liked[0].payload).toMatchObject({ postId: post.id, handle: bob.handle });
    expect((await req('POST', `/v1/community/posts/01900000-0000-7000-8000-000000000000/like`, bob)).statusCode).toBe(404);
  });

  it('respects the inAppCommunityActivity preference', async () => {
    const carol = await member(t, 'Carol');
    await req('PATCH' as 'POST', '/v1/account/notification-prefs', carol, { inAppCommunityActivity: false });
    const post = await publish(t, carol);
    await req('POST', `/v1/community/posts/${post.id}/like`, bob);
    await req('POST', `/v1/community/posts/${post.id}/comments`, bob, { body: 'nice' });
    await req('POST', `/v1/community/users/${carol.handle}/follow`, bob);
    expect(await inbox(carol)).toEqual([]);
  });
});

describe('comments', () => {
  it('comments with one level of replies, oldest first; notifies the author; own soft delete only', async () => {
    const post = await publish(t, alice);
    const first = json(await req('POST', `/v1/community/posts/${post.id}/comments`, bob, { body: 'first' }));
    expect(first).toMatchObject({ body: 'first', author: { handle: bob.handle }, replies: [] });
    t.clock.advance(1000);
    const second = json(await req('POST', `/v1/community/posts/${post.id}/comments`, alice, { body: 'second' }));
    t.clock.advance(1000);
    const reply = json(await req('POST', `/v1/community/posts/${post.id}/comments`, alice, { body: 'reply', parentId: first.id }));
    t.clock.advance(1000);
    // a reply to a reply joins the top-level comment
    await req('POST', `/v1/community/posts/${post.id}/comments`, bob, { body: 'deeper', parentId: reply.id });
    const list = json(await req('GET', `/v1/community/posts/${post.id}/comments`));
    expect(list.items.map((c: any) => [c.body, c.replies.map((r: any) => r.body)])).toEqual([
      ['first', ['reply', 'deeper']],
      ['second', []],
    ]);
    expect(json(await req('GET', `/v1/community/posts/${post.id}`)).commentCount).toBe(4);
    const notes = (await inbox(alice)).filter((n) => n.type === 'POST_COMMENTED' && n.payload.postId === post.id);
    expect(notes.length).toBe(2); // bob's two; alice's own comments notify nobody

    expect((await req('DELETE', `/v1/community/comments/${second.id}`, bob)).statusCode).toBe(403);
    expect((await req('DELETE', `/v1/community/comments/${first.id}`, bob)).statusCode).toBe(200);
    expect((await req('DELETE', `/v1/community/comments/${first.id}`, bob)).statusCode).toBe(404);
    const after = json(await req('GET', `/v1/community/posts/${post.id}/comments`));
    expect(after.items.map((c: any) => c.body)).toEqual(['second']);
    expect(json(await req('GET', `/v1/community/posts/${post.id}`)).commentCount).toBe(1);
  });

  it('refuses empty or oversized bodies and unknown parents, changing nothing', async () => {
    const post = await publish(t, alice);
    for (const payload of [{ body: '' }, { body: '   ' }, { body: 'x'.repeat(2001) }, {}]) {
      expect((await req('POST', `/v1/community/posts/${post.id}/comments`, bob, payload)).statusCode).toBe(400);
    }
    expect(
      (await req('POST', `/v1/community/posts/${post.id}/comments`, bob, { body: 'x', parentId: '01900000-0000-7000-8000-000000000000' })).statusCode,
    ).toBe(404);
    expect(json(await req('GET', `/v1/community/posts/${post.id}`)).commentCount).toBe(0);
  });
});

describe('share, analytics, dashboard, recipe', () => {
  it('share counts and answers per-network links; counts agree on the post, the work and analytics', async () => {
    const post = await publish(t, alice);
    const shared = json(await req('POST', `/v1/community/posts/${post.id}/share`));
    expect(shared).toMatchObject({ ok: true, shareCount: 1 });
    expect(shared.url).toContain(`/community/posts/${post.id}`);
    expect(Object.keys(shared.links)).toEqual(expect.arrayContaining(['x', 'facebook', 'linkedin', 'reddit', 'whatsapp', 'telegram', 'email']));
    expect(shared.links.x).toContain(encodeURIComponent(shared.url));
    await req('POST', `/v1/community/posts/${post.id}/share`, bob);
    await req('GET', `/v1/community/posts/${post.id}`);
    await req('POST', `/v1/community/posts/${post.id}/like`, bob);
    await req('POST', `/v1/community/posts/${post.id}/comments`, bob, { body: 'hi' });

    const analytics = json(await req('GET', `/v1/community/posts/${post.id}/analytics?days=7`, alice));
    expect(analytics.totals).toEqual({ views: 1, likes: 1, comments: 1, shares: 2, remixes: 0 });
    const today = analytics.daily.at(-1);
    expect(today).toMatchObject({ date: t.clock.now().toISOString().slice(0, 10), views: 1, likes: 1, comments: 1, shares: 2 });
    expect(analytics.note).toMatch(/earlier days report 0 views/);
    const post2 = json(await req('GET', `/v1/community/posts/${post.id}`));
    expect(post2).toMatchObject({ shareCount: 2, likeCount: 1, commentCount: 1 });
    expect((await req('GET', `/v1/community/posts/${post.id}/analytics`, bob)).statusCode).toBe(403);
    expect((await req('GET', `/v1/community/posts/${post.id}/analytics?days=0`, alice)).statusCode).toBe(400);

    const dashboard = json(await req('GET', '/v1/community/me/analytics', alice));
    expect(dashboard.totals.posts).toBeGreaterThan(0);
    expect(dashboard.totals.shares).toBeGreaterThanOrEqual(2);
    expect(dashboard.topPosts.length).toBeLessThanOrEqual(5);
    expect(dashboard.daily.length).toBeGreaterThan(0);
  });

  it('recipe returns what the post was made with, omitting what is unknown', async () => {
    const post = await publish(t, alice, {}, 'VIDEO');
    const recipe = json(await req('GET', `/v1/community/posts/${post.id}/recipe`));
    expect(recipe).toMatchObject({ postId: post.id, kind: 'VIDEO', prompt: post.generation.prompt, parameters: { durationSeconds: 5 } });
    expect(recipe.model).toBeUndefined(); // saved without a video model
    const image = await publish(t, alice);
    expect(json(await req('GET', `/v1/community/posts/${image.id}/recipe`))).toMatchObject({ model: { slug: 'local/image' }, parameters: { count: 1 } });
  });
});

describe('reports', () => {
  it('files reports into the moderation queue (OPEN), once per open target; unknown targets 404; bad input 400', async () => {
    const post = await publish(t, alice);
    const report = await req('POST', '/v1/community/reports', bob, { targetType: 'POST', targetId: post.id, reason: 'spam' });
    expect(report.statusCode).toBe(201);
    expect(json(report)).toMatchObject({ targetType: 'POST', targetId: post.id, status: 'OPEN', reason: 'spam' });
    const again = json(await req('POST', '/v1/community/reports', bob, { targetType: 'POST', targetId: post.id, reason: 'spam again' }));
    expect(again.id).toBe(json(report).id);
    expect(json(await req('POST', '/v1/community/reports', bob, { targetType: 'USER', targetId: alice.handle, reason: 'rude' })).targetId).toBe(alice.id);
    expect((await req('POST', '/v1/community/reports', bob, { targetType: 'COMMENT', targetId: post.id, reason: 'x' })).statusCode).toBe(404);
    const before = await count('community_reports');
    for (const payload of [
      { targetType: 'POST', targetId: post.id, reason: 'x'.repeat(121) },
      { targetType: 'POST', targetId: post.id, reason: 'x', details: 'y'.repeat(2001) },
      { targetType: 'THING', targetId: post.id, reason: 'x' },
    ]) {
      expect((await req('POST', '/v1/community/reports', bob, payload)).statusCode).toBe(400);
    }
    expect(await count('community_reports')).toBe(before);
  });
});

// Last: it moves the clock a day forward (access tokens expire).
describe('analytics over days', () => {
  it('the daily series moves with the clock: a later day gets its own point', async () => {
    const post = await publish(t, bob);
    await req('GET', `/v1/community/posts/${post.id}`);
    t.clock.advance(24 * 3600 * 1000);
    await req('GET', `/v1/community/posts/${post.id}`);
    await req('GET', `/v1/community/posts/${post.id}`);
    // a day later the access tokens have expired: sign in again
    const login = json(await t.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: bob.email, password: bob.password } }));
    const { daily, totals } = json(
      await t.app.inject({ method: 'GET', url: `/v1/community/posts/${post.id}/analytics`, headers: { authorization: `Bearer ${login.accessToken}` } }),
    );
    expect(daily.slice(-2).map((d: any) => d.views)).toEqual([1, 2]);
    expect(totals.views).toBe(3);
  });
});

describe('data export', () => {
  it("the community's part of a data export holds the user's posts, comments, likes, follows and reports", async () => {
    await relogin(t, alice, bob); // the test before moved the clock a day
    const zoe = await member(t, 'Zoe');
    const post = await publish(t, zoe, { caption: 'mine' });
    const other = await publish(t, alice);
    await req('POST', `/v1/community/posts/${other.id}/like`, zoe);
    await req('POST', `/v1/community/posts/${other.id}/comments`, zoe, { body: 'hello' });
    await req('POST', `/v1/community/users/${alice.handle}/follow`, zoe);
    await req('POST', `/v1/community/users/${zoe.handle}/follow`, bob);
    await req('POST', '/v1/community/reports', zoe, { targetType: 'POST', targetId: other.id, reason: 'test' });
    const files = await t.services.community.exportSection.collect(zoe.id);
    const read = (name: string) => JSON.parse(String(files.find((f) => f.path === name)!.content));
    expect(read('posts.json')).toMatchObject([{ id: post.id, caption: 'mine', deletedAt: null }]);
    expect(read('comments.json')).toMatchObject([{ postId: other.id, body: 'hello' }]);
    expect(read('likes.json')).toMatchObject([{ postId: other.id }]);
    expect(read('following.json')).toMatchObject([{ handle: alice.handle }]);
    expect(read('followers.json')).toMatchObject([{ handle: bob.handle }]);
    expect(read('reports.json')).toMatchObject([{ targetType: 'POST', targetId: other.id, status: 'OPEN' }]);
  });
});
