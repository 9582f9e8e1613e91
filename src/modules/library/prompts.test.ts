import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq, isNull } from 'drizzle-orm';
import { promptTemplates } from '../../db/schema/library.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { SYSTEM_PROMPT_TEMPLATES } from './prompt-seed.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

const create = (token: string, payload: unknown) =>
  t.app.inject({ method: 'POST', url: '/v1/library/prompts', headers: bearer(token), payload: payload as object });
const patch = (token: string, id: string, payload: unknown) =>
  t.app.inject({ method: 'PATCH', url: `/v1/library/prompts/${id}`, headers: bearer(token), payload: payload as object });
const use = (token: string, id: string) => t.app.inject({ method: 'POST', url: `/v1/library/prompts/${id}/use`, headers: bearer(token) });
const list = async (token: string, query = '') => {
  const response = await t.app.inject({ url: `/v1/library/prompts${query}`, headers: bearer(token) });
  expect(response.statusCode).toBe(200);
  return json<any[]>(response);
};
const ownCount = (userId: string) => t.platform.db.$count(promptTemplates, eq(promptTemplates.userId, userId));

const VALID = {
  kind: 'IMAGE',
  title: 'Cozy interior',
  body: 'A cozy {{room}} in {{style}} style, warm light',
  variables: [
    { name: 'room', label: 'Room', type: 'string' },
    { name: 'style', label: 'Style', type: 'select', options: ['Scandinavian', 'Japandi'] },
    { name: 'lamps', label: 'Lamps', type: 'number' },
  ],
  tags: ['interior', 'home'],
};

describe('system templates', () => {
  it('are seeded at start for every kind and shared with every user', async () => {
    const a = await signUp(t.app);
    const b = await signUp(t.app);
    const seen = await list(a.accessToken);
    expect(seen.filter((p) => p.isSystem)).toHaveLength(SYSTEM_PROMPT_TEMPLATES.length);
    for (const kind of ['TEXT', 'IMAGE', 'VIDEO', 'AUDIO']) expect(seen.filter((p) => p.isSystem && p.kind === kind).length).toBeGreaterThanOrEqual(3);
    expect((await list(b.accessToken)).map((p) => p.id).sort()).toEqual(seen.map((p) => p.id).sort());
    for (const template of seen) {
      for (const variable of template.variables) expect(template.body).toContain(`{{${variable.name}}}`);
    }
  });

  it('seed again changes nothing (usage counts kept) and restores edited text', async () => {
    const { accessToken } = await signUp(t.app);
    const system = (await list(accessToken)).find((p) => p.isSystem)!;
    expect((await use(accessToken, system.id)).statusCode).toBe(200);
    const before = await t.platform.db.select().from(promptTemplates).where(isNull(promptTemplates.userId));
    await t.services.library.seed();
    const after = await t.platform.db.select().from(promptTemplates).where(isNull(promptTemplates.userId));
    expect(after).toEqual(before);

    await t.platform.db.update(promptTemplates).set({ title: 'Tampered' }).where(eq(promptTemplates.id, system.id));
    t.clock.advance(1000);
    await t.services.library.seed();
    const [restored] = await t.platform.db.select().from(promptTemplates).where(eq(promptTemplates.id, system.id));
    expect(restored!.title).toBe(system.title);
    expect(restored!.usageCount).toBe(system.usageCount + 1);
    expect(restored!.updatedAt.toISOString()).toBe(t.clock.now().toISOString());
  });
});

