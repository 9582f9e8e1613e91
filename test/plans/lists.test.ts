// The lists a user fills fastest, at 100k rows a table over 20k users, are index-served: the signed-in user owns 2,000
// rows of each (50 of the 20k payments and top-up orders), and every SELECT a page sends is explained as sent (see
// test/helpers/plan-guard.ts): it must not read all of a large table, sort more than a page, go parallel or expect more
// rows than a page. PostgreSQL only (CI's PostgreSQL pass); PGlite holds no table of this size.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { member, type Member } from '../helpers/community.js';
import {
  GENERATION_SEARCH,
  GENERATION_TAG,
  OWNER_API_KEY_SQL,
  seedGenerations,
  seedLedger,
  seedNotifications,
  seedPaymentsAndOrders,
  seedUsage,
  seedUsers,
  type ListsScale,
} from '../helpers/lists-scale.js';
import { testDatabaseUrl } from '../helpers/pg-admin.js';
import { openPlanGuard, type PlanGuard } from '../helpers/plan-guard.js';
import { createTestApp, type TestApp } from '../helpers/test-app.js';

const LARGE_TABLES = new Set(['users', 'generations', 'usage_records', 'wallets', 'wallet_ledger', 'notifications', 'payments', 'topup_orders']);

describe.runIf(testDatabaseUrl())("a user's library, usage, wallet and inbox at 100k rows a table are index-served (PostgreSQL)", () => {
  let t: TestApp;
  let owner: Member;
  let guard: PlanGuard;
  let apiKeyId: string;

  beforeAll(async () => {
    t = await createTestApp();
    owner = await member(t, 'Owner');
    const scale: ListsScale = { users: 20_000, rows: 100_000, ownerId: owner.id };
    const db = t.platform.database;
    await seedUsers(db, scale);
    await seedGenerations(db, scale);
    await seedUsage(db, scale);
    await seedLedger(db, scale);
    await seedNotifications(db, scale);
    await seedPaymentsAndOrders(db, scale, 20_000);
    await db.query('analyze');
    apiKeyId = (await db.query<{ id: string }>(`select ${OWNER_API_KEY_SQL} as id`)).rows[0]!.id;
    guard = await openPlanGuard(t, LARGE_TABLES);
  }, 180_000);

  afterAll(async () => {
    await guard?.close();
    await t?.close();
  });

  /** One test per list and filter, so a report names every one that fails. */
  const pages: Array<[string, () => string]> = [
    ['library: every media kind (the default)', () => '/v1/library/generations'],
    ['library: the text history (kind=TEXT)', () => '/v1/library/generations?kind=TEXT'],
    ['library: one media kind', () => '/v1/library/generations?kind=VIDEO'],
    ['library: favourites', () => '/v1/library/generations?favoritesOnly=true'],
    ['library: a search of the prompts', () => `/v1/library/generations?search=${GENERATION_SEARCH}`],
    ['library: a tag', () => `/v1/library/generations?tag=${GENERATION_TAG}`],
    ['usage: the feed', () => '/v1/usage'],
    ['usage: by operation', () => '/v1/usage?operation=image.generate'],
    ['usage: by status', () => '/v1/usage?status=FAILED'],
    ['usage: by API key', () => `/v1/usage?apiKeyId=${apiKeyId}`],
    ['wallet: the ledger', () => '/v1/credits/transactions'],
    ['wallet: top-up orders, each with its payment', () => '/v1/topup/orders'],
    ['notifications: the inbox', () => '/v1/notifications'],
    ['notifications: unread only', () => '/v1/notifications?unreadOnly=true'],
  ];
  it.each(pages)('%s', (_, url) => guard.expectIndexServed(url(), owner.headers));

  // An aggregate: it reads the caller's window by index, never the table, and answers a few groups.
  it.each(['day', 'week', 'month'])('usage: the summary of the last %s', async (window) => {
    const summary = await guard.expectStatementsIndexServed(`/v1/usage/summary?window=${window}`, owner.headers);
    expect(summary.byOperation.length).toBeGreaterThan(0);
  });
  it('wallet: the last 50 entries', async () => {
    const recent = await guard.expectStatementsIndexServed('/v1/subscriptions/credits/transactions', owner.headers);
    expect(recent.items).toHaveLength(50);
  });
  it('wallet: the balance with its totals per kind (a sum over the wallet, by index)', async () => {
    const balance = await guard.expectStatementsIndexServed('/v1/credits/balance', owner.headers);
    expect(balance.totals.purchased).toBeGreaterThan(0);
  });
});
