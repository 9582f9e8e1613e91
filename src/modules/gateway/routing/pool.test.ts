import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { providerAccounts } from '../../../db/schema/gateway.js';
import { usageRecords } from '../../../db/schema/usage.js';
import { DAY_MS } from '../../../platform/clock/clock.js';
import { startFakeAnthropic } from '../providers/anthropic/anthropic.fake.js';
import { startFakeOpenAi, type FakeUpstream } from '../../../../test/helpers/fake-upstreams.js';
import { providerEnv, walletState } from '../../../../test/helpers/gateway.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../../test/helpers/test-app.js';

/**
 * The upstream-account pool end to end: two OpenAI accounts (A and B) behind a fake OpenAI server,
 * driven per key, through POST /v1/ai/text.
 */
const MODEL = 'openai/gpt-4o-mini';
const payload = { model: MODEL, messages: [{ role: 'user', content: 'Say hello' }], maxTokens: 50 };

let fake: FakeUpstream;
let t: TestApp;
let token: string;
let userId: string;

/** Per key: what the fake answers to completions (model listings always succeed). */
let behaviour: Record<string, Parameters<FakeUpstream['decide']>[0]> = {};
const ok = () => ({ kind: 'ok' as const });
const A = 'sk-alpha-0001';
const B = 'sk-bravo-0002';

beforeAll(async () => {
  fake = await startFakeOpenAi((request) => (request.method === 'GET' ? ok() : (behaviour[request.apiKey ?? ''] ?? ok)(request)));
  t = await createTestApp({ env: providerEnv('OPENAI', fake.baseUrl, [A, B], { OPENAI_TIMEOUT_MS: '400', OPENAI_MONTHLY_BUDGET_CENTS: '100' }) });
  const signed = await signUp(t.app);
  token = signed.accessToken;
  userId = signed.user.id;
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});
afterEach(async () => {
  behaviour = {};
  // Each test starts with healthy accounts and no spend.
  await t.platform.db
    .update(providerAccounts)
    .set({ status: 'ACTIVE', consecutiveFailures: 0, lastFailureAt: null, spendMicros: 0 })
    .where(eq(providerAccounts.providerSlug, 'openai'));
  await t.services.catalog.setProviderStatus('openai', 'ACTIVE');
  t.services.gateway.pool.refresh();
});

/** Runs one request and returns it with the upstream calls it made. */
async function call(body: unknown = payload) {
  const before = fake.calls().length;
  const response = await t.app.inject({ method: 'POST', url: '/v1/ai/text', headers: bearer(token), payload: body as object });
  return {
    response,
    keys: fake
      .calls()
      .slice(before)
      .map((c) => c.apiKey),
  };
}

const providerStatus = async (slug: string) => (await t.services.catalog.snapshot()).providersBySlug.get(slug)?.status;
const account = async (key: string) => (await t.services.gateway.pool.accounts('openai')).find((a) => a.keyHint === key.slice(-4))!;

describe('upstream accounts from the environment', () => {
  it('registers one account per key (secrets stay out of the database) and activates the provider', async () => {
    const accounts = await t.services.gateway.pool.accounts('openai');
    expect(accounts.map((a) => a.label).sort()).toEqual(['OPENAI_API_KEY #1', 'OPENAI_API_KEY #2']);
    expect(accounts.every((a) => a.configuredHere && a.baseUrl === fake.baseUrl && a.monthlyBudgetCents === 100)).toBe(true);
    const rows = await t.platform.db.select().from(providerAccounts);
    expect(JSON.stringify(rows)).not.toContain(A);
    expect(JSON.stringify(rows)).not.toContain(B);
    expect(accounts.map((a) => a.keyHint).sort()).toEqual(['0001', '0002']);
    expect(await providerStatus('openai')).toBe('ACTIVE');
    const listed = json(await t.app.inject({ method: 'GET', url: '/v1/models?provider=openai' }));
    expect(listed.items.map((m: { slug: string }) => m.slug)).toContain(MODEL);
  });
});

