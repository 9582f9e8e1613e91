// profileVisibility takes effect: FOLLOWERS_ONLY shows the author's posts and works to the author and their followers
// only, PRIVATE to the author alone (and the profile is then unknown to everyone else). Each test is the request of
// someone outside the audience (anonymous, a stranger, a follower of a PRIVATE account) and what they must not get.
import { readFile } from 'node:fs/promises';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userPreferences } from '../../src/db/schema/account.js';
import { communityFollows, communityPosts, communityWorks } from '../../src/db/schema/community.js';
import { notifications } from '../../src/db/schema/notifications.js';
import { allPages, generation, member, publish, type Member } from '../helpers/community.js';
import { createTestApp, json, type TestApp } from '../helpers/test-app.js';

type Visibility = 'PUBLIC' | 'FOLLOWERS_ONLY' | 'PRIVATE';
const TAG = 'audience_probe';
const MINUTE = 60_000;

let t: TestApp;
let author: Member;
let follower: Member;
let stranger: Member;
let other: Member;
/** `other`'s public post, which one of the author's posts remixes. */
let original: { id: string };
/** The author's posts (published while PUBLIC): a tagged remix of `original`, and a plain one. */
let remix: { id: string };
let plain: { id: string };
/** `other`'s remix of the author's plain post. */
let otherRemix: { id: string };
let authorWorks: string[];

const req = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, who?: Member | null, payload?: object) =>
  t.app.inject({ method, url, headers: who ? who.headers : {}, ...(payload ? { payload } : {}) });
const ids = (items: Array<{ id: string }>) => items.map((p) => p.id);
const db = () => t.platform.db;

async function setVisibility(who: Member, profileVisibility: Visibility) {
  const response = await req('PATCH', '/v1/account/preferences', who, { profileVisibility });
  expect(response.statusCode, response.body).toBe(200);
  expect(json(response).profileVisibility).toBe(profileVisibility);
}

/** Every list a post or work of the author may appear in, as `who` gets it. */
async function lists(who: Member | null) {
  const headers = who?.headers ?? {};
  return {
    recent: ids(await allPages(t, '/v1/community/feed/recent', headers, 50)),
    tagged: ids(await allPages(t, `/v1/community/feed/recent?tag=${TAG}`, headers, 50)),
    trending: ids(await allPages(t, '/v1/community/feed/trending', headers, 50)),
    following: who ? ids(await allPages(t, '/v1/community/feed/following', headers, 50)) : [],
    remixes: ids(await allPages(t, `/v1/community/posts/${original.id}/remixes`, headers, 50)),
    works: (await allPages(t, '/v1/community/works', headers, 50)).map((w) => w.userWork._platform.id as string),
  };
}

/** The author's posts in every list, on every single-post route and in the gallery: all there for `who`, or none. */
async function expectAudience(who: Member | null, sees: boolean, label: string) {
  const seen = await lists(who);
  const inList = (list: string[]) => [remix.id, plain.id].filter((id) => list.includes(id));
  for (const key of ['recent', 'trending'] as const) expect(inList(seen[key]), `${label}: ${key}`).toEqual(sees ? [remix.id, plain.id] : []);
  expect(inList(seen.tagged), `${label}: tagged`).toEqual(sees ? [remix.id] : []);
  expect(inList(seen.remixes), `${label}: remixes of another's post`).toEqual(sees ? [remix.id] : []);
  if (who === follower) expect(inList(seen.following), `${label}: following`).toEqual(sees ? [remix.id, plain.id] : []);
  expect(
    authorWorks.filter((id) => seen.works.includes(id)),
    `${label}: works`,
  ).toEqual(sees ? authorWorks : []);
  for (const url of [
    `/v1/community/posts/${plain.id}`,
    `/v1/community/posts/${plain.id}/comments`,
    `/v1/community/posts/${plain.id}/recipe`,
    `/v1/community/posts/${plain.id}/remixes`,
  ]) {
    const response = await req('GET', url, who);
    expect(response.statusCode, `${label}: ${url}`).toBe(sees ? 200 : 404);
    // Exactly what a deleted post answers: nothing tells the post exists.
    if (!sees) expect(json(response), url).toEqual(json(await req('GET', url.replace(plain.id, '01900000-0000-7000-8000-000000000000'), who)));
  }
  for (const work of authorWorks) expect((await req('GET', `/v1/community/works/${work}`, who)).statusCode, `${label}: work`).toBe(sees ? 200 : 404);
}

