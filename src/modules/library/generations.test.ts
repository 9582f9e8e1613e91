import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { generations, type GenerationKind } from '../../db/schema/library.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';

let t: TestApp;
let imageModelId: string;
let textModelId: string;
beforeAll(async () => {
  t = await createTestApp();
  imageModelId = (await t.services.catalog.resolveForGateway('local/image')).id;
  textModelId = (await t.services.catalog.resolveForGateway('local/text')).id;
});
afterAll(async () => t?.close());

const OUTPUT: Record<GenerationKind, Record<string, unknown>> = {
  TEXT: { text: 'Once upon a time' },
  IMAGE: { images: [{ url: 'http://localhost:3000/v1/files/raw/image/a.png', mimeType: 'image/png' }] },
  VIDEO: { videos: [{ url: 'http://localhost:3000/v1/files/raw/video/a.mp4', durationSeconds: 4 }] },
  AUDIO: { audio: { url: 'http://localhost:3000/v1/files/raw/audio/a.wav' } },
};

/** Saves an item one second after the previous one, so the order is known. */
async function save(userId: string, kind: GenerationKind, prompt: string, extra: { tags?: string[]; modelId?: string | null } = {}) {
  t.clock.advance(1000);
  return t.services.library.saveGeneration({
    userId,
    kind,
    prompt,
    output: OUTPUT[kind],
    modelId: extra.modelId === undefined ? (kind === 'TEXT' ? textModelId : imageModelId) : extra.modelId,
    thumbnailUrl: kind === 'IMAGE' ? 'http://localhost:3000/v1/files/raw/image/a.png' : null,
    tags: extra.tags,
  });
}

const list = (token: string, query = '') => t.app.inject({ url: `/v1/library/generations${query}`, headers: bearer(token) });