describe('POST /v1/library/prompts', () => {
  it('creates a template with usageCount 0', async () => {
    const { accessToken } = await signUp(t.app);
    const response = await create(accessToken, VALID);
    expect(response.statusCode).toBe(201);
    expect(json(response)).toEqual({
      id: expect.any(String),
      ...VALID,
      usageCount: 0,
      isSystem: false,
      createdAt: t.clock.now().toISOString(),
      updatedAt: t.clock.now().toISOString(),
    });
  });

  it('defaults variables and tags to empty and tidies text', async () => {
    const { accessToken } = await signUp(t.app);
    const response = await create(accessToken, { kind: 'TEXT', title: '  Cover letter  ', body: 'Write a cover letter.', tags: [' jobs ', 'Jobs', 'writing'] });
    expect(response.statusCode).toBe(201);
    expect(json(response)).toMatchObject({ title: 'Cover letter', variables: [], tags: ['jobs', 'writing'], usageCount: 0 });
  });

  it('accepts the longest title and body', async () => {
    const { accessToken } = await signUp(t.app);
    const response = await create(accessToken, { kind: 'VIDEO', title: 't'.repeat(120), body: 'b'.repeat(8000) });
    expect(response.statusCode).toBe(201);
  });

  it.each([
    ['no kind', { title: 'x', body: 'y' }, 'kind'],
    ['no title', { kind: 'TEXT', body: 'y' }, 'title'],
    ['no body', { kind: 'TEXT', title: 'x' }, 'body'],
    ['an unknown kind', { ...VALID, kind: 'MUSIC' }, 'kind'],
    ['an empty title', { ...VALID, title: '' }, 'title'],
    ['a blank title', { ...VALID, title: '   ' }, 'title'],
    ['a 121-character title', { ...VALID, title: 't'.repeat(121) }, 'title'],
    ['an 8001-character body', { ...VALID, body: 'b'.repeat(8001) }, 'body'],
    ['a blank body', { ...VALID, body: ' \n ' }, 'body'],
    ['a title that is a number', { ...VALID, title: 42 }, 'title'],
    ['an unknown field', { ...VALID, public: true }, 'public'],
    ['an unknown variable type', { ...VALID, variables: [{ name: 'a', label: 'A', type: 'date' }] }, 'variables.0.type'],
    ['a variable without a label', { ...VALID, variables: [{ name: 'a', type: 'string' }] }, 'variables.0.label'],
    ['a variable name with spaces', { ...VALID, variables: [{ name: 'my var', label: 'A', type: 'string' }] }, 'variables.0.name'],
    ['an unknown variable field', { ...VALID, variables: [{ name: 'a', label: 'A', type: 'string', required: true }] }, 'variables.0.required'],
    ['a select without options', { ...VALID, variables: [{ name: 'a', label: 'A', type: 'select' }] }, 'variables[0].options'],
    ['a select with only blank options', { ...VALID, variables: [{ name: 'a', label: 'A', type: 'select', options: [' '] }] }, 'variables[0].options'],
    ['options on a string variable', { ...VALID, variables: [{ name: 'a', label: 'A', type: 'string', options: ['x'] }] }, 'variables[0].options'],
    [
      'two variables with one name',
      {
        ...VALID,
        variables: [
          { name: 'a', label: 'A', type: 'string' },
          { name: 'a', label: 'B', type: 'number' },
        ],
      },
      'variables[1].name',
    ],
    ['a blank variable label', { ...VALID, variables: [{ name: 'a', label: '  ', type: 'string' }] }, 'variables[0].label'],
    ['tags that are not a list', { ...VALID, tags: 'home' }, 'tags'],
    ['a tag over 40 characters', { ...VALID, tags: ['x'.repeat(41)] }, 'tags.0'],
  ])('refuses %s with 400 and saves nothing', async (_label, payload, field) => {
    const { user, accessToken } = await signUp(t.app);
    const response = await create(accessToken, payload);
    expect(response.statusCode).toBe(400);
    const body = json(response);
    expect(body.error.code).toBe('BAD_REQUEST');
    expect(body.error.message.length).toBeGreaterThan(10);
    expect(JSON.stringify(body.error.details)).toContain(field);
    expect(await ownCount(user.id)).toBe(0);
  });
});

describe('GET /v1/library/prompts', () => {
  it('lists own templates and system templates newest-updated first, filtered by kind', async () => {
    const { accessToken } = await signUp(t.app);
    t.clock.advance(60_000);
    const older = json(await create(accessToken, { ...VALID, title: 'Older' }));
    t.clock.advance(1000);
    const newer = json(await create(accessToken, { kind: 'TEXT', title: 'Newer', body: 'Hello' }));
    t.clock.advance(1000);
    await patch(accessToken, older.id, { body: 'Edited body' });

    const all = await list(accessToken);
    expect(all.slice(0, 2).map((p) => p.title)).toEqual(['Older', 'Newer']);
    expect(all.slice(2).every((p) => p.isSystem)).toBe(true);
    const updatedTimes = all.map((p) => p.updatedAt);
    expect([...updatedTimes].sort().reverse()).toEqual(updatedTimes);

    const images = await list(accessToken, '?kind=IMAGE');
    expect(images.every((p) => p.kind === 'IMAGE')).toBe(true);
    expect(images[0].id).toBe(older.id);
    expect(images.some((p) => p.isSystem)).toBe(true);

    const ownOnly = await list(accessToken, '?includeTemplates=false');
    expect(ownOnly.map((p) => p.id)).toEqual([older.id, newer.id]);
    expect(await list(accessToken, '?includeTemplates=false&kind=AUDIO')).toEqual([]);
  });

  it('never shows another user’s templates', async () => {
    const owner = await signUp(t.app);
    const other = await signUp(t.app);
    const mine = json(await create(owner.accessToken, VALID));
    expect((await list(other.accessToken)).some((p) => p.id === mine.id)).toBe(false);
    expect(await list(other.accessToken, '?includeTemplates=false')).toEqual([]);
  });

  it.each([['?kind=PICTURE'], ['?includeTemplates=perhaps'], ['?limit=5']])('answers 400 for %s', async (query) => {
    const { accessToken } = await signUp(t.app);
    const response = await t.app.inject({ url: `/v1/library/prompts${query}`, headers: bearer(accessToken) });
    expect(response.statusCode).toBe(400);
    expect(json(response).error.code).toBe('BAD_REQUEST');
  });
});