const postCounts = async (id: string) =>
  (
    await db()
      .select({
        likes: communityPosts.likeCount,
        comments: communityPosts.commentCount,
        views: communityPosts.viewCount,
        shares: communityPosts.shareCount,
        remixes: communityPosts.remixCount,
      })
      .from(communityPosts)
      .where(eq(communityPosts.id, id))
  )[0];
const workCounts = async (id: string) =>
  (await db().select({ likes: communityWorks.localLikeCount, views: communityWorks.localViewCount }).from(communityWorks).where(eq(communityWorks.id, id)))[0];

beforeAll(async () => {
  t = await createTestApp();
  [author, follower, stranger, other] = [await member(t, 'Author'), await member(t, 'Follower'), await member(t, 'Stranger'), await member(t, 'Other')];
  expect((await req('POST', `/v1/community/users/${author.handle}/follow`, follower)).statusCode).toBe(200);
  original = await publish(t, other);
  t.clock.advance(MINUTE);
  remix = await publish(t, author, { tags: [TAG], remixOfPostId: original.id });
  t.clock.advance(MINUTE);
  plain = await publish(t, author);
  t.clock.advance(MINUTE);
  otherRemix = await publish(t, other, { remixOfPostId: plain.id });
  await t.services.community.feeds.recomputeTrending();
  authorWorks = (await allPages(t, '/v1/community/works', {}, 50))
    .filter((w) => w.userWork.userProfile.userId === author.id)
    .map((w) => w.userWork._platform.id as string);
  expect(authorWorks).toHaveLength(2);
});
afterAll(async () => t?.close());

describe('FOLLOWERS_ONLY', () => {
  it('the existing posts and works leave every list and single route for anonymous readers and non-followers at once', async () => {
    await setVisibility(author, 'FOLLOWERS_ONLY');
    await expectAudience(null, false, 'anonymous');
    await expectAudience(stranger, false, 'stranger');
    // the user's posts list is an empty page, the profile card stays so people can find and follow the account
    for (const who of [null, stranger]) {
      expect(json(await req('GET', `/v1/community/users/${author.handle}/posts`, who))).toEqual({ items: [], nextCursor: null });
      expect(json(await req('GET', `/v1/community/users/${author.handle}`, who))).toMatchObject({ handle: author.handle, _count: { posts: 2 } });
    }
  });

  it('the author and their followers still see everything', async () => {
    await setVisibility(author, 'FOLLOWERS_ONLY');
    await expectAudience(follower, true, 'follower');
    await expectAudience(author, true, 'author');
    for (const who of [follower, author])
      expect(ids(await allPages(t, `/v1/community/users/${author.handle}/posts`, who.headers, 50))).toEqual([plain.id, remix.id]);
  });

  it('a stranger cannot like, comment, share, view or star a hidden post or work: 404 and no count moves', async () => {
    await setVisibility(author, 'FOLLOWERS_ONLY');
    const [post, work] = [await postCounts(plain.id), await workCounts(authorWorks[0]!)];
    const attempts: Array<[string, string, Member | null, object?]> = [
      ['POST', `/v1/community/posts/${plain.id}/like`, stranger],
      ['DELETE', `/v1/community/posts/${plain.id}/like`, stranger],
      ['POST', `/v1/community/posts/${plain.id}/comments`, stranger, { body: 'hello' }],
      ['POST', `/v1/community/posts/${plain.id}/share`, null],
      ['POST', `/v1/community/posts/${plain.id}/share`, stranger],
      ['GET', `/v1/community/posts/${plain.id}`, null],
      ['POST', `/v1/community/works/${authorWorks[0]}/like`, stranger],
      ['POST', `/v1/community/works/${authorWorks[0]}/view`, null],
      ['POST', `/v1/community/works/${authorWorks[0]}/view`, stranger],
    ];
    for (const [method, url, who, payload] of attempts) expect((await req(method as 'POST', url, who, payload)).statusCode, `${method} ${url}`).toBe(404);
    // nor remix it: the publication is refused and the original's remixCount stays
    const gen = await generation(t, stranger.id);
    expect((await req('POST', '/v1/community/posts', stranger, { generationId: gen.id, remixOfPostId: plain.id })).statusCode).toBe(404);
    expect(await db().select().from(communityPosts).where(eq(communityPosts.generationId, gen.id))).toEqual([]);
    expect(await postCounts(plain.id)).toEqual(post);
    expect(await workCounts(authorWorks[0]!)).toEqual(work);
    // a follower's view of the work counts
    expect(json(await req('POST', `/v1/community/works/${authorWorks[0]}/view`, follower)).viewCount).toBe(work!.views + 1);
  });

  it("a remix of the author's post shows no original author to those outside the audience", async () => {
    await setVisibility(author, 'FOLLOWERS_ONLY');
    const remixOf = async (who: Member | null) => [
      json(await req('GET', `/v1/community/posts/${otherRemix.id}`, who)).remixOf,
      (await allPages(t, '/v1/community/feed/recent', who?.headers ?? {}, 50)).find((p) => p.id === otherRemix.id).remixOf,
    ];
    for (const who of [null, stranger]) for (const seen of await remixOf(who)) expect(seen).toEqual({ id: plain.id, author: null });
    for (const who of [follower, author]) for (const seen of await remixOf(who)) expect(seen.author.handle).toBe(author.handle);
  });

  it('a post published while FOLLOWERS_ONLY is hidden from the start; following the author shows it', async () => {
    await setVisibility(author, 'FOLLOWERS_ONLY');
    const late = await publish(t, author);
    const newcomer = await member(t, 'Newcomer');
    expect(ids(await allPages(t, '/v1/community/feed/recent', newcomer.headers, 50))).not.toContain(late.id);
    expect((await req('GET', `/v1/community/posts/${late.id}`, newcomer)).statusCode).toBe(404);
    expect((await req('POST', `/v1/community/users/${author.handle}/follow`, newcomer)).statusCode).toBe(200);
    expect(ids(await allPages(t, '/v1/community/feed/recent', newcomer.headers, 50))).toContain(late.id);
    expect(ids(await allPages(t, '/v1/community/feed/following', newcomer.headers, 50))).toContain(late.id);
    expect((await req('GET', `/v1/community/posts/${late.id}`, newcomer)).statusCode).toBe(200);
    await req('DELETE', `/v1/community/posts/${late.id}`, author);
  });
});

