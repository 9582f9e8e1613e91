import { randomUUID } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wallets } from '../../src/db/schema/wallet.js';
import { bearer, createTestApp, json, signUp, signUpAs, type TestApp } from '../helpers/test-app.js';
import { setBalance } from '../helpers/gateway.js';

let t: TestApp;
let root: Awaited<ReturnType<typeof signUpAs>>;
const THRESHOLD = 1_000_000; // 100 credits

beforeAll(async () => {
  t = await createTestApp();
  root = await signUpAs(t, 'SUPER_ADMIN');
  const set = await t.app.inject({
    method: 'PUT',
    url: '/v1/admin/topup/settings',
    headers: bearer(root.accessToken),
    payload: { lowBalanceThresholdTokens: THRESHOLD },
  });
  expect(set.statusCode, set.body).toBe(200);
});
afterAll(async () => t?.close());

const hello = { model: 'local/text', messages: [{ role: 'user', content: 'Explain how lighthouses work' }] };
const ask = (token: string) => t.app.inject({ method: 'POST', url: '/v1/ai/text', headers: bearer(token), payload: hello });
const warnings = async (token: string) =>
  (
    json(await t.app.inject({ method: 'GET', url: '/v1/notifications', headers: bearer(token) })).items as Array<{ type: string; payload: Record<string, any> }>
  ).filter((n) => n.type === 'QUOTA_WARNING');
const warned = async (userId: string) =>
  (
    await t.platform.db
      .select({ warned: wallets.lowBalanceWarned })
      .from(wallets)
      .where(and(eq(wallets.ownerType, 'USER'), eq(wallets.ownerId, userId)))
  )[0]!.warned;
const settled = () => t.services.wallet.backgroundIdle();

describe('QUOTA_WARNING when a charge takes the wallet under the low-balance threshold', () => {
  it('once per crossing: not above the threshold, once when crossing, not again while under, again after a top-up re-arms it', async () => {
    const user = await signUp(t.app);
    await setBalance(t, user.user.id, THRESHOLD * 3);
    expect((await ask(user.accessToken)).statusCode).toBe(200); // well above: the common case sends nothing
    await settled();
    expect(await warnings(user.accessToken)).toEqual([]);
    expect(await warned(user.user.id)).toBe(false);

    await setBalance(t, user.user.id, THRESHOLD + 1);
    expect((await ask(user.accessToken)).statusCode).toBe(200);
    await settled();
    const [first, ...rest] = await warnings(user.accessToken);
    expect(rest).toEqual([]);
    const { tokens } = await t.services.wallet.balance({ userId: user.user.id });
    expect(first!.payload).toEqual({
      balanceTokens: tokens,
      thresholdTokens: THRESHOLD,
      suggestedTopUp: { component: 'credits', units: 50 },
      topUpOptions: '/v1/topup/options',
    });
    expect(tokens).toBeLessThan(THRESHOLD);

    expect((await ask(user.accessToken)).statusCode).toBe(200); // still under: no second warning
    await settled();
    expect(await warnings(user.accessToken)).toHaveLength(1);

    // A credit back above the threshold re-arms it; the next crossing warns again.
    await t.services.wallet.credit({ userId: user.user.id, kind: 'GRANT', amount: THRESHOLD, idempotencyKey: `grant:${randomUUID()}`, note: 'support grant' });
    expect(await warned(user.user.id)).toBe(false);
    await setBalance(t, user.user.id, THRESHOLD + 1);
    expect((await ask(user.accessToken)).statusCode).toBe(200);
    await settled();
    expect(await warnings(user.accessToken)).toHaveLength(2);
  });

  it('concurrent charges crossing together send one warning', async () => {
    const user = await signUp(t.app);
    await setBalance(t, user.user.id, THRESHOLD + 1);
    const responses = await Promise.all(Array.from({ length: 6 }, () => ask(user.accessToken)));
    expect(responses.map((r) => r.statusCode)).toEqual(Array(6).fill(200));
    await settled();
    expect(await warnings(user.accessToken)).toHaveLength(1);
    expect(await warned(user.user.id)).toBe(true);
  });

  it('the general settlement (a call that ran over its reservation) warns too; switched-off preferences are respected', async () => {
    const user = await signUp(t.app);
    await setBalance(t, user.user.id, THRESHOLD + 500);
    const requestId = randomUUID();
    await t.services.wallet.reserve({ userId: user.user.id, tokens: 100, requestId, leaseSeconds: 60 });
    await t.services.wallet.settle({ requestId, actualTokens: 1_000 }); // ran over: the locked, step-by-step path
    await settled();
    expect(await warnings(user.accessToken)).toHaveLength(1);

    const quiet = await signUp(t.app);
    expect(
      (
        await t.app.inject({
          method: 'PATCH',
          url: '/v1/account/notification-prefs',
          headers: bearer(quiet.accessToken),
          payload: { inAppQuotaWarnings: false },
        })
      ).statusCode,
    ).toBe(200);
    await setBalance(t, quiet.user.id, THRESHOLD + 1);
    expect((await ask(quiet.accessToken)).statusCode).toBe(200);
    await settled();
    expect(await warnings(quiet.accessToken)).toEqual([]);
    expect(await warned(quiet.user.id)).toBe(true); // the crossing is spent even though the user asked for no warnings
  });
});

describe('QUOTA_EXCEEDED carries the suggested top-up', () => {
  it('suggests ceil(shortfall / tokensPerCredit) credits raised to minUnits and rounded up to the step', async () => {
    const user = await signUp(t.app);
    await setBalance(t, user.user.id, 10);
    const refused = await ask(user.accessToken);
    expect(refused.statusCode).toBe(429);
    const { error } = json(refused);
    expect(error.code).toBe('QUOTA_EXCEEDED');
    expect(error.details.shortfallTokens).toBeGreaterThan(0);
    expect(error.details.suggestedTopUp).toEqual({ component: 'credits', units: 50 }); // a small shortfall: the 50-credit minimum
    expect(error.message).toContain('50 credits would cover it');

    // With 1 token per credit, 10-credit minimum and steps of 10, the shortfall itself decides.
    const admin = (method: 'PUT' | 'PATCH', url: string, payload: object) => t.app.inject({ method, url, headers: bearer(root.accessToken), payload });
    expect((await admin('PATCH', '/v1/admin/topup/components/credits', { minUnits: 10, step: 10 })).statusCode).toBe(200);
    expect((await admin('PUT', '/v1/admin/credits/pricing', { tokensPerCredit: 1 })).statusCode).toBe(200);
    try {
      const again = json(await ask(user.accessToken)).error;
      const shortfall = again.details.shortfallTokens as number;
      expect(again.details.suggestedTopUp).toEqual({ component: 'credits', units: Math.ceil(Math.max(shortfall, 10) / 10) * 10 });
      expect(again.details.suggestedTopUp.units).toBeGreaterThan(10);
    } finally {
      await admin('PUT', '/v1/admin/credits/pricing', { tokensPerCredit: 10_000 });
      await admin('PATCH', '/v1/admin/topup/components/credits', { minUnits: 50, step: 10 });
    }
  });
});