describe('PATCH /v1/library/prompts/:id', () => {
  it('changes any subset and moves the template to the top', async () => {
    const { accessToken } = await signUp(t.app);
    const created = json(await create(accessToken, VALID));
    t.clock.advance(5000);
    const response = await patch(accessToken, created.id, { title: 'Renamed', tags: [] });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ ...created, title: 'Renamed', tags: [], updatedAt: t.clock.now().toISOString() });
    const changed = json(
      await patch(accessToken, created.id, { kind: 'VIDEO', variables: [{ name: 'room', label: 'Room', type: 'string' }], body: 'A {{room}} tour' }),
    );
    expect(changed).toMatchObject({ kind: 'VIDEO', body: 'A {{room}} tour', variables: [{ name: 'room', label: 'Room', type: 'string' }], title: 'Renamed' });
    const same = await patch(accessToken, created.id, {});
    expect(same.statusCode).toBe(200);
    expect(json(same)).toEqual(changed);
  });

  it.each([
    [{ title: '' }, 'title'],
    [{ body: 'b'.repeat(8001) }, 'body'],
    [{ kind: 'GIF' }, 'kind'],
    [{ usageCount: 99 }, 'usageCount'],
    [{ variables: [{ name: 'a', label: 'A', type: 'select' }] }, 'variables[0].options'],
  ])('refuses %j with 400 and changes nothing', async (payload, field) => {
    const { accessToken } = await signUp(t.app);
    const created = json(await create(accessToken, VALID));
    const response = await patch(accessToken, created.id, payload);
    expect(response.statusCode).toBe(400);
    expect(JSON.stringify(json(response).error.details)).toContain(field);
    const [row] = await t.platform.db.select().from(promptTemplates).where(eq(promptTemplates.id, created.id));
    expect(row).toMatchObject({ title: VALID.title, body: VALID.body, kind: VALID.kind, usageCount: 0 });
  });

  it('answers 404 for system templates, other users’ templates and unknown ids, changing nothing', async () => {
    const owner = await signUp(t.app);
    const other = await signUp(t.app);
    const mine = json(await create(owner.accessToken, VALID));
    const system = (await list(owner.accessToken)).find((p) => p.isSystem)!;
    for (const id of [system.id, mine.id, '01890000-0000-7000-8000-000000000000', 'nope']) {
      const response = await patch(other.accessToken, id, { title: 'Hijacked' });
      expect(response.statusCode).toBe(404);
      expect(json(response).error.code).toBe('NOT_FOUND');
    }
    expect((await patch(owner.accessToken, system.id, { title: 'Hijacked' })).statusCode).toBe(404);
    const titles = (await t.platform.db.select().from(promptTemplates)).map((p) => p.title);
    expect(titles).not.toContain('Hijacked');
  });
});

describe('POST /v1/library/prompts/:id/use', () => {
  it('counts uses of own and system templates without reordering', async () => {
    const { accessToken } = await signUp(t.app);
    const mine = json(await create(accessToken, VALID));
    const system = (await list(accessToken)).find((p) => p.isSystem)!;
    for (let i = 0; i < 3; i++) {
      const response = await use(accessToken, mine.id);
      expect(response.statusCode).toBe(200);
      expect(json(response)).toEqual({ ok: true });
    }
    await Promise.all([use(accessToken, system.id), use(accessToken, system.id)]);
    const after = await list(accessToken);
    expect(after.find((p) => p.id === mine.id)).toMatchObject({ usageCount: 3, updatedAt: mine.updatedAt });
    expect(after.find((p) => p.id === system.id)!.usageCount).toBe(system.usageCount + 2);
  });

  it('answers 404 for another user’s template and unknown ids', async () => {
    const owner = await signUp(t.app);
    const other = await signUp(t.app);
    const mine = json(await create(owner.accessToken, VALID));
    for (const id of [mine.id, '01890000-0000-7000-8000-000000000000', 'x']) {
      const response = await use(other.accessToken, id);
      expect(response.statusCode).toBe(404);
    }
    const [row] = await t.platform.db.select().from(promptTemplates).where(eq(promptTemplates.id, mine.id));
    expect(row!.usageCount).toBe(0);
  });
});

describe('authentication', () => {
  it.each([
    ['GET', '/v1/library/prompts'],
    ['POST', '/v1/library/prompts'],
    ['PATCH', '/v1/library/prompts/01890000-0000-7000-8000-000000000000'],
    ['POST', '/v1/library/prompts/01890000-0000-7000-8000-000000000000/use'],
  ] as const)('%s %s needs a token', async (method, url) => {
    const before = await t.platform.db.$count(promptTemplates);
    const response = await t.app.inject({ method, url, payload: method === 'GET' ? undefined : VALID });
    expect(response.statusCode).toBe(401);
    expect(json(response).error.code).toBe('UNAUTHORIZED');
    expect(await t.platform.db.$count(promptTemplates)).toBe(before);
  });
});