describe('PRIVATE', () => {
  it('the posts and works are seen by the author alone, followers included in the rest', async () => {
    await setVisibility(author, 'PRIVATE');
    await expectAudience(null, false, 'anonymous');
    await expectAudience(stranger, false, 'stranger');
    await expectAudience(follower, false, 'follower');
    await expectAudience(author, true, 'author');
    expect(ids(await allPages(t, `/v1/community/users/${author.handle}/posts`, author.headers, 50))).toEqual([plain.id, remix.id]);
  });

  it('the profile and its posts list are 404 like an unknown handle to everyone but the author', async () => {
    await setVisibility(author, 'PRIVATE');
    const unknown = json(await req('GET', '/v1/community/users/nobody_at_all'));
    for (const who of [null, stranger, follower]) {
      for (const path of ['', '/posts']) {
        const response = await req('GET', `/v1/community/users/${author.handle}${path}`, who);
        expect(response.statusCode).toBe(404);
        expect(json(response)).toEqual({ error: { ...unknown.error, message: unknown.error.message.replace('nobody_at_all', author.handle) } });
      }
    }
    expect(json(await req('GET', `/v1/community/users/${author.handle}`, author))).toMatchObject({ id: author.id, handle: author.handle });
  });

  it('cannot be followed (404 like an unknown handle): no follow row, no notification', async () => {
    await setVisibility(author, 'PRIVATE');
    const notices = async () => (await db().select().from(notifications).where(eq(notifications.userId, author.id))).length;
    const before = await notices();
    const response = await req('POST', `/v1/community/users/${author.handle}/follow`, stranger);
    expect(response.statusCode).toBe(404);
    expect(json(response).error).toMatchObject({ code: 'NOT_FOUND', message: `No user has the handle @${author.handle}.` });
    expect(await db().select().from(communityFollows).where(eq(communityFollows.followerId, stranger.id))).toEqual([]);
    expect(await notices()).toBe(before);
    // unfollowing or reporting it tells a stranger nothing either
    expect((await req('DELETE', `/v1/community/users/${author.handle}/follow`, stranger)).statusCode).toBe(404);
    expect((await req('POST', '/v1/community/reports', stranger, { targetType: 'USER', targetId: author.handle, reason: 'probe' })).statusCode).toBe(404);
  });

  it('a follower may still leave the account; then it is unknown to them too', async () => {
    const leaver = await member(t, 'Leaver');
    await setVisibility(author, 'PUBLIC');
    expect((await req('POST', `/v1/community/users/${author.handle}/follow`, leaver)).statusCode).toBe(200);
    await setVisibility(author, 'PRIVATE');
    expect((await req('DELETE', `/v1/community/users/${author.handle}/follow`, leaver)).statusCode).toBe(200);
    expect(await db().select().from(communityFollows).where(eq(communityFollows.followerId, leaver.id))).toEqual([]);
    expect((await req('DELETE', `/v1/community/users/${author.handle}/follow`, leaver)).statusCode).toBe(404);
  });
});