describe('failover', () => {
  it('fails over from an account answering 429 to the next one, trying each account once', async () => {
    behaviour[A] = () => ({ kind: 'error', status: 429 });
    const seen: Array<(string | null)[]> = [];
    for (let i = 0; i < 3; i++) {
      const { response, keys } = await call();
      expect(response.statusCode).toBe(200);
      expect(new Set(keys).size).toBe(keys.length);
      expect(keys.at(-1)).toBe(B);
      seen.push(keys);
    }
    // The account that failed went to the back of the queue: it was tried at most once.
    expect(seen.flat().filter((k) => k === A).length).toBeLessThanOrEqual(1);
    // Rotation puts A first in one of the first two requests, so the failover path ran.
    expect(seen.some((keys) => keys.join() === `${A},${B}`)).toBe(true);
    const failed = await account(A);
    expect(failed).toMatchObject({ status: 'FAILING', consecutiveFailures: 1, lastErrorCode: 'rate_limit_exceeded' });
    expect(await providerStatus('openai')).toBe('ACTIVE');
  });

  it.each([
    ['a 500', () => ({ kind: 'error' as const, status: 500 })],
    ['a 503', () => ({ kind: 'error' as const, status: 503 })],
    ['a rejected key (401)', () => ({ kind: 'error' as const, status: 401 })],
    ['a timeout', () => ({ kind: 'hang' as const })],
  ])('fails over on %s', async (_label, failure) => {
    behaviour = { [A]: ok, [B]: failure };
    // Rotation starts the two requests on different accounts, so one of them meets the failing account first.
    const runs = [await call(), await call()];
    for (const { response, keys } of runs) {
      expect(response.statusCode).toBe(200);
      expect(keys.at(-1)).toBe(A);
      expect(new Set(keys).size).toBe(keys.length);
    }
    expect(runs.some((run) => run.keys.join() === `${B},${A}`)).toBe(true);
  });

  it('answers 503 PROVIDER_UNAVAILABLE with details once every account failed, refunds, and marks the provider DEGRADED', async () => {
    behaviour = { [A]: () => ({ kind: 'error', status: 500 }), [B]: () => ({ kind: 'error', status: 429 }) };
    const before = await walletState(t, userId);
    const { response, keys } = await call();
    expect(response.statusCode).toBe(503);
    const { error } = json(response);
    expect(error.code).toBe('PROVIDER_UNAVAILABLE');
    expect(error.message).toMatch(/Retry/);
    expect(error.details).toEqual({
      upstream: { code: expect.any(String), status: expect.any(Number), message: expect.any(String) },
      accountsTried: 2,
      accountsOverBudget: 0,
    });
    expect([...keys].sort()).toEqual([A, B].sort());
    expect(await walletState(t, userId)).toEqual(before);
    const [usage] = await t.platform.db
      .select()
      .from(usageRecords)
      .where(eq(usageRecords.userId, userId))
      .orderBy(usageRecords.createdAt)
      .then((rows) => rows.slice(-1));
    expect(usage).toMatchObject({ status: 'FAILED', tokensConsumed: 0, operation: 'text.generate' });

    expect(await providerStatus('openai')).toBe('DEGRADED');
    // A degraded provider is still listed and still served.
    const listed = json(await t.app.inject({ method: 'GET', url: '/v1/models?provider=openai' }));
    expect(listed.items.find((m: { slug: string }) => m.slug === MODEL)?.provider.status).toBe('DEGRADED');
    behaviour = {};
    expect((await call()).response.statusCode).toBe(200);
    expect(await providerStatus('openai')).toBe('ACTIVE');
  });

  it('reports TIMEOUT in the usage record when the accounts time out', async () => {
    behaviour = { [A]: () => ({ kind: 'hang' }), [B]: () => ({ kind: 'hang' }) };
    const { response } = await call();
    expect(response.statusCode).toBe(503);
    expect(json(response).error.details.upstream.code).toBe('timeout');
    const rows = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId));
    expect(rows.at(-1)?.status).toBe('TIMEOUT');
  });
});

describe("refusals that are not the account's fault", () => {
  it('answers 400 with the provider message when it refuses the model (403), without retrying', async () => {
    behaviour = { [A]: () => ({ kind: 'error', status: 403 }), [B]: () => ({ kind: 'error', status: 403 }) };
    const before = await walletState(t, userId);
    const { response, keys } = await call();
    expect(response.statusCode).toBe(400);
    expect(json(response).error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('does not have access to model') });
    expect(keys).toHaveLength(1);
    expect(await walletState(t, userId)).toEqual(before);
    expect(await providerStatus('openai')).toBe('ACTIVE');
  });

  it('answers 503 MODEL_UNAVAILABLE when the provider no longer serves the model (404)', async () => {
    behaviour = { [A]: () => ({ kind: 'error', status: 404 }), [B]: () => ({ kind: 'error', status: 404 }) };
    const { response, keys } = await call();
    expect(response.statusCode).toBe(503);
    expect(json(response).error.code).toBe('MODEL_UNAVAILABLE');
    expect(keys).toHaveLength(1);
  });

  it('answers 400 when the provider rejects the request itself', async () => {
    behaviour = {
      [A]: () => ({ kind: 'error', status: 400, message: "This model's maximum context length is 128000 tokens." }),
      [B]: () => ({ kind: 'error', status: 400 }),
    };
    const { response, keys } = await call();
    expect(response.statusCode).toBe(400);
    expect(json(response).error.message).toContain('maximum context length');
    expect(keys).toHaveLength(1);
  });
});

