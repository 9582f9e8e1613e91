import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY_MS, HOUR_MS } from '../../platform/clock/clock.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import type { UsageRecordInput } from './service.js';

let t: TestApp;
let modelId: string;
beforeAll(async () => {
  t = await createTestApp();
  modelId = (await t.services.catalog.getBySlug('local/text'))!.row.id;
});
afterAll(async () => t?.close());

let seq = 0;
const record = (userId: string, extra: Partial<UsageRecordInput> = {}) =>
  t.services.usage.record({ userId, requestId: `req-${seq++}`, operation: 'text.generate', status: 'SUCCESS', ...extra });

const get = (token: string, url: string) => t.app.inject({ method: 'GET', url, headers: bearer(token) });

/** Every page of the feed, following nextCursor to the end. */
async function allPages(token: string, query: string) {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (;;) {
    const response = await get(token, `/v1/usage?${query}${cursor ? `&cursor=${cursor}` : ''}`);
    expect(response.statusCode).toBe(200);
    const page = json(response);
    ids.push(...page.items.map((item: { id: string }) => item.id));
    if (page.nextCursor === null) return ids;
    expect(page.nextCursor).toBe(page.items[page.items.length - 1].id);
    cursor = page.nextCursor;
  }
}

describe('GET /v1/usage', () => {
  it("lists the caller's records newest first with the spec's fields and the model, never another user's", async () => {
    const me = await signUp(t.app);
    const other = await signUp(t.app);
    await record(other.user.id);
    const first = await record(me.user.id, { modelId, inputUnits: 10, outputUnits: 20, tokensConsumed: 300, latencyMs: 42, metadata: { stream: true } });
    t.clock.advance(1000);
    const second = await record(me.user.id, { operation: 'prompt.enhance', status: 'FAILED', jobId: null });
    const page = json(await get(me.accessToken, '/v1/usage'));
    expect(page.items.map((i: { id: string }) => i.id)).toEqual([second.id, first.id]);
    expect(page.nextCursor).toBeNull();
    expect(page.items[1]).toEqual({
      id: first.id,
      userId: me.user.id,
      subscriptionId: null,
      modelId,
      providerId: null,
      resellerAccountId: null,
      jobId: null,
      apiKeyId: null,
      requestId: first.requestId,
      operation: 'text.generate',
      status: 'SUCCESS',
      inputUnits: 10,
      outputUnits: 20,
      creditsConsumed: 300,
      providerCostCents: 0,
      latencyMs: 42,
      metadata: { stream: true },
      createdAt: first.createdAt.toISOString(),
      model: { slug: 'local/text', displayName: expect.any(String), type: 'TEXT' },
    });
    expect(page.items[0].model).toBeNull();
  });

  it("shows a text call's token classes from its metadata, and none on records without them", async () => {
    const me = await signUp(t.app);
    const tokens = { input: 10_000, cachedInput: 9_000, cacheWrite: 0, output: 200, reasoning: 120 };
    await record(me.user.id, { inputUnits: 10_000, outputUnits: 200, metadata: { tokens } });
    t.clock.advance(1000);
    await record(me.user.id, { metadata: { tokens: { input: 5, cachedInput: 'many' } } });
    t.clock.advance(1000);
    await record(me.user.id, { operation: 'image.generate' });
    const [image, malformed, text] = json(await get(me.accessToken, '/v1/usage')).items;
    expect(text.tokens).toEqual(tokens);
    expect(malformed.tokens).toEqual({ input: 5, cachedInput: 0, cacheWrite: 0, output: 0, reasoning: 0 });
    expect(image).not.toHaveProperty('tokens');
  });

  it('filters by operation and status, pages by the id of the last row, and validates limit, cursor and keys', async () => {
    const me = await signUp(t.app);
    const other = await signUp(t.app);
    const foreign = await record(other.user.id);
    for (let i = 0; i < 9; i++) {
      t.clock.advance(10);
      await record(me.user.id, { operation: i % 3 === 0 ? 'image.generate' : 'text.generate', status: i % 2 === 0 ? 'SUCCESS' : 'TIMEOUT' });
    }
    expect(await allPages(me.accessToken, 'limit=2')).toHaveLength(9);
    const images = json(await get(me.accessToken, '/v1/usage?operation=image.generate'));
    expect(images.items).toHaveLength(3);
    expect(images.items.every((i: { operation: string }) => i.operation === 'image.generate')).toBe(true);
    const timeouts = json(await get(me.accessToken, '/v1/usage?status=TIMEOUT&operation=text.generate'));
    expect(timeouts.items.map((i: { status: string; operation: string }) => `${i.operation}/${i.status}`)).toEqual(Array(3).fill('text.generate/TIMEOUT'));
    expect(await allPages(me.accessToken, 'limit=1&status=SUCCESS')).toHaveLength(5);
    expect(json(await get(me.accessToken, '/v1/usage')).items).toHaveLength(9); // default limit 20

    for (const bad of ['limit=0', 'limit=101', 'status=DONE', 'cursor=abc', 'unknown=1', `cursor=${foreign.id}`]) {
      const response = await get(me.accessToken, `/v1/usage?${bad}`);
      expect({ bad, status: response.statusCode, code: json(response).error.code }).toEqual({ bad, status: 400, code: 'BAD_REQUEST' });
    }
    expect(json(await get(me.accessToken, `/v1/usage?cursor=${foreign.id}`)).error.message).toMatch(/cursor is not valid/);
    expect((await get(me.accessToken, '/v1/usage?limit=100')).statusCode).toBe(200);
  });

  it('returns every row exactly once while rows are inserted during the paging', async () => {
    const me = await signUp(t.app);
    const existing = new Set<string>();
    for (let i = 0; i < 60; i++) {
      // several rows share a timestamp, so the id breaks the ties
      if (i % 3 === 0) t.clock.advance(5);
      existing.add((await record(me.user.id)).id);
    }
    let cursor: string | null = null;
    const seen: string[] = [];
    const inserted: Promise<unknown>[] = [];
    for (;;) {
      // writers race the reader: new rows land while the pages are read
      for (let k = 0; k < 3; k++) inserted.push(record(me.user.id));
      const [response]: [Awaited<ReturnType<typeof get>>, unknown] = await Promise.all([
        get(me.accessToken, `/v1/usage?limit=7${cursor ? `&cursor=${cursor}` : ''}`),
        record(me.user.id),
      ]);
      const page: { items: Array<{ id: string }>; nextCursor: string | null } = json(response);
      seen.push(...page.items.map((i) => i.id));
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
    await Promise.all(inserted);
    expect(new Set(seen).size).toBe(seen.length);
    expect([...existing].filter((id) => !seen.includes(id))).toEqual([]);
  });
});

describe('GET /v1/usage/summary', () => {
  it('counts and sums by operation and status and by model over the day, week and month windows', async () => {
    const me = await signUp(t.app);
    const other = await signUp(t.app);
    const start = t.clock.now().getTime();
    const rows = [];
    // ages: 40 days (outside every window), 20 days, 3 days, 2 hours, now
    for (const [ageMs, extra] of [
      [40 * DAY_MS, { tokensConsumed: 1000 }],
      [20 * DAY_MS, { modelId, inputUnits: 5, outputUnits: 7, tokensConsumed: 11, latencyMs: 13 }],
      [3 * DAY_MS, { modelId, inputUnits: 1, outputUnits: 2, tokensConsumed: 3, latencyMs: 4, status: 'FAILED' }],
      [
        2 * HOUR_MS,
        {
          modelId,
          inputUnits: 100,
          outputUnits: 200,
          tokensConsumed: 300,
          latencyMs: 400,
          metadata: { tokens: { input: 100, cachedInput: 60, cacheWrite: 30, output: 200, reasoning: 50 } },
        },
      ],
      [0, { operation: 'image.generate', inputUnits: 1, outputUnits: 4, tokensConsumed: 50, latencyMs: 900 }],
    ] as Array<[number, Partial<UsageRecordInput>]>) {
      t.clock.set(new Date(start - ageMs));
      rows.push(await record(me.user.id, extra));
    }
    t.clock.set(new Date(start));
    await record(other.user.id, { tokensConsumed: 77 });

    const month = json(await get(me.accessToken, '/v1/usage/summary'));
    expect(month.window).toBe('month');
    expect(month.since).toBe(new Date(start - 30 * DAY_MS).toISOString());
    const noClasses = { cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
    expect(month.byOperation).toEqual([
      {
        operation: 'image.generate',
        status: 'SUCCESS',
        _count: { _all: 1 },
        _sum: { inputUnits: 1, outputUnits: 4, creditsConsumed: 50, latencyMs: 900, ...noClasses },
      },
      {
        operation: 'text.generate',
        status: 'FAILED',
        _count: { _all: 1 },
        _sum: { inputUnits: 1, outputUnits: 2, creditsConsumed: 3, latencyMs: 4, ...noClasses },
      },
      // the token classes come from the records that keep them (metadata.tokens); older records count none
      {
        operation: 'text.generate',
        status: 'SUCCESS',
        _count: { _all: 2 },
        _sum: { inputUnits: 105, outputUnits: 207, creditsConsumed: 311, latencyMs: 413, cachedInputTokens: 60, cacheWriteTokens: 30, reasoningTokens: 50 },
      },
    ]);
    expect(month.byModel).toEqual([
      { modelId, _count: { _all: 3 } },
      { modelId: null, _count: { _all: 1 } },
    ]);

    const week = json(await get(me.accessToken, '/v1/usage/summary?window=week'));
    expect(week.byOperation.map((o: any) => [o.operation, o.status, o._count._all, o._sum.creditsConsumed])).toEqual([
      ['image.generate', 'SUCCESS', 1, 50],
      ['text.generate', 'FAILED', 1, 3],
      ['text.generate', 'SUCCESS', 1, 300],
    ]);
    const day = json(await get(me.accessToken, '/v1/usage/summary?window=day'));
    expect(day.since).toBe(new Date(start - DAY_MS).toISOString());
    expect(day.byOperation.map((o: any) => [o.operation, o._count._all])).toEqual([
      ['image.generate', 1],
      ['text.generate', 1],
    ]);
    // the sums equal the records of the window, as the feed lists them
    const listed = json(await get(me.accessToken, '/v1/usage?limit=100')).items.filter((i: any) => Date.parse(i.createdAt) >= start - 7 * DAY_MS);
    const total = (field: string) => listed.reduce((sum: number, i: any) => sum + i[field], 0);
    const summed = (field: string) => week.byOperation.reduce((sum: number, o: any) => sum + o._sum[field], 0);
    for (const field of ['inputUnits', 'outputUnits', 'creditsConsumed', 'latencyMs']) expect(summed(field)).toBe(total(field));

    for (const bad of ['window=year', 'window=week&x=1']) {
      expect((await get(me.accessToken, `/v1/usage/summary?${bad}`)).statusCode).toBe(400);
    }
    const empty = json(await get(other.accessToken, '/v1/usage/summary?window=day'));
    expect(empty.byOperation).toEqual([
      {
        operation: 'text.generate',
        status: 'SUCCESS',
        _count: { _all: 1 },
        _sum: { inputUnits: 0, outputUnits: 0, creditsConsumed: 77, latencyMs: 0, cachedInputTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 },
      },
    ]);
  });

  it('needs a token', async () => {
    for (const url of ['/v1/usage', '/v1/usage/summary']) expect((await t.app.inject({ method: 'GET', url })).statusCode).toBe(401);
  });
});