describe('changing back', () => {
  it('PUBLIC again restores every post and work to everyone, and the profile to all', async () => {
    await setVisibility(author, 'PRIVATE');
    await setVisibility(author, 'PUBLIC');
    await expectAudience(null, true, 'anonymous');
    await expectAudience(stranger, true, 'stranger');
    await expectAudience(follower, true, 'follower');
    expect((await req('GET', `/v1/community/users/${author.handle}`)).statusCode).toBe(200);
  });

  it('a preference change that names another field only leaves the audience as it is', async () => {
    await setVisibility(author, 'FOLLOWERS_ONLY');
    expect((await req('PATCH', '/v1/account/preferences', author, { theme: 'dark' })).statusCode).toBe(200);
    await expectAudience(stranger, false, 'stranger');
    await setVisibility(author, 'PUBLIC');
  });
});

describe('consistency', () => {
  it('a post published while the author changes the preference never keeps the audience they left', async () => {
    const racer = await member(t, 'Racer');
    for (const target of ['PRIVATE', 'PUBLIC', 'FOLLOWERS_ONLY', 'PUBLIC'] as const) {
      await Promise.all([publish(t, racer), setVisibility(racer, target), publish(t, racer)]);
      const posts = await db().select({ v: communityPosts.authorVisibility }).from(communityPosts).where(eq(communityPosts.authorId, racer.id));
      const works = await db().select({ v: communityWorks.authorVisibility }).from(communityWorks).where(eq(communityWorks.userId, racer.id));
      expect(
        [...posts, ...works].map((r) => r.v),
        target,
      ).toEqual([...posts, ...works].map(() => target));
    }
  });

  it("the migration gives an author's existing posts and works the narrower audience they had chosen before it", async () => {
    const early = await member(t, 'Early');
    const post = await publish(t, early);
    // the state before the migration: a PRIVATE preference the rows never heard of
    await db().update(userPreferences).set({ profileVisibility: 'PRIVATE' }).where(eq(userPreferences.userId, early.id));
    await db().update(communityPosts).set({ authorVisibility: 'PUBLIC' }).where(eq(communityPosts.authorId, early.id));
    await db().update(communityWorks).set({ authorVisibility: 'PUBLIC' }).where(eq(communityWorks.userId, early.id));
    expect(ids(await allPages(t, '/v1/community/feed/recent', {}, 50))).toContain(post.id);
    const migration = await readFile(new URL('../../src/db/migrations/0031_author_visibility.sql', import.meta.url), 'utf8');
    const backfill = migration.split('--> statement-breakpoint').filter((s) => /^\s*(--.*\n\s*)*UPDATE/i.test(s));
    expect(backfill).toHaveLength(2);
    for (const statement of backfill) await db().execute(sql.raw(statement));
    expect(ids(await allPages(t, '/v1/community/feed/recent', {}, 50))).not.toContain(post.id);
    expect((await req('GET', `/v1/community/posts/${post.id}`)).statusCode).toBe(404);
    expect((await db().select({ v: communityWorks.authorVisibility }).from(communityWorks).where(eq(communityWorks.userId, early.id))).map((r) => r.v)).toEqual(
      ['PRIVATE'],
    );
    // everyone else's rows are untouched
    expect(ids(await allPages(t, '/v1/community/feed/recent', {}, 50))).toContain(plain.id);
  });
});