describe('GET /v1/library/generations', () => {
  it('lists media newest first in the Generation shape, with the model read from the catalog', async () => {
    const { user, accessToken } = await signUp(t.app);
    const first = await save(user.id, 'IMAGE', 'A red fox', { tags: ['fox'] });
    await save(user.id, 'TEXT', 'Tell me a story');
    await save(user.id, 'VIDEO', 'Waves at dusk');
    const last = await save(user.id, 'AUDIO', 'Calm piano', { modelId: null });
    const response = await list(accessToken);
    expect(response.statusCode).toBe(200);
    const page = json(response);
    expect(page.nextCursor).toBeNull();
    expect(page.items.map((i: any) => i.kind)).toEqual(['AUDIO', 'VIDEO', 'IMAGE']);
    expect(page.items[0]).toEqual({
      id: last.id,
      kind: 'AUDIO',
      prompt: 'Calm piano',
      thumbnailUrl: null,
      output: OUTPUT.AUDIO,
      model: null,
      visibility: 'PRIVATE',
      tags: [],
      favorite: false,
      createdAt: last.createdAt.toISOString(),
    });
    expect(page.items[2]).toEqual({
      id: first.id,
      kind: 'IMAGE',
      prompt: 'A red fox',
      thumbnailUrl: 'http://localhost:3000/v1/files/raw/image/a.png',
      output: OUTPUT.IMAGE,
      model: { slug: 'local/image', displayName: 'Local Image', type: 'IMAGE' },
      visibility: 'PRIVATE',
      tags: ['fox'],
      favorite: false,
      createdAt: first.createdAt.toISOString(),
    });
  });

  it('lists the text history only with kind=TEXT, and one kind with kind', async () => {
    const { user, accessToken } = await signUp(t.app);
    await save(user.id, 'TEXT', 'first question');
    await save(user.id, 'IMAGE', 'a cat');
    await save(user.id, 'TEXT', 'second question');
    const texts = json(await list(accessToken, '?kind=TEXT')).items;
    expect(texts.map((i: any) => i.prompt)).toEqual(['second question', 'first question']);
    expect(texts[0].output).toEqual({ text: 'Once upon a time' });
    expect(texts[0].model).toEqual({ slug: 'local/text', displayName: 'Local Text', type: 'TEXT' });
    expect(json(await list(accessToken, '?kind=IMAGE')).items.map((i: any) => i.prompt)).toEqual(['a cat']);
    expect(json(await list(accessToken, '?kind=VIDEO')).items).toEqual([]);
  });

  it('filters by favourites, prompt text (case-insensitive, literally) and tag', async () => {
    const { user, accessToken } = await signUp(t.app);
    const fox = await save(user.id, 'IMAGE', 'A Red FOX at dawn', { tags: ['animals', 'Dawn'] });
    await save(user.id, 'IMAGE', 'A blue whale', { tags: ['animals'] });
    const percent = await save(user.id, 'IMAGE', '100% pure_water', { tags: ['water'] });
    await save(user.id, 'TEXT', 'a fox in text', { tags: ['animals'] });

    const favourite = await t.app.inject({
      method: 'PATCH',
      url: `/v1/library/generations/${fox.id}`,
      headers: bearer(accessToken),
      payload: { favorite: true },
    });
    expect(favourite.statusCode).toBe(200);
    expect(json(favourite)).toMatchObject({ id: fox.id, favorite: true });

    const prompts = async (query: string) => json(await list(accessToken, query)).items.map((i: any) => i.prompt);
    expect(await prompts('?favoritesOnly=true')).toEqual(['A Red FOX at dawn']);
    expect(await prompts('?favoritesOnly=false')).toHaveLength(3);
    expect(await prompts('?search=red%20fox')).toEqual(['A Red FOX at dawn']);
    expect(await prompts('?search=FOX')).toEqual(['A Red FOX at dawn']);
    expect(await prompts('?search=FOX&kind=TEXT')).toEqual(['a fox in text']);
    expect(await prompts('?search=%25')).toEqual([percent.prompt]);
    expect(await prompts('?search=e_w')).toEqual([percent.prompt]);
    expect(await prompts('?search=%20%20')).toHaveLength(3);
    expect(await prompts('?tag=animals')).toEqual(['A blue whale', 'A Red FOX at dawn']);
    expect(await prompts('?tag=Dawn&search=fox&favoritesOnly=true')).toEqual(['A Red FOX at dawn']);
    expect(await prompts('?tag=nothing')).toEqual([]);
    expect(await prompts('?tag=')).toHaveLength(3);
  });

  it('pages with a cursor: every item exactly once, newest first, even while new items arrive', async () => {
    const { user, accessToken } = await signUp(t.app);
    const saved = [];
    for (let i = 0; i < 23; i++) saved.push(await save(user.id, i % 3 === 0 ? 'VIDEO' : 'IMAGE', `item ${i}`));
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const response = await list(accessToken, `?limit=5${cursor ? `&cursor=${cursor}` : ''}`);
      expect(response.statusCode).toBe(200);
      const page = json(response);
      seen.push(...page.items.map((i: any) => i.id));
      cursor = page.nextCursor;
      pages++;
      // Items made while paging are newer than the cursor: they belong to a fresh listing, not to later pages.
      if (pages === 2) await save(user.id, 'IMAGE', 'arrived while paging');
    } while (cursor);
    expect(pages).toBe(5);
    expect(seen).toEqual(saved.map((g) => g.id).reverse());
    expect(json(await list(accessToken, '?limit=1')).items[0].prompt).toBe('arrived while paging');
  });

  it('uses a default page size of 24 and at most 100', async () => {
    const { user, accessToken } = await signUp(t.app);
    for (let i = 0; i < 26; i++) await save(user.id, 'IMAGE', `img ${i}`);
    const page = json(await list(accessToken));
    expect(page.items).toHaveLength(24);
    expect(page.nextCursor).toEqual(expect.any(String));
    expect(json(await list(accessToken, '?limit=100')).items).toHaveLength(26);
  });

  it.each([
    ['?limit=0', 'query.limit'],
    ['?limit=101', 'query.limit'],
    ['?limit=ten', 'query.limit'],
    ['?kind=PICTURE', 'query.kind'],
    ['?favoritesOnly=maybe', 'query.favoritesOnly'],
    ['?search=' + 'x'.repeat(201), 'query.search'],
    ['?tag=' + 't'.repeat(41), 'query.tag'],
    ['?sort=oldest', 'query.sort'],
    ['?cursor=not-a-cursor', 'query.cursor'],
  ])('answers 400 for %s', async (query, field) => {
    const { accessToken } = await signUp(t.app);
    const response = await list(accessToken, query);
    expect(response.statusCode).toBe(400);
    const body = json(response);
    expect(body.error.code).toBe('BAD_REQUEST');
    expect(JSON.stringify(body.error.details)).toContain(field);
  });

  it('shows only the caller’s items', async () => {
    const owner = await signUp(t.app);
    const other = await signUp(t.app);
    await save(owner.user.id, 'IMAGE', 'mine only');
    expect(json(await list(other.accessToken)).items).toEqual([]);
  });
});

