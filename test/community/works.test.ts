import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { createTestApp, json, TEST_JWT_SECRET, type TestApp } from '../helpers/test-app.js';
import { allPages, member, publish, type Member } from '../helpers/community.js';

const SAMPLE = path.resolve('scripts/community-works.sample.json');
let t: TestApp;
let alice: Member;
let bob: Member;
let sample: any;

beforeAll(async () => {
  t = await createTestApp();
  [alice, bob] = [await member(t, 'Alice'), await member(t, 'Bob')];
  sample = JSON.parse(await readFile(SAMPLE, 'utf8'));
});
afterAll(async () => t?.close());

const req = (method: 'GET' | 'POST' | 'DELETE', url: string, who?: Member | null) => t.app.inject({ method, url, headers: who ? who.headers : {} });
const worksState = async () => {
  const result: any = await t.platform.db.execute(
    sql`select external_id, updated_at, source_like_count, local_like_count, local_view_count from community_works where source = 'IMPORTED' order by external_id`,
  );
  return JSON.stringify(result.rows);
};

describe('import', () => {
  it('loads the sample feed; a second run changes nothing; a changed work is updated and keeps its local counts', async () => {
    expect(await t.services.community.importer.importFeed(sample)).toEqual({ inserted: 4, updated: 0, unchanged: 0 });
    const before = await worksState();
    t.clock.advance(60_000);
    expect(await t.services.community.importer.importFeed(sample)).toEqual({ inserted: 0, updated: 0, unchanged: 4 });
    expect(await worksState()).toBe(before);

    await req('POST', '/v1/community/works/880001/like', alice);
    await req('POST', '/v1/community/works/880001/view');
    const changed = structuredClone(sample);
    changed.items[0].userWork.starNum = 500;
    expect(await t.services.community.importer.importFeed(changed)).toEqual({ inserted: 0, updated: 1, unchanged: 3 });
    const work = json(await req('GET', '/v1/community/works/880001'));
    expect(work.userWork).toMatchObject({ starNum: 501, viewCountLocal: 1, _platform: { sourceLikeCount: 500, localLikeCount: 1, localViewCount: 1 } });
  });

  it('refuses an invalid feed with a clear message and imports nothing of it', async () => {
    const count = async () => ((await t.platform.db.execute(sql`select count(*)::int as n from community_works`)) as any).rows[0].n as number;
    const before = await count();
    const inner = { workId: 990001, contentType: 'image', resource: { resource: 'https://x/1.png' }, userProfile: { userId: 1, userName: 'x' } };
    const bad = {
      items: [
        { type: 'WORK', userWork: inner },
        { type: 'WORK', userSkit: { ...inner, workId: 990002 } },
      ],
    };
    await expect(t.services.community.importer.importFeed(bad)).rejects.toThrow(/no "userWork"/);
    await expect(t.services.community.importer.importFeed({ items: [{ type: 'PHOTO' }] })).rejects.toThrow(/The feed is not valid/);
    expect(await count()).toBe(before);
  });

  it('the import-works command loads a feed file into the embedded database, idempotently', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'storefront-import-'));
    try {
      const run = () =>
        promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/import-works.ts', SAMPLE], {
          env: { ...process.env, DATA_DIR: dataDir, DATABASE_URL: '', JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: 'silent' },
        });
      expect((await run()).stdout).toContain('4 new, 0 updated, 0 unchanged');
      expect((await run()).stdout).toContain('0 new, 0 updated, 4 unchanged');
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('gallery', () => {
  it('lists imported and native works in their envelopes, with filters, sorts and exactly-once paging', async () => {
    const native = await publish(t, bob, {}, 'VIDEO');
    const all = await allPages(t, '/v1/community/works', {}, 2);
    expect(new Set(all.map((w) => w[wrapper(w.type)]._platform.id)).size).toBe(all.length);
    const types = Object.fromEntries(all.map((w) => [w.type, Object.keys(w).filter((k) => k !== 'type')]));
    expect(types).toEqual({ WORK: ['userWork'], SKIT: ['userSkit'], TEMPLATE_CREATIVE: ['userTemplateCreative'] });
    const skit = all.find((w) => w.type === 'SKIT').userSkit;
    expect(skit).toMatchObject({
      workId: 880002,
      contentType: 'video',
      resource: { resource: 'https://cdn.example.com/works/880002.mp4', width: 720, height: 1280, duration: 14500 },
      cover: { resource: 'https://cdn.example.com/works/880002-cover.jpg' },
      starNum: 1290,
      favored: false,
      starred: false,
      userProfile: { userId: '5502', userName: 'Tomas Vel', userAvatar: [] },
      _platform: { source: 'IMPORTED', externalId: '880002', sourceLikeCount: 1290, remixable: false },
    });
    expect(skit.userProfile.handle).toBeUndefined();
    const mine = all.find((w) => w.userWork?._platform.source === 'NATIVE' && w.userWork.userProfile.userId === bob.id).userWork;
    expect(mine).toMatchObject({ contentType: 'video', resource: { duration: 5000 }, userProfile: { handle: bob.handle }, _platform: { remixable: true } });

    const videos = await allPages(t, '/v1/community/works?contentType=video', {}, 2);
    expect(videos.every((w) => w[wrapper(w.type)].contentType === 'video')).toBe(true);
    const imported = await allPages(t, '/v1/community/works?source=IMPORTED', {}, 2);
    expect(imported.map((w) => w[wrapper(w.type)]._platform.source)).toEqual(imported.map(() => 'IMPORTED'));
    const top = await allPages(t, '/v1/community/works?sort=top', {}, 2);
    const stars = top.map((w) => w[wrapper(w.type)].starNum);
    expect(stars).toEqual([...stars].sort((a, b) => b - a));
    expect(top.length).toBe(all.length);
    expect(native.id).toBeTruthy();
    for (const query of ['tag=x', 'limit=51', 'sort=old', 'contentType=text', 'source=OTHER']) {
      expect((await req('GET', `/v1/community/works?${query}`)).statusCode, query).toBe(400);
    }
  });

  it('gets a work by _platform.id or externalId without counting a view; the view counter counts every call', async () => {
    const byExternal = json(await req('GET', '/v1/community/works/880003'));
    const id = byExternal.userTemplateCreative._platform.id;
    const byId = json(await req('GET', `/v1/community/works/${id}`));
    expect(byId).toEqual(byExternal);
    expect(json(await req('POST', `/v1/community/works/${id}/view`))).toEqual({ ok: true, viewCount: 1 });
    expect(json(await req('POST', '/v1/community/works/880003/view'))).toEqual({ ok: true, viewCount: 2 });
    expect(json(await req('GET', `/v1/community/works/${id}`)).userTemplateCreative.viewCountLocal).toBe(2);
    expect((await req('GET', '/v1/community/works/does-not-exist')).statusCode).toBe(404);
    expect((await req('POST', '/v1/community/works/01900000-0000-7000-8000-000000000000/view')).statusCode).toBe(404);
  });

  it("work likes are idempotent, fill favored/starred, and stay separate from the post's likes", async () => {
    const post = await publish(t, alice);
    const work = (await allPages(t, '/v1/community/works?source=NATIVE', {}, 50)).find(
      (w) => w.userWork.userProfile.userId === alice.id && w.userWork.resource.resource === post.generation.output.images[0].url,
    ).userWork;
    const id = work._platform.id;
    for (let i = 0; i < 2; i++)
      expect(json(await t.app.inject({ method: 'POST', url: `/v1/community/works/${id}/like`, headers: bob.headers }))).toEqual({
        ok: true,
        starNum: 1,
        favored: true,
      });
    expect(json(await req('GET', `/v1/community/works/${id}`, bob)).userWork).toMatchObject({
      favored: true,
      starred: true,
      starNum: 1,
      _platform: { localLikeCount: 1 },
    });
    expect(json(await req('GET', `/v1/community/works/${id}`)).userWork.favored).toBe(false);
    expect(json(await req('GET', `/v1/community/posts/${post.id}`)).likeCount).toBe(0);
    await req('POST', `/v1/community/posts/${post.id}/like`, bob);
    expect(json(await req('GET', `/v1/community/works/${id}`)).userWork.starNum).toBe(1);
    for (let i = 0; i < 2; i++)
      expect(json(await t.app.inject({ method: 'DELETE', url: `/v1/community/works/${id}/like`, headers: bob.headers }))).toEqual({
        ok: true,
        starNum: 0,
        favored: false,
      });
    expect((await req('POST', `/v1/community/works/${id}/like`)).statusCode).toBe(401);
    // the shares of the post show on its work too
    await req('POST', `/v1/community/posts/${post.id}/share`);
    expect(json(await req('GET', `/v1/community/works/${id}`)).userWork._platform.shareCount).toBe(1);
  });
});

const wrapper = (type: string) => ({ WORK: 'userWork', SKIT: 'userSkit', TEMPLATE_CREATIVE: 'userTemplateCreative' })[type]!;
