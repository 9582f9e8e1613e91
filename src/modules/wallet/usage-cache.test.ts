import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditWriterFor, CLI_ACTOR } from '../audit/service.js';
import { DAY_MS, ManualClock, startOfUtcDay, startOfUtcMonth } from '../../platform/clock/clock.js';
import { startFakeOpenAi, type FakeUpstream } from '../../../test/helpers/fake-upstreams.js';
import { providerEnv, setPlan } from '../../../test/helpers/gateway.js';
import { twoInstances, type SharedDatabase } from '../../../test/helpers/shared-database.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { createUsageCache } from './usage-cache.js';
import { usageSince, type UsageWindows } from './usage-windows.js';

const USER = { ownerType: 'USER', ownerId: 'u1' };

/** A loader that counts its reads and answers `requests` = the number of the read. */
function counting() {
  let reads = 0;
  const gates: Array<() => void> = [];
  return {
    get reads() {
      return reads;
    },
    load: async (): Promise<UsageWindows<'today'>> => ({ today: { tokensSpent: 0, requests: ++reads } }),
    /** A read that answers only when `open()` is called. */
    held(): { load: () => Promise<UsageWindows<'today'>>; open: () => void } {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      gates.push(release);
      return { load: async () => (await gate, { today: { tokensSpent: 0, requests: ++reads } }), open: () => release() };
    },
  };
}

describe('the usage cache', () => {
  const day = new Date('2026-03-01T00:00:00Z');

  it('answers from memory for 2 s, then reads again', async () => {
    const clock = new ManualClock(new Date('2026-03-01T10:00:00Z'));
    const cache = createUsageCache({ now: () => clock.now().getTime() });
    const source = counting();
    expect((await cache.get(USER, { today: day }, source.load)).today.requests).toBe(1);
    clock.advance(1_999);
    expect((await cache.get(USER, { today: day }, source.load)).today.requests).toBe(1);
    clock.advance(1);
    expect((await cache.get(USER, { today: day }, source.load)).today.requests).toBe(2);
  });

  it('keys the figures by their windows: a new day is a miss, and each owner has its own', async () => {
    const clock = new ManualClock(new Date('2026-03-01T23:59:59Z'));
    const cache = createUsageCache({ now: () => clock.now().getTime() });
    const source = counting();
    await cache.get(USER, { today: day }, source.load);
    await cache.get(USER, { today: new Date(day.getTime() + DAY_MS) }, source.load);
    await cache.get({ ownerType: 'WORKSPACE', ownerId: 'u1' }, { today: day }, source.load);
    expect(source.reads).toBe(3);
    await cache.get(USER, { today: day }, source.load);
    expect(source.reads).toBe(3);
  });

  it('drops an owner on a write, and keeps nothing a read in flight saw before it', async () => {
    const clock = new ManualClock();
    const cache = createUsageCache({ now: () => clock.now().getTime() });
    const source = counting();
    await cache.get(USER, { today: day }, source.load);
    cache.changed(USER);
    expect((await cache.get(USER, { today: day }, source.load)).today.requests).toBe(2);

    cache.changed(USER);
    const slow = source.held();
    const inFlight = cache.get(USER, { today: day }, slow.load);
    cache.changed(USER); // a write commits while the read is out
    slow.open();
    expect((await inFlight).today.requests).toBe(3);
    expect((await cache.get(USER, { today: day }, source.load)).today.requests).toBe(4);
    expect((await cache.get(USER, { today: day }, source.load)).today.requests).toBe(4);
  });

  it('shares one read between concurrent misses', async () => {
    const cache = createUsageCache({ now: () => 0 });
    const slow = counting().held();
    const both = Promise.all([cache.get(USER, { today: day }, slow.load), cache.get(USER, { today: day }, slow.load)]);
    slow.open();
    const [a, b] = await both;
    expect(a).toBe(b);
    expect(a.today.requests).toBe(1);
  });

  it('keeps nothing for one TTL after a write in a caller’s transaction (it may commit later)', async () => {
    const clock = new ManualClock();
    const cache = createUsageCache({ now: () => clock.now().getTime() });
    const source = counting();
    await cache.get(USER, { today: day }, source.load);
    cache.changing(USER);
    await cache.get(USER, { today: day }, source.load);
    await cache.get(USER, { today: day }, source.load);
    expect(source.reads).toBe(3);
    clock.advance(2_000);
    await cache.get(USER, { today: day }, source.load);
    await cache.get(USER, { today: day }, source.load);
    expect(source.reads).toBe(4);
  });

  it('keeps at most maxOwners owners, dropping the oldest', async () => {
    const cache = createUsageCache({ now: () => 0, maxOwners: 2 });
    const source = counting();
    for (const ownerId of ['a', 'b', 'c']) await cache.get({ ownerType: 'USER', ownerId }, { today: day }, source.load);
    expect(cache.size).toBe(2);
    await cache.get({ ownerType: 'USER', ownerId: 'c' }, { today: day }, source.load);
    expect(source.reads).toBe(3);
    await cache.get({ ownerType: 'USER', ownerId: 'a' }, { today: day }, source.load);
    expect(source.reads).toBe(4);
  });
});

