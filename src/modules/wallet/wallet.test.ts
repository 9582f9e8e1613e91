import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { walletLedger, walletReservations, wallets } from '../../db/schema/wallet.js';
import { AppError } from '../../platform/http/errors.js';
import { createTestApp, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createWalletService } from './service.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());
afterEach(async () => {
  // The ledger is the truth: after every test every wallet's balance equals the sum of its rows.
  expect(await t.services.wallet.findImbalances()).toEqual([]);
});

const SIGNUP_GRANT = 1_000_000;
const rid = () => `req_${randomUUID()}`;
const wallet = () => t.services.wallet;

async function newUser(): Promise<string> {
  const { user } = await signUp(t.app);
  return user.id as string;
}

async function ledgerOf(userId: string) {
  const [w] = await t.platform.db
    .select()
    .from(wallets)
    .where(and(eq(wallets.ownerType, 'USER'), eq(wallets.ownerId, userId)));
  const rows = await t.platform.db.select().from(walletLedger).where(eq(walletLedger.walletId, w!.id)).orderBy(walletLedger.createdAt, walletLedger.id);
  return { wallet: w!, rows, sum: rows.reduce((acc, r) => acc + r.amount, 0) };
}

async function expectQuota(promise: Promise<unknown>, shortfall: number) {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  expect(err).toMatchObject({ statusCode: 429, code: 'QUOTA_EXCEEDED', details: expect.objectContaining({ shortfallTokens: shortfall }) });
  expect((err as AppError).message).toMatch(/short/);
}

describe('reserve', () => {
  it('takes the tokens with a USAGE row in the same transaction', async () => {
    const userId = await newUser();
    const requestId = rid();
    await wallet().reserve({ userId, tokens: 250_000, requestId, note: 'text.generate' });
    const { wallet: w, rows } = await ledgerOf(userId);
    expect(w.balance).toBe(SIGNUP_GRANT - 250_000);
    expect(rows.map((r) => [r.kind, r.amount])).toEqual([
      ['GRANT', SIGNUP_GRANT],
      ['USAGE', -250_000],
    ]);
    expect(rows[1]).toMatchObject({ requestId, idempotencyKey: `reserve:${requestId}`, note: 'text.generate' });
    expect(await wallet().reservation(requestId)).toMatchObject({ status: 'OPEN', tokens: 250_000 });
  });

  it('is idempotent by requestId: a replay reserves nothing more', async () => {
    const userId = await newUser();
    const requestId = rid();
    await wallet().reserve({ userId, tokens: 100_000, requestId });
    await wallet().reserve({ userId, tokens: 100_000, requestId });
    await wallet().reserve({ userId, tokens: 999_999_999, requestId });
    const { wallet: w, rows } = await ledgerOf(userId);
    expect(w.balance).toBe(SIGNUP_GRANT - 100_000);
    expect(rows.filter((r) => r.kind === 'USAGE')).toHaveLength(1);
  });

  it('refuses a replay against a settled or released reservation instead of reporting success', async () => {
    const userId = await newUser();
    const settled = rid();
    const released = rid();
    await wallet().reserve({ userId, tokens: 100_000, requestId: settled });
    await wallet().settle({ requestId: settled, actualTokens: 60_000 });
    await wallet().reserve({ userId, tokens: 100_000, requestId: released });
    await wallet().release({ requestId: released });
    await expect(wallet().reserve({ userId, tokens: 100_000, requestId: settled })).rejects.toMatchObject({
      statusCode: 409,
      message: expect.stringContaining('already charged'),
    });
    await expect(wallet().reserve({ userId, tokens: 100_000, requestId: released })).rejects.toMatchObject({
      statusCode: 409,
      message: expect.stringContaining('already refunded'),
    });
    expect((await ledgerOf(userId)).wallet.balance).toBe(SIGNUP_GRANT - 60_000);
  });

  it('refuses a request id that another wallet already used', async () => {
    const a = await newUser();
    const b = await newUser();
    const requestId = rid();
    await wallet().reserve({ userId: a, tokens: 10, requestId });
    await expect(wallet().reserve({ userId: b, tokens: 10, requestId })).rejects.toMatchObject({ statusCode: 409, code: 'CONFLICT' });
    expect((await ledgerOf(b)).wallet.balance).toBe(SIGNUP_GRANT);
  });

  it('answers 429 QUOTA_EXCEEDED with details.shortfallTokens and changes nothing when the balance is short', async () => {
    const userId = await newUser();
    const requestId = rid();
    await expectQuota(wallet().reserve({ userId, tokens: SIGNUP_GRANT + 1234, requestId }), 1234);
    const { wallet: w, rows } = await ledgerOf(userId);
    expect(w.balance).toBe(SIGNUP_GRANT);
    expect(rows).toHaveLength(1);
    expect(await wallet().reservation(requestId)).toBeUndefined();
    // The same request id can try again once the balance covers it.
    await wallet().reserve({ userId, tokens: SIGNUP_GRANT, requestId });
    expect((await ledgerOf(userId)).wallet.balance).toBe(0);
  });

  it('a user without a wallet gets one on first use and is refused for lack of tokens', async () => {
    const userId = randomUUID();
    await expectQuota(wallet().reserve({ userId, tokens: 5, requestId: rid() }), 5);
    const balance = await wallet().balance({ userId });
    expect(balance).toMatchObject({ tokens: 0, credits: 0, totals: { granted: 0, spent: 0 } });
  });

  it('rejects a negative or fractional token amount as a programming error', async () => {
    const userId = await newUser();
    await expect(wallet().reserve({ userId, tokens: -1, requestId: rid() })).rejects.toMatchObject({ statusCode: 500 });
    await expect(wallet().reserve({ userId, tokens: 1.5, requestId: rid() })).rejects.toMatchObject({ statusCode: 500 });
    expect((await ledgerOf(userId)).wallet.balance).toBe(SIGNUP_GRANT);
  });
});

