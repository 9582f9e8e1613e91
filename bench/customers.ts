// Bench customers, made before the server under test starts: the app is built in this process on the bench database
// (PGlite allows one process at a time), 20 accounts sign up through its HTTP API, and what the product has no API
// for yet (a plan with API access, a balance that never runs out) is set through the services.
import { eq, sql } from 'drizzle-orm';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { plans } from '../src/db/schema/plans.js';
import { subscriptions } from '../src/db/schema/subscriptions.js';
import { BENCH_JWT_SECRET, BENCH_METRICS_TOKEN, type BenchDatabase } from './lib.js';

export interface Customer {
  userId: string;
  accessToken: string;
  /** An API key with the `ai:text` scope, when asked for. */
  apiKey: string | null;
}

export const BENCH_CUSTOMERS = Number(process.env.BENCH_CUSTOMERS ?? 20);
const BALANCE = 1_000_000_000_000;

/** Server settings shared by the in-process setup and the server under test. */
export const serverEnv = (database: BenchDatabase, extra: Record<string, string> = {}): Record<string, string> => ({
  LOG_LEVEL: 'warn',
  NODE_ENV: 'production',
  METRICS_TOKEN: BENCH_METRICS_TOKEN,
  RATE_LIMIT_PER_MINUTE: '10000000',
  JWT_SECRET: BENCH_JWT_SECRET,
  ...database.env,
  ...extra,
});

export async function prepareCustomers(env: Record<string, string>, options: { count?: number; plan?: string; apiKeys?: boolean } = {}): Promise<Customer[]> {
  const { app, platform, services } = await buildApp(loadConfig(env), { startJobs: false });
  try {
    const [plan] = options.plan ? await platform.db.select({ id: plans.id }).from(plans).where(eq(plans.slug, options.plan)) : [];
    if (options.plan && !plan) throw new Error(`no plan "${options.plan}"`);
    // A run sends tens of thousands of calls per customer, far past any plan's daily allowance: the benches measure
    // the metered call, not the plan's refusal, so the plan's dailyRequests is lifted on the bench's database.
    if (plan)
      await platform.db
        .update(plans)
        .set({ limits: sql`${plans.limits} - 'dailyRequests'` })
        .where(eq(plans.id, plan.id));
    const customers: Customer[] = [];
    for (let i = 0; i < (options.count ?? BENCH_CUSTOMERS); i++) {
      const signup = await app.inject({
        method: 'POST',
        url: '/v1/auth/signup',
        payload: { email: `bench.${Date.now()}.${i}@example.com`, password: 'benchmark password' },
        headers: { 'user-agent': `bench-customer-${i}` },
      });
      if (signup.statusCode !== 201) throw new Error(`bench sign-up failed: ${signup.statusCode} ${signup.body}`);
      const { accessToken, user } = signup.json<{ accessToken: string; user: { id: string } }>();
      if (plan) await platform.db.update(subscriptions).set({ planId: plan.id }).where(eq(subscriptions.userId, user.id));
      await services.wallet.credit({ userId: user.id, kind: 'ADJUSTMENT', amount: BALANCE, idempotencyKey: `bench:${user.id}`, note: 'benchmark balance' });
      let apiKey: string | null = null;
      if (options.apiKeys) {
        const created = await app.inject({
          method: 'POST',
          url: '/v1/account/api-keys',
          headers: { authorization: `Bearer ${accessToken}` },
          payload: { label: 'bench', scopes: ['ai:text'] },
        });
        if (created.statusCode !== 201) throw new Error(`bench API key failed: ${created.statusCode} ${created.body}`);
        apiKey = created.json<{ key: string }>().key;
      }
      customers.push({ userId: user.id, accessToken, apiKey });
    }
    return customers;
  } finally {
    await app.close();
  }
}

/**
 * Checks through the API that every customer's wallet balance equals the sum of its ledger (the totals per kind are
 * sums of ledger rows); prints the outcome and returns whether all were equal.
 */
export async function checkWallets(baseUrl: string, customers: Customer[]): Promise<boolean> {
  let equal = 0;
  let spent = 0;
  const mismatches: string[] = [];
  for (const customer of customers) {
    const response = await fetch(`${baseUrl}/v1/credits/balance`, { headers: { authorization: `Bearer ${customer.accessToken}` } });
    if (!response.ok) throw new Error(`balance of ${customer.userId}: ${response.status} ${await response.text()}`);
    const { tokens, totals } = (await response.json()) as {
      tokens: number;
      totals: Record<'purchased' | 'bonus' | 'granted' | 'converted' | 'adjusted' | 'spent', number>;
    };
    const ledger = totals.purchased + totals.bonus + totals.granted + totals.converted + totals.adjusted - totals.spent;
    spent += totals.spent;
    if (tokens === ledger) equal++;
    else mismatches.push(`${customer.userId}: balance ${tokens}, ledger ${ledger}`);
  }
  console.log(
    `Wallets: ${equal} of ${customers.length} equal their ledgers; ${spent} tokens spent so far.${mismatches.length ? ` MISMATCH: ${mismatches.join('; ')}` : ''}`,
  );
  return mismatches.length === 0;
}
