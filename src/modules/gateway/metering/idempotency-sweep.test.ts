import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { gatewayIdempotency } from '../../../db/schema/gateway.js';
import { jobs } from '../../../db/schema/jobs.js';
import { usageRecords } from '../../../db/schema/usage.js';
import { MINUTE_MS } from '../../../platform/clock/clock.js';
import { startFakeOpenAi, type FakeUpstream } from '../../../../test/helpers/fake-upstreams.js';
import { providerEnv, walletState } from '../../../../test/helpers/gateway.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../../test/helpers/test-app.js';

/**
 * An Idempotency-Key follows its request's reservation when the request cannot finish it: a request whose lease ran out
 * (its heartbeat stopped) is refunded by the sweeper and its key freed for one retry, and whatever the stalled request
 * does afterwards never touches the retry's key; a key whose reservation was settled without the sweeper knowing the
 * key (a job's, reserved by its runner) answers as charged. The real SIGKILL is in test/crash-settlement.test.ts.
 */
let t: TestApp;
let fake: FakeUpstream;
let posts = 0;
const gates: Array<{ open: () => void; opened: Promise<void> }> = [];
/** Adds a gate the upstream's next call waits for until the test opens it. */
const addGate = (): void => {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  gates.push({ open, opened });
};

beforeAll(async () => {
  // Upstream calls answer in order: the first waits for its gate and fails (400), the second waits for its own gate.
  fake = await startFakeOpenAi(async (request) => {
    if (request.method !== 'POST') return { kind: 'ok' };
    const n = ++posts;
    if (n === 1) {
      await gates[0]!.opened;
      return { kind: 'error', status: 400 };
    }
    return n === 2 ? { kind: 'ok', waitFor: gates[1]!.opened } : { kind: 'ok' };
  });
  t = await createTestApp({ env: providerEnv('OPENAI', fake.baseUrl, ['sk-idem-sweep-1']), startJobs: true });
  // No heartbeat renews leases and no timer sweeps: the lease runs out when the clock moves, and the test sweeps.
  t.services.wallet.stop();
});
afterAll(async () => {
  for (const g of gates) g.open();
  await t?.close();
  await fake?.close();
});

const textBody = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'One answer for one key' }] };
const ask = (token: string, key: string) =>
  t.app.inject({ method: 'POST', url: '/v1/ai/text', headers: { ...bearer(token), 'idempotency-key': key }, payload: textBody });
const entryOf = async (userId: string, key: string) =>
  (
    await t.platform.db
      .select()
      .from(gatewayIdempotency)
      .where(and(eq(gatewayIdempotency.userId, userId), eq(gatewayIdempotency.key, key)))
  )[0];
const until = async (done: () => boolean | Promise<boolean>, what: string) => {
  const started = Date.now();
  while (!(await done())) {
    if (Date.now() - started > 30_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

describe('an Idempotency-Key whose request outlived its reservation', () => {
  it('a stalled request that fails after the sweep refunded it cannot free the key its retry took: a third try is refused, one charge', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    addGate();
    addGate();
    const stalled = ask(accessToken, 'stall-1');
    await until(() => posts === 1, 'the first call to reach the upstream');

    // Its lease runs out: the sweeper refunds it and frees the key in the same transaction.
    t.clock.advance(2 * MINUTE_MS);
    expect(await t.services.wallet.sweepExpired()).toEqual({ settled: 0, released: 1 });
    expect(await entryOf(user.id, 'stall-1')).toBeUndefined();

    const retry = ask(accessToken, 'stall-1');
    await until(() => posts === 2, 'the retry to reach the upstream');
    const retryEntry = await entryOf(user.id, 'stall-1');
    expect(retryEntry?.status).toBe('IN_PROGRESS');

    // The stalled request wakes up and fails: it must not free the key the retry holds.
    gates[0]!.open();
    expect((await stalled).statusCode).not.toBe(200);
    expect(await entryOf(user.id, 'stall-1')).toMatchObject({ requestId: retryEntry!.requestId, status: 'IN_PROGRESS' });

    const third = await ask(accessToken, 'stall-1');
    expect(third.statusCode).toBe(409);
    expect(json(third).error.message).toMatch(/still running/);

    gates[1]!.open();
    const answered = await retry;
    expect(answered.statusCode).toBe(200);
    expect(json(answered).requestId).toBe(retryEntry!.requestId);
    expect(posts).toBe(2);

    const replay = await ask(accessToken, 'stall-1');
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(json(replay)).toEqual(json(answered));

    // Charged once: the retry's tokens, and nothing for the refunded request.
    const charged = await t.platform.db
      .select()
      .from(usageRecords)
      .where(and(eq(usageRecords.userId, user.id), eq(usageRecords.status, 'SUCCESS')));
    expect(charged.map((r) => r.requestId)).toEqual([retryEntry!.requestId]);
    const after = await walletState(t, user.id);
    expect(after.balance).toBe(before.balance - charged[0]!.tokensConsumed);
    expect(after.balance).toBe(after.ledgerSum);
  });

  it("a job and its key's answer commit together: when storing the answer fails nothing is queued or charged, and the retry queues once", async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const image = { model: 'local/image', prompt: 'a lighthouse', count: 1, width: 64, height: 64, async: true };
    const submit = () =>
      t.app.inject({ method: 'POST', url: '/v1/ai/image', headers: { ...bearer(accessToken), 'idempotency-key': 'job-once' }, payload: image });
    // Storing the answer on the key fails: the job's transaction fails with it.
    await t.platform.database.exec(`
      create function refuse_key_completion() returns trigger language plpgsql as $$
      begin raise exception 'completion refused by the test'; end $$;
      create trigger refuse_key_completion before update on gateway_idempotency
        for each row when (new.status = 'COMPLETED') execute function refuse_key_completion();`);
    try {
      expect((await submit()).statusCode).toBe(500);
    } finally {
      await t.platform.database.exec('drop trigger refuse_key_completion on gateway_idempotency; drop function refuse_key_completion();');
    }
    expect(await t.platform.db.$count(jobs, eq(jobs.userId, user.id))).toBe(0);
    expect(await entryOf(user.id, 'job-once')).toBeUndefined();

    const retry = await submit();
    expect(retry.statusCode).toBe(200);
    const [job] = await t.platform.db.select().from(jobs).where(eq(jobs.userId, user.id));
    expect(json(retry)).toEqual({ jobId: job!.id, status: 'QUEUED' });
    expect(await entryOf(user.id, 'job-once')).toMatchObject({ requestId: job!.id, status: 'COMPLETED', response: json(retry) });
    await until(
      async () => (await t.platform.db.select({ status: jobs.status }).from(jobs).where(eq(jobs.id, job!.id)))[0]!.status === 'SUCCEEDED',
      'the job to succeed',
    );
    const again = await submit();
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(json(again)).toEqual(json(retry));
    expect(await t.platform.db.$count(jobs, eq(jobs.userId, user.id))).toBe(1);
    const charged = await walletState(t, user.id);
    expect(charged.balance).toBeLessThan(before.balance);
    expect(charged.balance).toBe(charged.ledgerSum);
  });
});