describe('usage figures on one instance', () => {
  let t: TestApp;
  let fake: FakeUpstream;
  beforeAll(async () => {
    fake = await startFakeOpenAi();
    t = await createTestApp({ env: providerEnv('OPENAI', fake.baseUrl, ['sk-usage-cache-1']) });
  });
  afterAll(async () => {
    await t?.close();
    await fake?.close();
  });

  const statements = () => t.platform.database.statementCounts().statements;

  it('are read again after every kind of write to the wallet', async () => {
    const { user } = await signUp(t.app);
    const owner = { userId: user.id };
    const wallet = t.services.wallet;
    const windows = () => ({ today: startOfUtcDay(t.clock.now()), month: startOfUtcMonth(t.clock.now()) });
    let warm = await wallet.usageSince(owner, windows());
    /** The write dropped the figures: the next read is a new one, equal to the table's, and kept. */
    const dropped = async (what: string) => {
      await wallet.backgroundIdle(); // a low-balance warning goes out in the background
      const before = statements();
      const read = await wallet.usageSince(owner, windows());
      expect(statements() - before, what).toBe(1);
      expect(read, what).not.toBe(warm);
      expect(read, what).toEqual(await usageSince(t.platform.db, owner, windows()));
      expect(await wallet.usageSince(owner, windows()), what).toBe(read);
      warm = read;
      return read;
    };
    const [r1, r2, r3, r4, r5] = [1, 2, 3, 4, 5].map(() => `req_${randomUUID()}`) as [string, string, string, string, string];
    const leaseSeconds = 600; // no heartbeat: nothing else talks to the database while statements are counted

    await wallet.reserve({ ...owner, tokens: 100_000, requestId: r1, leaseSeconds });
    expect((await dropped('reserve')).today).toEqual({ tokensSpent: 100_000, requests: 1 });
    await wallet.settle({ requestId: r1, actualTokens: 40_000 });
    expect((await dropped('settle within the reservation')).today.tokensSpent).toBe(40_000);
    await wallet.reserve({ ...owner, tokens: 100_000, requestId: r2, leaseSeconds });
    await dropped('reserve');
    await wallet.settle({ requestId: r2, actualTokens: 150_000 });
    expect((await dropped('settle above the reservation')).today.tokensSpent).toBe(190_000);
    await wallet.reserve({ ...owner, tokens: 10_000, requestId: r3, leaseSeconds });
    await dropped('reserve');
    await wallet.grow({ requestId: r3, tokens: 30_000 });
    expect((await dropped('grow')).today.tokensSpent).toBe(220_000);
    await wallet.release({ requestId: r3 });
    expect((await dropped('release')).today).toEqual({ tokensSpent: 190_000, requests: 2 });

    // An overrun the balance cannot cover leaves a debt; the next credit collects it (a USAGE row).
    const { tokens: balance } = await wallet.balance(owner);
    await wallet.reserve({ ...owner, tokens: balance, requestId: r4, leaseSeconds });
    await dropped('reserve');
    await wallet.settle({ requestId: r4, actualTokens: balance + 10_000 });
    await dropped('settle into debt');
    await wallet.credit({ ...owner, kind: 'GRANT', amount: 50_000, idempotencyKey: `usage-cache:${randomUUID()}` });
    expect((await dropped('credit collecting the debt')).today.tokensSpent).toBe(190_000 + balance + 10_000);
    await wallet.debit({ ...owner, kind: 'USAGE', amount: 5_000, idempotencyKey: `usage-cache:${randomUUID()}` });
    await dropped('debit');
    await wallet.supportGrant(
      { userId: user.id, tokens: 1_000, reason: 'goodwill', idempotencyKey: randomUUID() },
      auditWriterFor(t.services.audit, CLI_ACTOR),
    );
    await dropped('support grant');
    const paymentId = randomUUID();
    await wallet.credit({ ...owner, kind: 'PURCHASE', amount: 2_000, idempotencyKey: `usage-cache:${paymentId}`, paymentId });
    await dropped('purchase');
    await wallet.reversePayment({ paymentId, idempotencyKey: `reversal:${paymentId}`, note: 'refunded' });
    await dropped('payment reversal');

    // A reservation whose lease ran out, closed by the sweeper (within the TTL: the clock moves 1 ms).
    await wallet.reserve({ ...owner, tokens: 7_000, requestId: r5, leaseSeconds: 0 });
    await dropped('reserve');
    t.clock.advance(1);
    await wallet.sweepExpired();
    expect((await wallet.reservation(r5))!.status).toBe('RELEASED');
    await dropped('sweep');

    // Inside a caller's transaction: dropped at once, and not kept while that transaction may still be open.
    const r6 = `req_${randomUUID()}`;
    await t.platform.db.transaction((tx) => wallet.reserve({ ...owner, tokens: 3_000, requestId: r6, leaseSeconds }, tx));
    const read = await wallet.usageSince(owner, windows());
    expect(read).toEqual(await usageSince(t.platform.db, owner, windows()));
    expect(await wallet.usageSince(owner, windows())).not.toBe(read);
    t.clock.advance(2_000);
    await wallet.release({ requestId: r6 });
    warm = await wallet.usageSince(owner, windows());
    expect(await wallet.usageSince(owner, windows())).toBe(warm);
  });

  it('GET /v1/users/me makes no statement warm, and shows a generation at once (local/text)', async () => {
    const { accessToken } = await signUp(t.app);
    const me = () => t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(accessToken) });
    const usage = async () => json(await me()).activeSubscription.usage;
    const before = await usage();
    const count = statements();
    expect((await me()).statusCode).toBe(200);
    expect(statements() - count).toBe(0);

    const text = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/text',
      headers: bearer(accessToken),
      payload: { model: 'local/text', messages: [{ role: 'user', content: 'hello' }], maxTokens: 16 },
    });
    expect(text.statusCode, text.body).toBe(200);
    const after = await usage();
    expect(after.dailyRequestsUsed).toBe(before.dailyRequestsUsed + 1);
    expect(after.monthlyRequestsUsed).toBe(before.monthlyRequestsUsed + 1);
    expect(after.tokensUsed).toBe(before.tokensUsed + json(text).usage.creditsConsumed);
  });

  /** Starts a call the fake upstream holds until `open()`, and resolves `reserved` once its tokens are held. */
  async function heldCall(accessToken: string, answer: 'ok' | 'refused') {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const calls = fake.calls().length;
    fake.decide(async (request) => {
      if (request.method === 'GET') return { kind: 'ok' };
      await gate;
      return answer === 'ok' ? { kind: 'ok', text: 'Short.' } : { kind: 'error', status: 400 };
    });
    const response = t.app.inject({
      method: 'POST',
      url: '/v1/ai/text',
      headers: bearer(accessToken),
      payload: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], maxTokens: 64 },
    });
    while (fake.calls().length === calls) await new Promise((resolve) => setTimeout(resolve, 2));
    return { response, open };
  }

  it('shows a call while it runs, then its charge (one-statement settlement) or its refund at once', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setPlan(t, user.id, 'starter');
    const usage = async () => json(await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(accessToken) })).activeSubscription.usage;
    const idle = await usage();

    const charged = await heldCall(accessToken, 'ok');
    const running = await usage();
    expect(running.dailyRequestsUsed).toBe(idle.dailyRequestsUsed + 1);
    expect(running.tokensUsed).toBeGreaterThan(idle.tokensUsed);
    expect(await usage()).toEqual(running);
    charged.open();
    const answer = await charged.response;
    expect(answer.statusCode, answer.body).toBe(200);
    const settled = await usage();
    expect(settled.tokensUsed).toBe(idle.tokensUsed + json(answer).usage.creditsConsumed);
    expect(settled.tokensUsed).toBeLessThan(running.tokensUsed);

    const refused = await heldCall(accessToken, 'refused');
    expect((await usage()).dailyRequestsUsed).toBe(settled.dailyRequestsUsed + 1);
    refused.open();
    expect((await refused.response).statusCode).toBe(400);
    expect(await usage()).toEqual(settled);
  });

  it('reads again at a new UTC day, although the figures are younger than the TTL', async () => {
    t.clock.set(new Date(startOfUtcDay(t.clock.now()).getTime() + DAY_MS - 1_000));
    const { accessToken } = await signUp(t.app);
    const usage = async () => json(await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(accessToken) })).activeSubscription.usage;
    const text = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/text',
      headers: bearer(accessToken),
      payload: { model: 'local/text', messages: [{ role: 'user', content: 'late' }], maxTokens: 8 },
    });
    expect(text.statusCode, text.body).toBe(200);
    const lastDay = await usage();
    expect(lastDay.dailyRequestsUsed).toBe(1);
    const monthBefore = startOfUtcMonth(t.clock.now()).getTime();

    t.clock.advance(1_500);
    const nextDay = await usage();
    expect(nextDay.dailyRequestsUsed).toBe(0);
    expect(nextDay.monthlyRequestsUsed).toBe(startOfUtcMonth(t.clock.now()).getTime() === monthBefore ? 1 : 0);
    expect(nextDay.tokensUsed).toBe(lastDay.tokensUsed); // the cycle goes on
  });
});

