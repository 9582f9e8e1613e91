import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayIdempotency } from '../src/db/schema/gateway.js';
import { usageRecords } from '../src/db/schema/usage.js';
import { walletReservations } from '../src/db/schema/wallet.js';
import { startFakeOpenAi, type Decide, type FakeUpstream } from './helpers/fake-upstreams.js';
import { within } from './helpers/eventually.js';
import { ledgerOf, parseSse, providerEnv, walletState } from './helpers/gateway.js';
import { bearer, createTestApp, json, signUp, type TestApp } from './helpers/test-app.js';

/**
 * A metered call whose database connection is lost while it settles (SQLSTATE 08006 raised by a trigger, on both
 * databases) or whose instance dies mid-call: the answer is a retryable 503 or an honest stream `error` event, the
 * money stays exact, and a retry with the same Idempotency-Key gets a definite outcome at once. A real terminated
 * backend (PostgreSQL only) is in test/connection-loss-pg.test.ts.
 */
let fake: FakeUpstream;
let t: TestApp;
let decide: Decide = () => ({ kind: 'ok' });
const model = 'openai/gpt-4o-mini';

beforeAll(async () => {
  fake = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : decide(request)));
  t = await createTestApp({ env: providerEnv('OPENAI', fake.baseUrl, ['sk-connection-loss-1']) });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

/** Every charge of a successful answer loses its connection (`once`: only the first one), until the test ends. */
async function loseSettlementConnection(run: () => Promise<void>, options: { once?: boolean } = {}): Promise<void> {
  const when = options.once ? `nextval('lost_settlement_attempt') = 1` : 'true';
  await t.platform.database.exec(`
    create sequence lost_settlement_attempt;
    create function lose_settlement() returns trigger language plpgsql as $$
    begin
      if ${when} then raise exception 'connection to the database was lost (test)' using errcode = '08006'; end if;
      return new;
    end $$;
    create trigger lose_settlement before insert on usage_records
      for each row when (new.status = 'SUCCESS') execute function lose_settlement();`);
  try {
    await run();
  } finally {
    await t.platform.database.exec('drop trigger lose_settlement on usage_records; drop function lose_settlement(); drop sequence lost_settlement_attempt;');
  }
}

const ask = (token: string, payload: Record<string, unknown>, key?: string) =>
  t.app.inject({ method: 'POST', url: '/v1/ai/text', headers: { ...bearer(token), ...(key ? { 'idempotency-key': key } : {}) }, payload });
const body = { model, messages: [{ role: 'user', content: 'Tell me about lighthouses' }] };
const entryOf = async (userId: string, key: string) =>
  (
    await t.platform.db
      .select()
      .from(gatewayIdempotency)
      .where(and(eq(gatewayIdempotency.userId, userId), eq(gatewayIdempotency.key, key)))
  )[0];
const reservationsOf = (userId: string) =>
  t.platform.db
    .select()
    .from(walletReservations)
    .innerJoin(usageRecords, eq(usageRecords.requestId, walletReservations.requestId))
    .where(eq(usageRecords.userId, userId));
/** Tokens the ledger took from the user's wallet for `requestId` (usage minus refunds). */
const chargedFor = async (requestId: string) => (await ledgerOf(t, requestId)).reduce((sum, row) => sum - row.amount, 0);

