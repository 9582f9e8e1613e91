import { beforeAll, describe, expect, it } from 'vitest';
import type { BuiltApp } from '../../src/app.js';
import { member, publish, type Member } from '../helpers/community.js';
import { within } from '../helpers/eventually.js';
import { twoInstances } from '../helpers/shared-database.js';
import type { TestApp } from '../helpers/test-app.js';

/**
 * Each instance keeps what every signed-in feed page asks first (the viewer's hidden authors, the trending epoch in
 * force). Two instances on one database: a block or a recompute made through one changes what the other serves within
 * a second, and what the one that made it serves at once.
 */
const instances = twoInstances('feed-caches');
let a: TestApp;
let b: TestApp;
beforeAll(() => {
  const asTestApp = (built: BuiltApp) => built as TestApp;
  a = asTestApp(instances.a);
  b = asTestApp(instances.b);
});

const recentAuthors = async (on: TestApp, viewer: Member): Promise<string[]> => {
  const response = await on.app.inject({ method: 'GET', url: '/v1/community/feed/recent?limit=50', headers: viewer.headers });
  expect(response.statusCode).toBe(200);
  return response.json<{ items: Array<{ author: { id: string } }> }>().items.map((p) => p.author.id);
};

describe('the feeds follow blocks and recomputes made on another instance', () => {
  it('a block, a mute lifted and a block of the viewer each change the feed on both instances', async () => {
    const viewer = await member(a, 'Viewer');
    const author = await member(a, 'Author');
    const other = await member(a, 'Other');
    await publish(a, author, { caption: 'by the author' });
    await publish(a, other, { caption: 'by the other' });
    // Both instances have read (and kept) the viewer's hidden authors: none.
    expect(await recentAuthors(a, viewer)).toEqual(expect.arrayContaining([author.id, other.id]));
    expect(await recentAuthors(b, viewer)).toEqual(expect.arrayContaining([author.id, other.id]));

    expect(
      (await a.app.inject({ method: 'POST', url: '/v1/account/blocks', headers: viewer.headers, payload: { handle: author.handle, kind: 'MUTE' } })).statusCode,
    ).toBe(201);
    expect(await recentAuthors(a, viewer)).not.toContain(author.id);
    expect(await within(async () => !(await recentAuthors(b, viewer)).includes(author.id), 1000)).toBeLessThan(1000);

    expect((await b.app.inject({ method: 'DELETE', url: `/v1/account/blocks/${author.handle}`, headers: viewer.headers })).statusCode).toBe(200);
    expect(await recentAuthors(b, viewer)).toContain(author.id);
    expect(await within(async () => (await recentAuthors(a, viewer)).includes(author.id), 1000)).toBeLessThan(1000);

    // The other author blocks the viewer: the viewer's own cached entry is dropped too, on both instances.
    expect((await b.app.inject({ method: 'POST', url: '/v1/account/blocks', headers: other.headers, payload: { handle: viewer.handle } })).statusCode).toBe(
      201,
    );
    expect(await recentAuthors(b, viewer)).not.toContain(other.id);
    expect(await within(async () => !(await recentAuthors(a, viewer)).includes(other.id), 1000)).toBeLessThan(1000);
    expect(await recentAuthors(a, viewer)).toContain(author.id);
  });

  it("an author's new name and handle show on both instances' feeds", async () => {
    const viewer = await member(a, 'Reader of names');
    const author = await member(a, 'Old name');
    await publish(a, author);
    const shownAuthor = async (on: TestApp) => {
      const response = await on.app.inject({ method: 'GET', url: '/v1/community/feed/recent?limit=50', headers: viewer.headers });
      return response.json<{ items: Array<{ author: { id: string; name: string | null; handle: string } }> }>().items.find((p) => p.author.id === author.id)!
        .author;
    };
    expect(await shownAuthor(a)).toMatchObject({ name: 'Old name', handle: author.handle });
    expect(await shownAuthor(b)).toMatchObject({ name: 'Old name', handle: author.handle });

    expect((await a.app.inject({ method: 'PATCH', url: '/v1/users/me', headers: author.headers, payload: { name: 'New name' } })).statusCode).toBe(200);
    expect(await shownAuthor(a)).toMatchObject({ name: 'New name' });
    expect(await within(async () => (await shownAuthor(b)).name === 'New name', 1000)).toBeLessThan(1000);

    const handle = `renamed_${author.id.slice(-8)}`;
    expect((await b.app.inject({ method: 'PATCH', url: '/v1/account/profile', headers: author.headers, payload: { handle } })).statusCode).toBe(200);
    expect(await shownAuthor(b)).toMatchObject({ handle });
    expect(await within(async () => (await shownAuthor(a)).handle === handle, 1000)).toBeLessThan(1000);
  });

  it("a recompute on one instance moves the other's trending epoch", async () => {
    const author = await member(a, 'Trending author');
    await publish(a, author);
    await publish(a, author);
    // The cursor of a trending page carries the epoch the page was ordered by.
    const epochServedBy = async (on: TestApp): Promise<number> => {
      const page = (await on.app.inject({ method: 'GET', url: '/v1/community/feed/trending?limit=1' })).json<{ nextCursor: string }>();
      const [sort] = JSON.parse(Buffer.from(page.nextCursor, 'base64url').toString('utf8')) as [string, string];
      return Number(sort.split('|')[0]);
    };
    const before = await epochServedBy(b);
    expect(await epochServedBy(a)).toBe(before);

    const { epoch, moved } = await a.services.community.feeds.recomputeTrending();
    expect(moved).toBe(true);
    expect(epoch).toBe(before + 1);
    expect(await epochServedBy(a)).toBe(epoch);
    expect(await within(async () => (await epochServedBy(b)) === epoch, 1000)).toBeLessThan(1000);
  });
});