describe('settle', () => {
  it('refunds the unused remainder of a reservation', async () => {
    const userId = await newUser();
    const requestId = rid();
    await wallet().reserve({ userId, tokens: 300_000, requestId });
    expect(await wallet().settle({ requestId, actualTokens: 120_000 })).toEqual({ chargedTokens: 120_000, shortfallTokens: 0 });
    const { wallet: w, rows } = await ledgerOf(userId);
    expect(w.balance).toBe(SIGNUP_GRANT - 120_000);
    expect(rows.at(-1)).toMatchObject({ kind: 'REFUND', amount: 180_000, idempotencyKey: `settle:${requestId}` });
    expect(await wallet().reservation(requestId)).toMatchObject({ status: 'SETTLED', chargedTokens: 120_000, usedTokens: 120_000 });
  });

  it('writes nothing more when the real cost equals the reservation', async () => {
    const userId = await newUser();
    const requestId = rid();
    await wallet().reserve({ userId, tokens: 50_000, requestId });
    expect(await wallet().settle({ requestId, actualTokens: 50_000 })).toEqual({ chargedTokens: 50_000, shortfallTokens: 0 });
    expect((await ledgerOf(userId)).rows).toHaveLength(2);
  });

  it('charges a second USAGE row when the call ran over', async () => {
    const userId = await newUser();
    const requestId = rid();
    await wallet().reserve({ userId, tokens: 100_000, requestId });
    expect(await wallet().settle({ requestId, actualTokens: 160_000 })).toEqual({ chargedTokens: 160_000, shortfallTokens: 0 });
    const { wallet: w, rows } = await ledgerOf(userId);
    expect(w.balance).toBe(SIGNUP_GRANT - 160_000);
    expect(rows.filter((r) => r.kind === 'USAGE').map((r) => r.amount)).toEqual([-100_000, -60_000]);
  });

  it('caps an overrun at the balance, records the shortfall and refuses the next reserve until it is paid', async () => {
    const userId = await newUser();
    const requestId = rid();
    await wallet().reserve({ userId, tokens: 900_000, requestId });
    expect(await wallet().settle({ requestId, actualTokens: 1_250_000 })).toEqual({ chargedTokens: 1_000_000, shortfallTokens: 250_000 });
    let state = await ledgerOf(userId);
    expect(state.wallet).toMatchObject({ balance: 0, debt: 250_000 });
    expect(await wallet().reservation(requestId)).toMatchObject({ shortfallTokens: 250_000, chargedTokens: 1_000_000 });

    // A later reserve is refused while the overrun is unpaid, even for zero tokens.
    await expectQuota(wallet().reserve({ userId, tokens: 1000, requestId: rid() }), 251_000);
    await expectQuota(wallet().reserve({ userId, tokens: 0, requestId: rid() }), 250_000);

    // New tokens pay the overrun first.
    const credited = await wallet().credit({ userId, kind: 'PURCHASE', amount: 400_000, idempotencyKey: `payment:${randomUUID()}`, paymentId: randomUUID() });
    expect(credited).toEqual({ applied: true, balance: 150_000 });
    state = await ledgerOf(userId);
    expect(state.wallet).toMatchObject({ balance: 150_000, debt: 0 });
    expect(state.rows.at(-1)).toMatchObject({ kind: 'USAGE', amount: -250_000 });
    await wallet().reserve({ userId, tokens: 150_000, requestId: rid() });
  });

  it('settles exactly once per request id: a repeat returns the first outcome and moves nothing', async () => {
    const userId = await newUser();
    const requestId = rid();
    await wallet().reserve({ userId, tokens: 100_000, requestId });
    const first = await wallet().settle({ requestId, actualTokens: 40_000 });
    const again = await wallet().settle({ requestId, actualTokens: 90_000 });
    expect(again).toEqual(first);
    const parallel = await Promise.all(Array.from({ length: 5 }, () => wallet().settle({ requestId, actualTokens: 70_000 })));
    for (const outcome of parallel) expect(outcome).toEqual(first);
    expect((await ledgerOf(userId)).wallet.balance).toBe(SIGNUP_GRANT - 40_000);
  });

  it('answers 404 for a request that reserved nothing', async () => {
    await expect(wallet().settle({ requestId: rid(), actualTokens: 1 })).rejects.toMatchObject({ statusCode: 404, code: 'NOT_FOUND' });
  });
});

