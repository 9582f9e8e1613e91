import { and, eq, sql } from 'drizzle-orm';
import { plans } from '../../src/db/schema/plans.js';
import { subscriptions } from '../../src/db/schema/subscriptions.js';
import { walletLedger, wallets } from '../../src/db/schema/wallet.js';
import { bearer, json, type TestApp } from './test-app.js';

/** Moves the user's active subscription to another plan (checkout is another issue's work). */
/** Puts the user on a plan directly in the table; `services`, when given, is the instance whose cache must see it at once. */
export async function setPlan(t: Pick<TestApp, 'platform'> & { services?: TestApp['services'] }, userId: string, planSlug: string): Promise<void> {
  const [plan] = await t.platform.db.select({ id: plans.id }).from(plans).where(eq(plans.slug, planSlug));
  if (!plan) throw new Error(`no plan ${planSlug}`);
  await t.platform.db.update(subscriptions).set({ planId: plan.id }).where(eq(subscriptions.userId, userId));
  // Written behind the service's back: on PostgreSQL its cache hears of it by NOTIFY, later than the next request may come.
  t.services?.subscriptions.forgetCached(userId);
}

/** Sets the user's wallet to exactly `tokens`, through the wallet service (so the ledger stays the truth). */
export async function setBalance(t: TestApp, userId: string, tokens: number): Promise<void> {
  const { tokens: current } = await t.services.wallet.balance({ userId });
  const key = `test-balance:${userId}:${Date.now()}:${Math.random()}`;
  if (current > tokens) await t.services.wallet.debit({ userId, amount: current - tokens, idempotencyKey: key, note: 'test setup' });
  if (current < tokens) await t.services.wallet.credit({ userId, kind: 'ADJUSTMENT', amount: tokens - current, idempotencyKey: key, note: 'test setup' });
}

export async function walletState(t: TestApp, userId: string): Promise<{ balance: number; ledgerSum: number }> {
  const [wallet] = await t.platform.db
    .select()
    .from(wallets)
    .where(and(eq(wallets.ownerType, 'USER'), eq(wallets.ownerId, userId)));
  const [sum] = await t.platform.db
    .select({ total: sql<string>`coalesce(sum(${walletLedger.amount}), 0)` })
    .from(walletLedger)
    .where(eq(walletLedger.walletId, wallet!.id));
  return { balance: wallet!.balance, ledgerSum: Number(sum!.total) };
}

/** Ledger rows written for one gateway request. */
export async function ledgerOf(t: TestApp, requestId: string) {
  return t.platform.db.select().from(walletLedger).where(eq(walletLedger.requestId, requestId)).orderBy(walletLedger.createdAt, walletLedger.id);
}

export async function createApiKey(
  t: TestApp,
  accessToken: string,
  scopes: string[],
  extra: Record<string, unknown> = {},
): Promise<{ id: string; key: string }> {
  const response = await t.app.inject({
    method: 'POST',
    url: '/v1/account/api-keys',
    headers: bearer(accessToken),
    payload: { label: 'test key', scopes, ...extra },
  });
  if (response.statusCode !== 201) throw new Error(`api key creation failed: ${response.statusCode} ${response.body}`);
  return json(response);
}

export interface SseEvent {
  type: string;
  [key: string]: any;
}

/** Parses a `text/event-stream` body of `data: <json>` events (comments ignored). */
export function parseSse(body: string): SseEvent[] {
  return body
    .split('\n\n')
    .map((block) =>
      block
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice(6))
        .join('\n'),
    )
    .filter(Boolean)
    .map((data) => JSON.parse(data));
}

/** Environment that points a provider's accounts at a fake upstream. */
export const providerEnv = (prefix: string, baseUrl: string, keys: string[], extra: Record<string, string> = {}) => ({
  [`${prefix}_API_KEY`]: keys.join(','),
  [`${prefix}_BASE_URL`]: baseUrl,
  ...extra,
});
