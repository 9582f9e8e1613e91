import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify';
import { Type } from 'typebox';
import { mailOutbox } from '../../db/schema/platform.js';
import type { Database } from '../db/database.js';
import { openTestDatabase } from '../../../test/helpers/test-database.js';
import { registerErrorHandling } from './error-handler.js';
import { registerValidation } from './validation.js';
import { StrictObject, pageQuery } from './schemas.js';
import { decodeCursor, encodeCursor, newestFirstPage } from './pagination.js';
import { AppError } from './errors.js';

// A small app built from the platform's own HTTP pieces, listing real rows of a real table.
let testDb: Awaited<ReturnType<typeof openTestDatabase>>;
let database: Database;
let app: FastifyInstance;

beforeAll(async () => {
  testDb = await openTestDatabase();
  database = testDb.database;
  const base = new Date('2026-01-01T00:00:00Z').getTime();
  for (let i = 0; i < 25; i++) {
    await database.db.insert(mailOutbox).values({
      to: `r${i}@example.com`,
      from: 'x@example.com',
      subject: `s${i}`,
      text: 't',
      status: 'STORED',
      createdAt: new Date(base + Math.floor(i / 2) * 1000),
    });
  }
  app = Fastify();
  registerValidation(app);
  registerErrorHandling(app);
  app.get(
    '/items',
    { schema: { querystring: StrictObject({ ...pageQuery(10, 20), subject: Type.Optional(Type.String({ maxLength: 5 })) }) } },
    async (request) => {
      const { limit = 10, cursor } = request.query as { limit?: number; cursor?: string };
      return newestFirstPage(database.db, mailOutbox, 'createdAt', undefined, { limit, cursor });
    },
  );
  app.get('/boom', async () => {
    throw new Error('secret internal detail: password=hunter2');
  });
  app.get('/teapot', async () => {
    throw new AppError(418, 'TEAPOT', 'I am a teapot.', { hint: 'coffee elsewhere' });
  });
  await app.ready();
});

afterAll(async () => {
  await app?.close();
  await testDb.close();
});

describe('strict query parameters', () => {
  it('rejects an unknown query key with 400 naming it', async () => {
    const response = await app.inject({ url: '/items?limit=5&sort=asc' });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toEqual({
      code: 'BAD_REQUEST',
      message: 'Invalid request: query.sort is not a known query parameter.',
      details: [{ field: 'query.sort', message: 'is not a known query parameter' }],
    });
  });

  it('coerces and bounds query values', async () => {
    expect((await app.inject({ url: '/items?limit=0' })).statusCode).toBe(400);
    expect((await app.inject({ url: '/items?limit=21' })).statusCode).toBe(400);
    expect((await app.inject({ url: '/items?limit=abc' })).json().error.details[0]).toEqual({ field: 'query.limit', message: 'must be an integer' });
    expect((await app.inject({ url: '/items?subject=toolong' })).json().error.details[0]).toEqual({
      field: 'query.subject',
      message: 'must be at most 5 characters long',
    });
    expect((await app.inject({ url: '/items?limit=3' })).json().items).toHaveLength(3);
  });
});

describe('keyset cursor pagination', () => {
  it('returns every row exactly once across pages, with ties on the sort key', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const response: LightMyRequestResponse = await app.inject({ url: `/items?limit=7${cursor ? `&cursor=${cursor}` : ''}` });
      expect(response.statusCode).toBe(200);
      const page = response.json<{ items: Array<{ id: string }>; nextCursor: string | null }>();
      seen.push(...page.items.map((i) => i.id));
      cursor = page.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(4);
    expect(seen).toHaveLength(25);
    expect(new Set(seen).size).toBe(25);
  });

  it('keeps its place while new rows are inserted ahead of the cursor', async () => {
    const first = (await app.inject({ url: '/items?limit=5' })).json();
    await database.db
      .insert(mailOutbox)
      .values({ to: 'new@example.com', from: 'x@example.com', subject: 'new', text: 't', status: 'STORED', createdAt: new Date('2030-01-01T00:00:00Z') });
    const second = (await app.inject({ url: `/items?limit=5&cursor=${first.nextCursor}` })).json();
    const firstIds = new Set(first.items.map((i: { id: string }) => i.id));
    expect(second.items.some((i: { id: string }) => firstIds.has(i.id))).toBe(false);
    expect(second.items.some((i: { to: string }) => i.to === 'new@example.com')).toBe(false);
  });

  it('refuses a tampered cursor with a clear 400', async () => {
    for (const cursor of [
      'garbage',
      encodeURIComponent(Buffer.from('{"a":1}').toString('base64url')),
      Buffer.from(JSON.stringify(['not-a-date', 'x'])).toString('base64url'),
    ]) {
      const response = await app.inject({ url: `/items?cursor=${cursor}` });
      expect(response.statusCode).toBe(400);
      expect(response.json().error.message).toMatch(/cursor is not valid/);
    }
  });

  it('encodes positions opaquely and round-trips them', () => {
    const cursor = encodeCursor({ sort: '2026-01-01T00:00:00.000Z', id: 'abc' });
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(cursor)).toEqual({ sort: '2026-01-01T00:00:00.000Z', id: 'abc' });
  });
});

describe('error envelope', () => {
  it('hides internals of unhandled errors behind 500 INTERNAL', async () => {
    const response = await app.inject({ url: '/boom' });
    expect(response.statusCode).toBe(500);
    expect(response.body).not.toContain('hunter2');
    expect(response.json().error).toMatchObject({ code: 'INTERNAL', message: expect.stringContaining('Something went wrong') });
  });

  it('renders AppError as given', async () => {
    const response = await app.inject({ url: '/teapot' });
    expect(response.statusCode).toBe(418);
    expect(response.json()).toEqual({ error: { code: 'TEAPOT', message: 'I am a teapot.', details: { hint: 'coffee elsewhere' } } });
  });

  it('answers unknown routes with 404 in the envelope', async () => {
    const response = await app.inject({ method: 'DELETE', url: '/nowhere?x=1' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ error: { code: 'NOT_FOUND', message: 'No route for DELETE /nowhere.', details: null } });
  });
});
