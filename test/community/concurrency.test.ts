import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { createTestApp, json, type TestApp } from '../helpers/test-app.js';
import { allPages, generation, member, publish, type Member } from '../helpers/community.js';

let t: TestApp;
let author: Member;
let fans: Member[];

beforeAll(async () => {
  t = await createTestApp();
  author = await member(t, 'Author');
  fans = [];
  for (let i = 0; i < 20; i++) fans.push(await member(t, `Fan ${i}`));
});
afterAll(async () => t?.close());

const req = (method: 'GET' | 'POST' | 'DELETE', url: string, who?: Member | null, payload?: unknown) =>
  t.app.inject({ method, url, headers: who ? who.headers : {}, ...(payload === undefined ? {} : { payload: payload as object }) });
const scalar = async (query: ReturnType<typeof sql>): Promise<number> => Number(((await t.platform.db.execute(query)) as any).rows[0].n);

describe('counts under concurrency', () => {
  it('a like storm of 200 parallel requests from 20 users ends with likeCount 20 everywhere', async () => {
    const post = await publish(t, author, { tags: ['storm'] });
    const responses = await Promise.all(Array.from({ length: 200 }, (_, i) => req('POST', `/v1/community/posts/${post.id}/like`, fans[i % 20])));
    expect(responses.map((r) => r.statusCode)).toEqual(responses.map(() => 200));

    expect(json(await req('GET', `/v1/community/posts/${post.id}`)).likeCount).toBe(20);
    const inFeed = (items: any[]) => items.find((p) => p.id === post.id).likeCount;
    expect(inFeed(await allPages(t, '/v1/community/feed/recent?tag=storm', {}, 50))).toBe(20);
    expect(inFeed(await allPages(t, `/v1/community/users/${author.handle}/posts`, {}, 50))).toBe(20);
    await t.services.community.feeds.recomputeTrending();
    expect(inFeed(await allPages(t, '/v1/community/feed/trending', {}, 50))).toBe(20);
    expect(json(await req('GET', `/v1/community/posts/${post.id}/analytics`, author)).totals.likes).toBe(20);
    expect(json(await req('GET', '/v1/community/me/analytics', author)).totals.likes).toBe(20);
    expect(await scalar(sql`select count(*) as n from community_post_likes where post_id = ${post.id}`)).toBe(20);
    const notes = json(await req('GET', '/v1/notifications?limit=100', author)).items.filter(
      (n: any) => n.type === 'POST_LIKED' && n.payload.postId === post.id,
    );
    expect(notes.length).toBe(20);

    // likes and unlikes racing each other still agree with the like rows
    await Promise.all(
      fans.flatMap((fan, i) => [
        req(i % 2 ? 'DELETE' : 'POST', `/v1/community/posts/${post.id}/like`, fan),
        req('DELETE', `/v1/community/posts/${post.id}/like`, fan),
      ]),
    );
    const rows = await scalar(sql`select count(*) as n from community_post_likes where post_id = ${post.id}`);
    expect(json(await req('GET', `/v1/community/posts/${post.id}`)).likeCount).toBe(rows);
  });

  it('parallel views, shares and comments are all counted, and the counts agree with the lists', async () => {
    const post = await publish(t, author);
    await Promise.all([
      ...Array.from({ length: 40 }, () => req('GET', `/v1/community/posts/${post.id}`)),
      ...Array.from({ length: 30 }, () => req('POST', `/v1/community/posts/${post.id}/share`)),
      ...fans.map((fan, i) => req('POST', `/v1/community/posts/${post.id}/comments`, fan, { body: `comment ${i}` })),
    ]);
    const after = json(await req('GET', `/v1/community/posts/${post.id}`));
    expect(after).toMatchObject({ viewCount: 41, shareCount: 30, commentCount: 20 });
    expect(json(await req('GET', `/v1/community/posts/${post.id}/comments`)).items.length).toBe(20);
    const analytics = json(await req('GET', `/v1/community/posts/${post.id}/analytics`, author));
    expect(analytics.totals).toMatchObject({ views: 41, shares: 30, comments: 20 });
    expect(analytics.daily.at(-1)).toMatchObject({ views: 41, shares: 30, comments: 20 });
  });

  it('parallel republishing of one generation keeps one post and one work, and credits a remix once', async () => {
    const original = await publish(t, author);
    const gen = await generation(t, fans[0]!.id);
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) => req('POST', '/v1/community/posts', fans[0], { generationId: gen.id, caption: `v${i}`, remixOfPostId: original.id })),
    );
    expect(responses.map((r) => r.statusCode)).toEqual(responses.map(() => 201));
    expect(new Set(responses.map((r) => json(r).id)).size).toBe(1);
    expect(await scalar(sql`select count(*) as n from community_posts where generation_id = ${gen.id}`)).toBe(1);
    expect(await scalar(sql`select count(*) as n from community_works w join community_posts p on p.id = w.post_id where p.generation_id = ${gen.id}`)).toBe(1);
    expect(json(await req('GET', `/v1/community/posts/${original.id}`)).remixCount).toBe(1);
  });

  it('parallel follows of one user make one follow and one NEW_FOLLOWER notification', async () => {
    const fan = fans[1]!;
    await Promise.all(Array.from({ length: 10 }, () => req('POST', `/v1/community/users/${author.handle}/follow`, fan)));
    expect(json(await req('GET', `/v1/community/users/${author.handle}`))._count.followers).toBe(1);
    const notes = json(await req('GET', '/v1/notifications?limit=100', author)).items.filter((n: any) => n.type === 'NEW_FOLLOWER');
    expect(notes.length).toBe(1);
  });
});

describe('feeds under concurrent inserts', () => {
  it('walking the recent and following feeds while others publish returns each row exactly once', async () => {
    const reader = fans[2]!;
    for (const fan of fans.slice(3, 8)) await req('POST', `/v1/community/users/${fan.handle}/follow`, reader);
    for (const fan of fans.slice(3, 8)) await publish(t, fan);
    const recentBefore = (await allPages(t, '/v1/community/feed/recent', {}, 50)).map((p) => p.id);
    const followingBefore = (await allPages(t, '/v1/community/feed/following', reader.headers, 50)).map((p) => p.id);
    const [recent, following] = await Promise.all([
      allPages(t, '/v1/community/feed/recent', {}, 2),
      allPages(t, '/v1/community/feed/following', reader.headers, 1),
      ...fans.slice(3, 13).map((fan) => publish(t, fan)),
    ]);
    for (const [seen, before] of [
      [recent.map((p: any) => p.id), recentBefore],
      [following.map((p: any) => p.id), followingBefore],
    ] as Array<[string[], string[]]>) {
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen.filter((id) => before.includes(id))).toEqual(before);
    }
  });
});