type BuiltApp = Awaited<ReturnType<SharedDatabase['instance']>>;

describe('usage figures across instances', () => {
  const instances = twoInstances('usage-cache');

  it('a generation on A shows on B once the 2 s TTL has passed (no notification per metered call)', async () => {
    const { a, b, shared } = instances;
    const { accessToken } = await signUp(a.app);
    const usage = async (on: BuiltApp) =>
      json(await on.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(accessToken) })).activeSubscription.usage;
    const before = await usage(b);
    const text = await a.app.inject({
      method: 'POST',
      url: '/v1/ai/text',
      headers: bearer(accessToken),
      payload: { model: 'local/text', messages: [{ role: 'user', content: 'hi' }], maxTokens: 8 },
    });
    expect(text.statusCode, text.body).toBe(200);
    expect((await usage(a)).dailyRequestsUsed).toBe(before.dailyRequestsUsed + 1);
    // B answers from its cache until the TTL passes: the bound on how stale another instance's view is.
    expect(await usage(b)).toEqual(before);
    shared.clock.advance(2_000);
    const after = await usage(b);
    expect(after.dailyRequestsUsed).toBe(before.dailyRequestsUsed + 1);
    expect(after.tokensUsed).toBe(before.tokensUsed + json(text).usage.creditsConsumed);
  });
});