describe('release', () => {
  it('refunds an open reservation in full, once', async () => {
    const userId = await newUser();
    const requestId = rid();
    await wallet().reserve({ userId, tokens: 400_000, requestId });
    await wallet().release({ requestId, reason: 'Provider failed' });
    await wallet().release({ requestId, reason: 'Provider failed' });
    const { wallet: w, rows } = await ledgerOf(userId);
    expect(w.balance).toBe(SIGNUP_GRANT);
    expect(rows.at(-1)).toMatchObject({ kind: 'REFUND', amount: 400_000, note: 'Provider failed', idempotencyKey: `release:${requestId}` });
    expect(rows.filter((r) => r.kind === 'REFUND')).toHaveLength(1);
    expect(await wallet().reservation(requestId)).toMatchObject({ status: 'RELEASED', chargedTokens: 0 });
    // Settling a released request charges nothing.
    expect(await wallet().settle({ requestId, actualTokens: 400_000 })).toEqual({ chargedTokens: 0, shortfallTokens: 0 });
    expect((await ledgerOf(userId)).wallet.balance).toBe(SIGNUP_GRANT);
  });

  it('does nothing for a settled or unknown request', async () => {
    const userId = await newUser();
    const requestId = rid();
    await wallet().reserve({ userId, tokens: 10_000, requestId });
    await wallet().settle({ requestId, actualTokens: 10_000 });
    await wallet().release({ requestId });
    await wallet().release({ requestId: rid() });
    expect((await ledgerOf(userId)).wallet.balance).toBe(SIGNUP_GRANT - 10_000);
  });
});

describe('credit and debit', () => {
  it('adds tokens once per idempotency key', async () => {
    const userId = await newUser();
    const key = `grant:${randomUUID()}`;
    expect(await wallet().credit({ userId, kind: 'GRANT', amount: 5000, idempotencyKey: key, note: 'Support grant' })).toEqual({
      applied: true,
      balance: SIGNUP_GRANT + 5000,
    });
    expect(await wallet().credit({ userId, kind: 'GRANT', amount: 5000, idempotencyKey: key })).toEqual({ applied: false, balance: SIGNUP_GRANT + 5000 });
    await expect(wallet().credit({ userId, kind: 'USAGE', amount: 1, idempotencyKey: `x:${randomUUID()}` })).rejects.toMatchObject({ statusCode: 500 });
  });

  it('takes tokens back as far as the balance allows and reports the rest', async () => {
    const userId = await newUser();
    const paymentId = randomUUID();
    await wallet().reserve({ userId, tokens: 800_000, requestId: rid() });
    const key = `refund:${paymentId}`;
    const taken = await wallet().debit({ userId, amount: 300_000, idempotencyKey: key, paymentId, note: 'Top-up refunded' });
    expect(taken).toEqual({ applied: true, takenTokens: 200_000, unrecoveredTokens: 100_000, balance: 0 });
    const again = await wallet().debit({ userId, amount: 300_000, idempotencyKey: key, paymentId });
    expect(again).toMatchObject({ applied: false, takenTokens: 200_000, unrecoveredTokens: 100_000 });
    const { rows } = await ledgerOf(userId);
    expect(rows.at(-1)).toMatchObject({ kind: 'ADJUSTMENT', amount: -200_000, paymentId });
  });
});