describe('monthly budgets', () => {
  it('skips an account over its budget, counts spend, and starts again next month', async () => {
    const a = await account(A);
    await t.platform.db
      .update(providerAccounts)
      .set({ spendMicros: 100 * 1_000_000 })
      .where(eq(providerAccounts.id, a.id));
    t.services.gateway.pool.refresh();
    for (let i = 0; i < 2; i++) {
      const { response, keys } = await call();
      expect(response.statusCode).toBe(200);
      expect(keys).toEqual([B]);
    }
    const spent = await account(B);
    expect(spent.spendMicros).toBeGreaterThan(0);
    const [usage] = (await t.platform.db.select().from(usageRecords).where(eq(usageRecords.providerAccountId, spent.id))).slice(-1);
    expect(usage!.metadata).toMatchObject({ providerCostMicros: expect.any(Number) });

    const b = await account(B);
    await t.platform.db
      .update(providerAccounts)
      .set({ spendMicros: 150 * 1_000_000 })
      .where(eq(providerAccounts.id, b.id));
    t.services.gateway.pool.refresh();
    const { response, keys } = await call();
    expect(response.statusCode).toBe(503);
    expect(json(response).error).toMatchObject({
      code: 'PROVIDER_UNAVAILABLE',
      details: { upstream: { code: 'budget_exhausted', status: null }, accountsTried: 0, accountsOverBudget: 2 },
    });
    expect(keys).toEqual([]);

    // A new month starts from zero (the clock jump outlives access tokens, so sign in afresh).
    t.clock.advance(32 * DAY_MS);
    token = (await signUp(t.app)).accessToken;
    const nextMonth = await call();
    expect(nextMonth.response.statusCode).toBe(200);
    expect(nextMonth.keys).toHaveLength(1);
  });
});

describe('provider status at start', () => {
  it('keeps a provider whose keys are all rejected INACTIVE, and fails its models with MODEL_UNAVAILABLE', async () => {
    const anthropic = await startFakeAnthropic((request) => (request.apiKey === 'sk-ant-good' ? { kind: 'ok' } : { kind: 'error', status: 401 }));
    const app = await createTestApp({ env: providerEnv('ANTHROPIC', anthropic.origin, ['sk-ant-bad']) });
    try {
      expect((await app.services.catalog.snapshot()).providersBySlug.get('anthropic')?.status).toBe('INACTIVE');
      const [accountRow] = await app.services.gateway.pool.accounts('anthropic');
      expect(accountRow).toMatchObject({ status: 'FAILING', lastErrorCode: 'authentication_error' });
      const { accessToken } = await signUp(app.app);
      const response = await app.app.inject({
        method: 'POST',
        url: '/v1/ai/text',
        headers: bearer(accessToken),
        payload: { ...payload, model: 'anthropic/claude-haiku-4-5' },
      });
      expect(response.statusCode).toBe(503);
      expect(json(response).error.code).toBe('MODEL_UNAVAILABLE');
    } finally {
      await app.close();
    }
    // One good key among bad ones is enough to activate it.
    const mixed = await createTestApp({ env: providerEnv('ANTHROPIC', anthropic.origin, ['sk-ant-bad', 'sk-ant-good']) });
    try {
      expect((await mixed.services.catalog.snapshot()).providersBySlug.get('anthropic')?.status).toBe('ACTIVE');
    } finally {
      await mixed.close();
      await anthropic.close();
    }
  });

  it('marks a provider it cannot reach DEGRADED and leaves unconfigured providers INACTIVE', async () => {
    const app = await createTestApp({ env: providerEnv('GROQ', 'http://127.0.0.1:1/openai/v1', ['gsk-x']) });
    try {
      const snapshot = await app.services.catalog.snapshot();
      expect(snapshot.providersBySlug.get('groq')?.status).toBe('DEGRADED');
      expect(snapshot.providersBySlug.get('openai')?.status).toBe('INACTIVE');
      expect(snapshot.providersBySlug.get('local')?.status).toBe('ACTIVE');
    } finally {
      await app.close();
    }
  });
});
