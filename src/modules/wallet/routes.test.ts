import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

const get = (url: string, token?: string) => t.app.inject({ method: 'GET', url, headers: token ? bearer(token) : {} });

describe('GET /v1/credits/balance', () => {
  it('shows tokens, credits (rounded down to 2 decimals) and totals per ledger kind', async () => {
    const { user, accessToken } = await signUp(t.app);
    const wallet = t.services.wallet;
    const requestId = `req_${randomUUID()}`;
    await wallet.reserve({ userId: user.id, tokens: 123_456, requestId });
    await wallet.settle({ requestId, actualTokens: 100_001 });
    await wallet.credit({ userId: user.id, kind: 'PURCHASE', amount: 50_000, idempotencyKey: `p:${randomUUID()}` });
    await wallet.credit({ userId: user.id, kind: 'PROMO', amount: 5_000, idempotencyKey: `b:${randomUUID()}` });
    await wallet.credit({ userId: user.id, kind: 'CONVERSION', amount: 7, idempotencyKey: `c:${randomUUID()}` });
    await wallet.debit({ userId: user.id, amount: 3_000, idempotencyKey: `a:${randomUUID()}` });

    const response = await get('/v1/credits/balance', accessToken);
    expect(response.statusCode).toBe(200);
    const tokens = 1_000_000 - 100_001 + 50_000 + 5_000 + 7 - 3_000;
    expect(json(response)).toEqual({
      tokens,
      credits: Math.floor((tokens * 100) / 10_000) / 100,
      tokensPerCredit: 10_000,
      unpaidOverrunTokens: 0,
      updatedAt: expect.any(String),
      totals: { purchased: 50_000, bonus: 5_000, granted: 1_000_000, converted: 7, adjusted: -3_000, spent: 100_001 },
    });
    expect(json(response).credits).toBe(95.2);

    const short = await get('/v1/subscriptions/credits/balance', accessToken);
    expect(short.statusCode).toBe(200);
    expect(json(short)).toEqual({ tokens, credits: 95.2, tokensPerCredit: 10_000, unpaidOverrunTokens: 0, updatedAt: json(response).updatedAt });
  });

  it('follows the tokensPerCredit setting', async () => {
    const { accessToken } = await signUp(t.app);
    await t.services.catalog.updatePricingSettings({ tokensPerCredit: 30_000 });
    try {
      expect(json(await get('/v1/credits/balance', accessToken))).toMatchObject({ tokens: 1_000_000, credits: 33.33, tokensPerCredit: 30_000 });
    } finally {
      await t.services.catalog.updatePricingSettings({ tokensPerCredit: 10_000 });
    }
  });

  it.each(['/v1/credits/balance', '/v1/subscriptions/credits/balance', '/v1/credits/transactions', '/v1/subscriptions/credits/transactions'])(
    '%s needs a valid access token',
    async (url) => {
      expect((await get(url)).statusCode).toBe(401);
      const bad = await get(url, 'not-a-token');
      expect(bad.statusCode).toBe(401);
      expect(json(bad).error.code).toBe('UNAUTHORIZED');
    },
  );

  it('rejects unknown query keys', async () => {
    const { accessToken } = await signUp(t.app);
    for (const url of ['/v1/credits/balance?x=1', '/v1/subscriptions/credits/balance?x=1', '/v1/subscriptions/credits/transactions?limit=5']) {
      const response = await get(url, accessToken);
      expect(response.statusCode).toBe(400);
      expect(json(response).error.code).toBe('BAD_REQUEST');
    }
  });
});

describe('GET /v1/credits/transactions', () => {
  it('pages newest first with a cursor, every row exactly once even while rows are added', async () => {
    const { user, accessToken } = await signUp(t.app);
    for (let i = 0; i < 12; i++) {
      t.clock.advance(1000);
      await t.services.wallet.credit({ userId: user.id, kind: 'GRANT', amount: i + 1, idempotencyKey: `g:${user.id}:${i}` });
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const url: string = `/v1/credits/transactions?limit=5${cursor ? `&cursor=${cursor}` : ''}`;
      const response = await get(url, accessToken);
      expect(response.statusCode).toBe(200);
      const page = json(response);
      expect(page.items.length).toBeLessThanOrEqual(5);
      seen.push(...page.items.map((e: { id: string }) => e.id));
      if (pages === 0) {
        expect(page.items[0]).toEqual({
          id: expect.any(String),
          kind: 'GRANT',
          amount: 12,
          note: null,
          paymentId: null,
          requestId: null,
          createdAt: expect.any(String),
        });
        // A row added after the first page is newer than the cursor: it does not shift later pages.
        t.clock.advance(1000);
        await t.services.wallet.credit({ userId: user.id, kind: 'PROMO', amount: 99, idempotencyKey: `late:${user.id}` });
      }
      cursor = page.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toHaveLength(13); // 12 grants + the signup grant
    expect(new Set(seen).size).toBe(13);
  });

  it('shows only the caller’s own entries', async () => {
    const a = await signUp(t.app);
    const b = await signUp(t.app);
    await t.services.wallet.credit({ userId: a.user.id, kind: 'GRANT', amount: 5, idempotencyKey: `only-a:${a.user.id}` });
    const items = json(await get('/v1/credits/transactions', b.accessToken)).items;
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ kind: 'GRANT', amount: 1_000_000, note: 'Free plan allowance' });
  });

  it.each([
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=abc', 'limit'],
    ['cursor=%%%', 'cursor'],
    ['cursor=' + 'x'.repeat(600), 'cursor'],
    ['sort=asc', 'sort'],
  ])('answers 400 for %s', async (query, field) => {
    const { accessToken } = await signUp(t.app);
    const response = await get(`/v1/credits/transactions?${query}`, accessToken);
    expect(response.statusCode).toBe(400);
    expect(json(response).error.code).toBe('BAD_REQUEST');
    expect(JSON.stringify(json(response).error)).toContain(field);
  });
});

describe('GET /v1/subscriptions/credits/transactions', () => {
  it('returns the last 50 entries, newest first', async () => {
    const { user, accessToken } = await signUp(t.app);
    for (let i = 0; i < 55; i++) {
      t.clock.advance(10);
      await t.services.wallet.credit({ userId: user.id, kind: 'PROMO', amount: 1, idempotencyKey: `r:${user.id}:${i}`, note: `#${i}` });
    }
    const response = await get('/v1/subscriptions/credits/transactions', accessToken);
    expect(response.statusCode).toBe(200);
    const { items } = json(response);
    expect(items).toHaveLength(50);
    expect(items[0].note).toBe('#54');
    expect(items[49].note).toBe('#5');
  });
});

describe('GET /v1/subscriptions/credits/packs', () => {
  it('is always an empty array, with or without a token', async () => {
    const anonymous = await get('/v1/subscriptions/credits/packs');
    expect(anonymous.statusCode).toBe(200);
    expect(json(anonymous)).toEqual([]);
    const { accessToken } = await signUp(t.app);
    expect(json(await get('/v1/subscriptions/credits/packs', accessToken))).toEqual([]);
  });
});
