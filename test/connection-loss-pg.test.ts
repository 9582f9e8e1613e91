import { eq } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../src/db/schema/usage.js';
import { startFakeOpenAi, type FakeUpstream } from './helpers/fake-upstreams.js';
import { within } from './helpers/eventually.js';
import { providerEnv, walletState } from './helpers/gateway.js';
import { testDatabaseUrl } from './helpers/pg-admin.js';
import { bearer, createTestApp, json, signUp, type TestApp } from './helpers/test-app.js';

/**
 * PostgreSQL backends terminated (`pg_terminate_backend`, as an operator or a failover does) in the middle of a metered
 * call: the settlement is sent again on a new connection and answered (the group-commit runner re-sends a group the
 * server rolled back, and the metering's settle retry a settlement whose connection broke); a statement nothing re-sends (taking the
 * Idempotency-Key) is answered with a retryable 503 and Retry-After, and the key stays free. Money is exact either way. The same faults raised by a trigger, on
 * both databases, are in test/connection-loss.test.ts.
 */
const adminUrl = testDatabaseUrl();
let fake: FakeUpstream;
let t: TestApp;
let admin: pg.Client;

beforeAll(async () => {
  if (!adminUrl) return;
  fake = await startFakeOpenAi(() => ({ kind: 'ok' }));
  t = await createTestApp({ env: providerEnv('OPENAI', fake.baseUrl, ['sk-terminated-1']) });
  admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
});
afterAll(async () => {
  await admin?.end();
  await t?.close();
  await fake?.close();
});

const databaseName = () => new URL(t.platform.config.databaseUrl!).pathname.slice(1);

/**
 * The first insert into `table` (matching `when`) sleeps until its backend is terminated; the test terminates it
 * while `call` runs, and returns what `call` answered.
 */
async function terminateDuringInsert<T>(table: string, when: string, call: () => Promise<T>): Promise<T> {
  await t.platform.database.exec(`
    create sequence terminate_once;
    create function sleep_once() returns trigger language plpgsql as $$
    begin
      if nextval('terminate_once') = 1 then perform pg_sleep(30); end if;
      return new;
    end $$;
    create trigger sleep_once before insert on ${table} for each row when (${when}) execute function sleep_once();`);
  try {
    const answered = call();
    const sleeping = `select pid from pg_stat_activity where datname = $1 and wait_event = 'PgSleep'`;
    await within(async () => (await admin.query(sleeping, [databaseName()])).rowCount === 1, 15_000);
    const terminated = await admin.query(`select pg_terminate_backend(pid) as done from pg_stat_activity where datname = $1 and wait_event = 'PgSleep'`, [
      databaseName(),
    ]);
    expect(terminated.rows).toEqual([{ done: true }]);
    return await answered;
  } finally {
    await t.platform.database.exec(`drop trigger sleep_once on ${table}; drop function sleep_once(); drop sequence terminate_once;`);
  }
}

const body = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Tell me about lighthouses' }] };
const ask = (token: string, key?: string) =>
  t.app.inject({ method: 'POST', url: '/v1/ai/text', headers: { ...bearer(token), ...(key ? { 'idempotency-key': key } : {}) }, payload: body });

describe.runIf(adminUrl)('a PostgreSQL backend terminated mid-call', () => {
  it('during the settlement: settled again on a new connection and answered, charged once', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const answered = await terminateDuringInsert('usage_records', `new.status = 'SUCCESS'`, () => ask(accessToken, 'terminated-settle'));
    expect(answered.statusCode).toBe(200);
    const { requestId, usage } = json(answered);
    expect(await t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, requestId))).toMatchObject([
      { status: 'SUCCESS', tokensConsumed: usage.creditsConsumed },
    ]);
    const after = await walletState(t, user.id);
    expect(before.balance - after.balance).toBe(usage.creditsConsumed);
    expect(after.ledgerSum).toBe(after.balance);
    const replay = await ask(accessToken, 'terminated-settle');
    expect(replay.headers['idempotent-replayed']).toBe('true');
  });

  it('while taking its Idempotency-Key: a retryable 503 with Retry-After, nothing charged, and the key free for the retry', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const failed = await terminateDuringInsert('gateway_idempotency', 'true', () => ask(accessToken, 'terminated-key'));
    expect(failed.statusCode).toBe(503);
    expect(failed.headers['retry-after']).toBe('2');
    expect(json(failed).error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { retryable: true } });
    expect(failed.body).not.toMatch(/terminat|pg_|postgres/i);
    expect(await walletState(t, user.id)).toEqual(before);

    const retry = await ask(accessToken, 'terminated-key');
    expect(retry.statusCode).toBe(200);
    const after = await walletState(t, user.id);
    expect(before.balance - after.balance).toBe(json(retry).usage.creditsConsumed);
    expect(after.ledgerSum).toBe(after.balance);
  });
});
