import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { files } from '../src/db/schema/files.js';
import { domainEvents } from '../src/db/schema/platform.js';
import { usageRecords } from '../src/db/schema/usage.js';
import { startFakeOpenAi, type FakeUpstream } from './helpers/fake-upstreams.js';
import { createApiKey, ledgerOf, providerEnv, setPlan, walletState } from './helpers/gateway.js';
import { bearer, createTestApp, json, signUp, type TestApp } from './helpers/test-app.js';

/**
 * The hot path of a metered call, counted in statements sent to the database (every round trip: BEGIN and COMMIT
 * included). Warm caches (key, subscription, plan, model, upstream accounts) leave one statement to reserve and one to
 * settle with the usage record, the history item, its event and the Idempotency-Key's completion.
 */
let fake: FakeUpstream;
let t: TestApp;

beforeAll(async () => {
  fake = await startFakeOpenAi(() => ({ kind: 'ok', text: 'A short answer.' }));
  t = await createTestApp({ env: providerEnv('OPENAI', fake.baseUrl, ['sk-round-trips-1']) });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

async function statementsOf(call: () => Promise<{ statusCode: number; body: string }>): Promise<number> {
  // The pg-boss poller is off in tests and upstream spend is flushed on a timer: nothing else talks to the database.
  const before = t.platform.database.statementCounts();
  const response = await call();
  expect(response.statusCode, response.body).toBe(200);
  const after = t.platform.database.statementCounts();
  // A lone call's statements each go by themselves: as many round trips as statements.
  expect(after.roundTrips - before.roundTrips).toBe(after.statements - before.statements);
  return after.statements - before.statements;
}

const payload = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Say hi.' }], maxTokens: 32 };

describe('database round trips of POST /v1/ai/text', () => {
  it('two with an access token and with an API key once caches are warm: reserve, then settle', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setPlan(t, user.id, 'starter');
    const { key } = await createApiKey(t, accessToken, ['ai:text']);
    const viaToken = () => t.app.inject({ method: 'POST', url: '/v1/ai/text', headers: bearer(accessToken), payload });
    const viaKey = () => t.app.inject({ method: 'POST', url: '/v1/ai/text', headers: bearer(key), payload });
    await statementsOf(viaToken);
    await statementsOf(viaKey);

    expect(await statementsOf(viaToken)).toBe(2);
    expect(await statementsOf(viaKey)).toBe(2);

    // The combined statement wrote everything the general path writes: balance = ledger, a usage record and a
    // history item per call.
    const wallet = await walletState(t, user.id);
    expect(wallet.balance).toBe(wallet.ledgerSum);
    const records = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, user.id));
    expect(records.map((r) => r.status)).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS']);
    for (const record of records) {
      const ledger = await ledgerOf(t, record.requestId);
      expect(-ledger.reduce((sum, row) => sum + row.amount, 0)).toBe(record.tokensConsumed);
    }
    const history = json(await t.app.inject({ method: 'GET', url: '/v1/library/generations?kind=TEXT&limit=50', headers: bearer(accessToken) }));
    expect(history.items).toHaveLength(4);
    const events = await t.platform.db
      .select()
      .from(domainEvents)
      .where(and(eq(domainEvents.userId, user.id), eq(domainEvents.name, 'generation.persisted')));
    expect(events).toHaveLength(4);
  });

  it('one more with an Idempotency-Key (the key is taken first), and its replay settles nothing', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setPlan(t, user.id, 'starter');
    const call = (idempotencyKey: string) => () =>
      t.app.inject({ method: 'POST', url: '/v1/ai/text', headers: { ...bearer(accessToken), 'idempotency-key': idempotencyKey }, payload });
    await statementsOf(call('warm-up'));
    expect(await statementsOf(call('round-trips-1'))).toBe(3);
    const before = await walletState(t, user.id);
    const replay = await t.app.inject({ method: 'POST', url: '/v1/ai/text', headers: { ...bearer(accessToken), 'idempotency-key': 'round-trips-1' }, payload });
    expect(replay.statusCode).toBe(200);
    expect((await walletState(t, user.id)).balance).toBe(before.balance);
  });

  it('a call that ran over its reservation takes the general path in one transaction, charged once with its records', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setPlan(t, user.id, 'starter');
    fake.decide(() => ({ kind: 'ok', text: 'A long answer.', usage: { inputTokens: 10, outputTokens: 50_000 } }));
    try {
      const response = await t.app.inject({ method: 'POST', url: '/v1/ai/text', headers: bearer(accessToken), payload });
      expect(response.statusCode, response.body).toBe(200);
      const { requestId, usage } = json(response);
      const ledger = await ledgerOf(t, requestId);
      expect(ledger.map((row) => row.kind)).toEqual(['USAGE', 'USAGE']);
      expect(-ledger.reduce((sum, row) => sum + row.amount, 0)).toBe(usage.creditsConsumed);
      const [record] = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, requestId));
      expect(record!.tokensConsumed).toBe(usage.creditsConsumed);
      const wallet = await walletState(t, user.id);
      expect(wallet.balance).toBe(wallet.ledgerSum);
    } finally {
      fake.decide(() => ({ kind: 'ok', text: 'A short answer.' }));
    }
  });
});

describe('database round trips of GET /v1/users/me', () => {
  it('none once caches are warm: the account, session, subscription and usage windows come from caches', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setPlan(t, user.id, 'starter');
    const me = () => t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(accessToken) });
    await statementsOf(me);
    expect(await statementsOf(me)).toBe(0);
    // The usage windows are dropped by this instance's settlement: a generation counts at once.
    const before = json(await me()).activeSubscription.usage;
    expect((await t.app.inject({ method: 'POST', url: '/v1/ai/text', headers: bearer(accessToken), payload })).statusCode).toBe(200);
    const after = json(await me()).activeSubscription.usage;
    expect(after.dailyRequestsUsed).toBe(before.dailyRequestsUsed + 1);
    expect(after.tokensUsed).toBeGreaterThan(before.tokensUsed);
  });

  it('shows the megabytes of the files the user keeps, from a cache dropped when a file is stored', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setPlan(t, user.id, 'starter');
    const me = () => t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(accessToken) });
    expect(json(await me()).activeSubscription.usage.storageMbUsed).toBe(0);
    const image = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/image',
      headers: bearer(accessToken),
      payload: { model: 'local/image', prompt: 'a harbour', count: 2, width: 64, height: 64 },
    });
    expect(image.statusCode, image.body).toBe(200);
    const stored = await t.platform.db.select({ size: files.size }).from(files).where(eq(files.ownerId, user.id));
    expect(stored).toHaveLength(2);
    const bytes = stored.reduce((sum, f) => sum + f.size, 0);
    expect(json(await me()).activeSubscription.usage.storageMbUsed).toBe(Math.round((bytes / (1024 * 1024)) * 1e6) / 1e6);
    // Warm again: the figure comes from the cache.
    expect(await statementsOf(me)).toBe(0);
  });
});