describe('GET and PATCH /v1/library/generations/:id', () => {
  it('reads one item, marks it favourite and replaces its tags', async () => {
    const { user, accessToken } = await signUp(t.app);
    const item = await save(user.id, 'IMAGE', 'A lighthouse', { tags: ['sea'] });
    const read = await t.app.inject({ url: `/v1/library/generations/${item.id}`, headers: bearer(accessToken) });
    expect(read.statusCode).toBe(200);
    expect(json(read)).toMatchObject({ id: item.id, prompt: 'A lighthouse', tags: ['sea'], favorite: false });

    const patched = await t.app.inject({
      method: 'PATCH',
      url: `/v1/library/generations/${item.id}`,
      headers: bearer(accessToken),
      payload: { favorite: true, tags: ['coast', ' Night ', 'coast'] },
    });
    expect(patched.statusCode).toBe(200);
    expect(json(patched)).toMatchObject({ favorite: true, tags: ['coast', 'Night'] });
    const unchanged = await t.app.inject({ method: 'PATCH', url: `/v1/library/generations/${item.id}`, headers: bearer(accessToken), payload: {} });
    expect(json(unchanged)).toMatchObject({ favorite: true, tags: ['coast', 'Night'] });
    const unfavourite = await t.app.inject({
      method: 'PATCH',
      url: `/v1/library/generations/${item.id}`,
      headers: bearer(accessToken),
      payload: { favorite: false },
    });
    expect(json(unfavourite)).toMatchObject({ favorite: false, tags: ['coast', 'Night'] });
  });

  it.each([
    [{ favorite: 'yes' }, 'favorite'],
    [{ tags: 'fox' }, 'tags'],
    [{ tags: ['x'.repeat(41)] }, 'tags.0'],
    [{ tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, 'tags'],
    [{ visibility: 'PUBLIC' }, 'visibility'],
  ])('refuses bad input %j with 400 and changes nothing', async (payload, field) => {
    const { user, accessToken } = await signUp(t.app);
    const item = await save(user.id, 'IMAGE', 'unchanged', { tags: ['keep'] });
    const response = await t.app.inject({ method: 'PATCH', url: `/v1/library/generations/${item.id}`, headers: bearer(accessToken), payload });
    expect(response.statusCode).toBe(400);
    expect(JSON.stringify(json(response).error.details)).toContain(field);
    const [row] = await t.platform.db.select().from(generations).where(eq(generations.id, item.id));
    expect(row).toMatchObject({ favorite: false, tags: ['keep'], visibility: 'PRIVATE' });
  });

  it('answers 404 for another user’s item, a missing id and a malformed id, and changes nothing', async () => {
    const owner = await signUp(t.app);
    const other = await signUp(t.app);
    const item = await save(owner.user.id, 'IMAGE', 'private fox');
    for (const id of [item.id, '01890000-0000-7000-8000-000000000000', 'not-a-uuid']) {
      const read = await t.app.inject({ url: `/v1/library/generations/${id}`, headers: bearer(other.accessToken) });
      expect(read.statusCode).toBe(404);
      expect(json(read).error.code).toBe('NOT_FOUND');
      const patch = await t.app.inject({
        method: 'PATCH',
        url: `/v1/library/generations/${id}`,
        headers: bearer(other.accessToken),
        payload: { favorite: true },
      });
      expect(patch.statusCode).toBe(404);
    }
    const [row] = await t.platform.db.select().from(generations).where(eq(generations.id, item.id));
    expect(row!.favorite).toBe(false);
  });
});

describe('viewsOf (for modules that show published generations)', () => {
  it('returns views of many items by id whoever owns them, and skips unknown ids', async () => {
    const [a, b] = [await signUp(t.app), await signUp(t.app)];
    const first = await save(a.user.id, 'IMAGE', 'from a');
    const second = await save(b.user.id, 'VIDEO', 'from b', { modelId: null });
    const views = await t.services.library.generations.viewsOf([first.id, second.id, first.id, '01900000-0000-7000-8000-000000000000']);
    expect([...views.keys()].sort()).toEqual([first.id, second.id].sort());
    expect(views.get(first.id)).toMatchObject({ kind: 'IMAGE', prompt: 'from a', model: { slug: 'local/image' } });
    expect(views.get(second.id)).toMatchObject({ kind: 'VIDEO', model: null, output: OUTPUT.VIDEO });
    expect((await t.services.library.generations.viewsOf([])).size).toBe(0);
  });
});

describe('authentication', () => {
  it.each([
    ['GET', '/v1/library/generations'],
    ['GET', '/v1/library/generations/01890000-0000-7000-8000-000000000000'],
    ['PATCH', '/v1/library/generations/01890000-0000-7000-8000-000000000000'],
  ] as const)('%s %s needs a token', async (method, url) => {
    const response = await t.app.inject({ method, url, payload: method === 'PATCH' ? { favorite: true } : undefined });
    expect(response.statusCode).toBe(401);
    expect(json(response).error.code).toBe('UNAUTHORIZED');
    const bad = await t.app.inject({ method, url, headers: bearer('not-a-token'), payload: method === 'PATCH' ? { favorite: true } : undefined });
    expect(bad.statusCode).toBe(401);
  });

  it('refuses a deleted account’s still-valid access token', async () => {
    const { accessToken, password } = await signUp(t.app);
    const deleted = await t.app.inject({ method: 'POST', url: '/v1/account/delete', headers: bearer(accessToken), payload: { password } });
    expect(deleted.statusCode).toBe(200);
    expect((await list(accessToken)).statusCode).toBe(401);
  });
});