describe('a call whose settlement loses its database connection', () => {
  it('answers a retryable 503 with Retry-After, refunds it at once, and frees its key: the retry is charged once', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    let failed!: Awaited<ReturnType<typeof ask>>;
    await loseSettlementConnection(async () => {
      failed = await ask(accessToken, body, 'lost-1');
    });
    expect(failed.statusCode).toBe(503);
    expect(failed.headers['retry-after']).toBe('2');
    expect(json(failed).error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', message: expect.stringContaining('Retry'), details: { retryable: true } });
    expect(failed.body).not.toMatch(/08006|usage_records|trigger/);
    // Not delivered and not left open: the failed request gave its reservation up (refunded) and freed its key.
    expect(await entryOf(user.id, 'lost-1')).toBeUndefined();
    const [lost] = await reservationsOf(user.id);
    expect(lost!.wallet_reservations.status).toBe('RELEASED');
    expect(await walletState(t, user.id)).toEqual(before);

    const retry = await ask(accessToken, body, 'lost-1');
    expect(retry.statusCode).toBe(200);
    expect(await chargedFor(json(retry).requestId)).toBe(json(retry).usage.creditsConsumed);
    const after = await walletState(t, user.id);
    expect(before.balance - after.balance).toBe(json(retry).usage.creditsConsumed);
    expect(after.ledgerSum).toBe(after.balance);
  });

  it('settles again on a new connection when the loss was brief: answered, charged once, one usage record', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    let answered!: Awaited<ReturnType<typeof ask>>;
    await loseSettlementConnection(
      async () => {
        answered = await ask(accessToken, body);
      },
      { once: true },
    );
    expect(answered.statusCode).toBe(200);
    const { requestId, usage } = json(answered);
    expect(await t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, requestId))).toMatchObject([
      { status: 'SUCCESS', tokensConsumed: usage.creditsConsumed },
    ]);
    expect(before.balance - (await walletState(t, user.id)).balance).toBe(usage.creditsConsumed);
  });

  it('a stream says the most it will be charged, and the ledger takes exactly that; its key answers as charged', async () => {
    decide = () => ({ kind: 'ok', text: 'alpha beta gamma delta epsilon zeta eta theta', usage: { inputTokens: 40, outputTokens: 8 } });
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    let streamed!: Awaited<ReturnType<typeof ask>>;
    await loseSettlementConnection(async () => {
      streamed = await ask(accessToken, { ...body, stream: true }, 'lost-stream');
    });
    const events = parseSse(streamed.body);
    expect(events.filter((e) => e.type === 'text').length).toBeGreaterThan(0);
    const errorEvent = events.at(-1)!;
    expect(errorEvent).toMatchObject({ type: 'error', error: { code: 'SERVICE_UNAVAILABLE', chargedTokens: null, chargeAtMostTokens: expect.any(Number) } });
    const atMost = errorEvent.error.chargeAtMostTokens as number;
    expect(atMost).toBeGreaterThan(0);
    expect(errorEvent.error.message).toContain(`at most ${atMost} tokens`);
    expect(events.some((e) => e.type === 'finish')).toBe(false);

    // The request gives its reservation up once the stream has ended: settled on the progress it had recorded.
    const requestId = streamed.headers['x-ai-request-id'] as string;
    await within(async () => (await t.services.wallet.reservation(requestId))?.status === 'SETTLED', 10_000);
    expect(await t.services.wallet.reservation(requestId)).toMatchObject({ chargedTokens: atMost });
    expect(await chargedFor(requestId)).toBe(atMost);
    const after = await walletState(t, user.id);
    expect(before.balance - after.balance).toBe(atMost);
    expect(after.ledgerSum).toBe(after.balance);
    expect(await t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, requestId))).toMatchObject([
      { status: 'PARTIAL', tokensConsumed: atMost },
    ]);
    const retry = await ask(accessToken, { ...body, stream: true }, 'lost-stream');
    expect(retry.statusCode).toBe(409);
    expect(json(retry).error.message).toMatch(/was charged/);
    decide = () => ({ kind: 'ok' });
  });
});

describe('a retry of a key whose request died (its process stopped renewing the lease)', () => {
  it('a stream cut mid-way: the retry closes the lapsed reservation on its progress and answers as charged, not "still running"', async () => {
    let resume!: () => void;
    const paused = new Promise<void>((resolve) => (resume = resolve));
    decide = () => ({ kind: 'ok', text: 'one two three four five six seven eight', pauseAfter: { chunks: 3, until: paused } });
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const dying = ask(accessToken, { ...body, stream: true }, 'died-stream');
    const progressed = async () => (await t.platform.db.select().from(walletReservations).where(eq(walletReservations.status, 'IN_FLIGHT')))[0];
    await within(async () => (await progressed())?.usedTokens != null, 10_000);
    const reservation = (await progressed())!;

    // The process dies: its heartbeat stops, and 9 s later the lease has lapsed.
    t.services.wallet.stop();
    t.clock.advance(10_000);
    const retry = await ask(accessToken, { ...body, stream: true }, 'died-stream');
    expect(retry.statusCode).toBe(409);
    expect(json(retry).error).toMatchObject({ message: expect.stringMatching(/was charged/), details: { requestId: reservation.requestId } });
    expect(await t.services.wallet.reservation(reservation.requestId)).toMatchObject({ status: 'SETTLED', chargedTokens: reservation.usedTokens });
    expect(before.balance - (await walletState(t, user.id)).balance).toBe(reservation.usedTokens);

    resume();
    await dying;
    decide = () => ({ kind: 'ok' });
    const after = await walletState(t, user.id);
    expect(after.ledgerSum).toBe(after.balance);
  });

  it('a call that never answered: the retry refunds the lapsed reservation, takes the key and is answered, charged once', async () => {
    let answer!: () => void;
    const held = new Promise<void>((resolve) => (answer = resolve));
    let calls = 0;
    decide = () => (++calls === 1 ? { kind: 'ok', waitFor: held } : { kind: 'ok' });
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const stalled = ask(accessToken, body, 'died-call');
    await within(async () => calls === 1, 10_000);
    const [first] = await t.platform.db.select().from(gatewayIdempotency).where(eq(gatewayIdempotency.userId, user.id));

    t.clock.advance(10_000); // the heartbeat was stopped above: the lease lapses
    const retry = await ask(accessToken, body, 'died-call');
    expect(retry.statusCode).toBe(200);
    expect(json(retry).requestId).not.toBe(first!.requestId);
    expect(await t.services.wallet.reservation(first!.requestId)).toMatchObject({ status: 'RELEASED' });

    // The stalled request wakes up: it is not delivered free, and it leaves the retry's key alone.
    answer();
    expect((await stalled).statusCode).not.toBe(200);
    expect(await entryOf(user.id, 'died-call')).toMatchObject({ requestId: json(retry).requestId, status: 'COMPLETED' });
    const after = await walletState(t, user.id);
    expect(before.balance - after.balance).toBe(json(retry).usage.creditsConsumed);
    expect(after.ledgerSum).toBe(after.balance);
    decide = () => ({ kind: 'ok' });
  });
});