describe('concurrency', () => {
  it('50 parallel reservations against a balance that covers 10: exactly 10 succeed and the balance never goes negative', async () => {
    const userId = await newUser();
    const each = SIGNUP_GRANT / 10;
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => wallet().reserve({ userId, tokens: each, requestId: rid() })));
    const ok = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(ok).toHaveLength(10);
    expect(refused).toHaveLength(40);
    for (const r of refused) expect(r.reason).toMatchObject({ statusCode: 429, code: 'QUOTA_EXCEEDED' });
    const { wallet: w, rows, sum } = await ledgerOf(userId);
    expect(w.balance).toBe(0);
    expect(sum).toBe(w.balance);
    expect(rows.filter((r) => r.kind === 'USAGE')).toHaveLength(10);
    const open = await t.platform.db.select().from(walletReservations).where(eq(walletReservations.walletId, w.id));
    expect(open).toHaveLength(10);
  });

  it('parallel settles, releases and credits keep balance = sum of the ledger', async () => {
    const userId = await newUser();
    const ids = Array.from({ length: 20 }, rid);
    await Promise.all(ids.map((requestId) => wallet().reserve({ userId, tokens: 40_000, requestId })));
    await Promise.all([
      ...ids.slice(0, 10).map((requestId, i) => wallet().settle({ requestId, actualTokens: 10_000 * i })),
      ...ids.slice(10).map((requestId) => wallet().release({ requestId })),
      ...Array.from({ length: 5 }, (_, i) => wallet().credit({ userId, kind: 'PROMO', amount: 1000, idempotencyKey: `promo:${userId}:${i}` })),
    ]);
    const { wallet: w, sum } = await ledgerOf(userId);
    const charged = Array.from({ length: 10 }, (_, i) => 10_000 * i).reduce((a, b) => a + b, 0);
    expect(w.balance).toBe(SIGNUP_GRANT - charged + 5000);
    expect(sum).toBe(w.balance);
  });
});

describe('crash sweeper', () => {
  it('leaves reservations alone while their lease runs, then settles on the last reported usage or refunds in full', async () => {
    // Reservations other tests left open expire first, so this test sees only its own.
    t.clock.advance(60 * 60_000);
    await wallet().sweepExpired(10_000);
    const userId = await newUser();
    const silent = rid();
    const reported = rid();
    const extended = rid();
    // Fifteen-minute leases of their own (the way jobs reserve), so no heartbeat is involved.
    const leaseSeconds = 15 * 60;
    await wallet().reserve({ userId, tokens: 100_000, requestId: silent, leaseSeconds });
    await wallet().reserve({ userId, tokens: 100_000, requestId: reported, leaseSeconds });
    await wallet().reserve({ userId, tokens: 100_000, requestId: extended, leaseSeconds });
    expect(await wallet().markInFlight({ requestId: reported, usedTokens: 30_000 })).toBe(true);

    t.clock.advance(10 * 60_000);
    expect(await wallet().sweepExpired()).toEqual({ settled: 0, released: 0 });
    expect(await wallet().markInFlight({ requestId: extended, leaseSeconds: 3600 })).toBe(true);

    t.clock.advance(20 * 60_000);
    expect(await wallet().sweepExpired()).toEqual({ settled: 1, released: 1 });
    expect(await wallet().reservation(silent)).toMatchObject({ status: 'RELEASED', reason: expect.stringContaining('interrupted') });
    expect(await wallet().reservation(reported)).toMatchObject({ status: 'SETTLED', chargedTokens: 30_000 });
    expect(await wallet().reservation(extended)).toMatchObject({ status: 'IN_FLIGHT' });
    expect((await ledgerOf(userId)).wallet.balance).toBe(SIGNUP_GRANT - 30_000 - 100_000);

    // A second sweep finds nothing; closed reservations cannot be marked in flight again.
    expect(await wallet().sweepExpired()).toEqual({ settled: 0, released: 0 });
    expect(await wallet().markInFlight({ requestId: silent })).toBe(false);
  });

  it('a live process renews its short leases by heartbeat; once it stops, its reservations are swept within the lease', async () => {
    t.clock.advance(60 * 60_000);
    await wallet().sweepExpired(10_000);
    // A second process on the same database, with a 3-second lease renewed every second.
    const other = createWalletService({ db: t.platform.db, clock: t.clock, heldLeaseSeconds: 3 });
    const userId = await newUser();
    const held = rid();
    const answered = rid();
    await other.reserve({ userId, tokens: 100_000, requestId: held });
    await other.reserve({ userId, tokens: 100_000, requestId: answered });
    await other.markInFlight({ requestId: answered, usedTokens: 40_000 });

    t.clock.advance(2_000);
    const renewedFrom = (await wallet().reservation(held))!.leaseUntil.getTime();
    await until(async () => (await wallet().reservation(held))!.leaseUntil.getTime() > renewedFrom);
    t.clock.advance(2_000); // past the first lease, inside the renewed one
    expect(await wallet().sweepExpired()).toEqual({ settled: 0, released: 0 });

    other.stop(); // the process dies: no more heartbeats
    t.clock.advance(3_001);
    expect(await wallet().sweepExpired()).toEqual({ settled: 1, released: 1 });
    expect(await wallet().reservation(held)).toMatchObject({ status: 'RELEASED' });
    expect(await wallet().reservation(answered)).toMatchObject({ status: 'SETTLED', chargedTokens: 40_000 });
    expect((await ledgerOf(userId)).wallet.balance).toBe(SIGNUP_GRANT - 40_000);
  });
});

async function until(check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
