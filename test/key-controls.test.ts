import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { apiKeyBudgetHolds, apiKeys } from '../src/db/schema/apikeys.js';
import { usageRecords } from '../src/db/schema/usage.js';
import { walletReservations } from '../src/db/schema/wallet.js';
import { withServerInstruction } from '../src/modules/gateway/text/instructions.js';
import { countMessageTokens } from '../src/modules/gateway/text/tokens.js';
import { startFakeOpenAi, type FakeUpstream } from './helpers/fake-upstreams.js';
import { createApiKey, providerEnv, setBalance, setPlan, walletState } from './helpers/gateway.js';
import { bearer, createTestApp, json, signUp, type TestApp } from './helpers/test-app.js';

/**
 * Per-key controls: a token budget per period held inside the reservation (exact under parallel load),
 * a request rate, an allow-list of models; and spend by key in the usage feed.
 */
let fake: FakeUpstream;
let t: TestApp;
let release: () => void = () => undefined;
let held: Promise<void> = Promise.resolve();

beforeAll(async () => {
  fake = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : { kind: 'ok', waitFor: held, text: 'Parallel answer.' }));
  t = await createTestApp({ env: providerEnv('OPENAI', fake.baseUrl, ['sk-key-controls-1']) });
});
afterAll(async () => {
  release();
  await t?.close();
  await fake?.close();
});

const MODEL = 'openai/gpt-4o-mini';
const messages = [{ role: 'user' as const, content: 'Count to three' }];
const text = (credential: string, model = MODEL) =>
  t.app.inject({ method: 'POST', url: '/v1/ai/text', headers: bearer(credential), payload: { model, messages, maxTokens: 200 } });
async function listKeys(accessToken: string) {
  const response = await t.app.inject({ method: 'GET', url: '/v1/account/api-keys', headers: bearer(accessToken) });
  expect(response.statusCode, response.body).toBe(200);
  return json(response).items;
}
const patch = (accessToken: string, id: string, payload: object) =>
  t.app.inject({ method: 'PATCH', url: `/v1/account/api-keys/${id}`, headers: bearer(accessToken), payload });

async function perCallTokens(): Promise<number> {
  const model = await t.services.catalog.resolveForGateway(MODEL);
  return t.services.catalog.estimateTokens(model, {
    kind: 'text',
    inputTokens: countMessageTokens(withServerInstruction(model, messages)),
    maxOutputTokens: 200,
  });
}

async function apiUser() {
  const signed = await signUp(t.app);
  await setPlan(t, signed.user.id, 'starter');
  return signed;
}

/** A fresh access token (after the test clock moved past the first one's lifetime). */
async function login(account: { email: string; password: string }): Promise<string> {
  const response = await t.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: account.email, password: account.password } });
  expect(response.statusCode, response.body).toBe(200);
  return json(response).accessToken;
}

/** Moves the test clock to `hours` past the next UTC midnight. */
function toNextUtcDay(hours = 1) {
  const now = t.clock.now();
  t.clock.set(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1, hours)));
}

describe('per-key budget', () => {
  it('lets exactly the calls the budget covers through under 50 parallel calls, then again in the next period', async () => {
    const account = await apiUser();
    const { user } = account;
    let accessToken = account.accessToken;
    const perCall = await perCallTokens();
    await setBalance(t, user.id, perCall * 1000);
    const budget = perCall * 10 + Math.floor(perCall / 2);
    const key = await createApiKey(t, accessToken, ['ai:text'], { budget: { tokens: budget, period: 'day' } });

    const runBatch = async () => {
      held = new Promise<void>((resolve) => (release = resolve));
      const before = fake.calls().length;
      let answered = 0;
      const calls = Array.from({ length: 50 }, () =>
        text(key.key).then((response) => {
          answered++;
          return response;
        }),
      );
      // Every call is either refused or held at the provider before any settles.
      try {
        for (let i = 0; i < 3000 && !(answered === 40 && fake.calls().length - before === 10); i++) await new Promise((r) => setTimeout(r, 10));
        expect(fake.calls().length - before).toBe(10);
        expect(answered).toBe(40);
        const listed = (await listKeys(accessToken)).find((k: { id: string }) => k.id === key.id);
        expect(listed.budget).toMatchObject({ tokens: budget, period: 'day', spentTokens: 0, reservedTokens: perCall * 10 });
      } finally {
        release();
      }
      return Promise.all(calls);
    };

    const first = await runBatch();
    const ok = first.filter((r) => r.statusCode === 200);
    const refused = first.filter((r) => r.statusCode === 429);
    expect(ok).toHaveLength(10);
    expect(refused).toHaveLength(40);
    const resetsAt = new Date(Date.UTC(t.clock.now().getUTCFullYear(), t.clock.now().getUTCMonth(), t.clock.now().getUTCDate() + 1)).toISOString();
    for (const response of refused) {
      expect(json(response).error).toMatchObject({
        code: 'KEY_BUDGET_EXCEEDED',
        message: expect.stringContaining('PATCH /v1/account/api-keys'),
        details: { budgetTokens: budget, spentTokens: expect.any(Number), resetsAt },
      });
    }
    // The counter follows the real spend: reserved moved to spent at the charged cost, nothing left held.
    const charged = ok.reduce((sum, r) => sum + json(r).usage.creditsConsumed, 0);
    const listed = (await listKeys(accessToken)).find((k: { id: string }) => k.id === key.id);
    expect(listed.budget).toMatchObject({ spentTokens: charged, reservedTokens: 0, resetsAt });
    expect(await t.platform.db.$count(apiKeyBudgetHolds, eq(apiKeyBudgetHolds.apiKeyId, key.id))).toBe(0);
    const wallet = await walletState(t, user.id);
    expect(wallet.balance).toBe(wallet.ledgerSum);
    expect(wallet.balance).toBe(perCall * 1000 - charged);

    // A new UTC day is a new period: the budget covers 10 more, exactly.
    toNextUtcDay();
    accessToken = await login(account);
    const second = await runBatch();
    expect(second.filter((r) => r.statusCode === 200)).toHaveLength(10);
    expect(second.filter((r) => r.statusCode === 429)).toHaveLength(40);
  });

  it('resets with the period (test clock), and a total budget never does', async () => {
    const account = await apiUser();
    const { accessToken } = account;
    const perCall = await perCallTokens();
    const daily = await createApiKey(t, accessToken, ['ai:text'], { budget: { tokens: perCall, period: 'day' } });
    const total = await createApiKey(t, accessToken, ['ai:text'], { budget: { tokens: perCall, period: 'total' } });
    for (const key of [daily, total]) {
      expect((await text(key.key)).statusCode).toBe(200);
      const over = await text(key.key);
      expect(over.statusCode).toBe(429);
      expect(json(over).error.code).toBe('KEY_BUDGET_EXCEEDED');
    }
    expect(json(await text(total.key)).error.details.resetsAt).toBeNull();
    t.clock.advance(60 * 60 * 1000);
    if (t.clock.now().getUTCHours() !== 0) expect((await text(daily.key)).statusCode).toBe(429);
    toNextUtcDay(0);
    expect((await text(daily.key)).statusCode).toBe(200);
    expect((await text(total.key)).statusCode).toBe(429);
    // Raising the budget lets the key spend again at once.
    const raised = await patch(await login(account), total.id, { budget: { tokens: perCall * 5, period: 'total' } });
    expect(raised.statusCode).toBe(200);
    expect(json(raised).budget).toMatchObject({ tokens: perCall * 5, period: 'total', resetsAt: null, periodStart: new Date(0).toISOString() });
    expect((await text(total.key)).statusCode).toBe(200);
  });

  it('releases the hold of a failed call, so a refund gives the budget back', async () => {
    const { accessToken } = await apiUser();
    const perCall = await perCallTokens();
    const key = await createApiKey(t, accessToken, ['ai:text'], { budget: { tokens: perCall, period: 'month' } });
    fake.decide(() => ({ kind: 'error', status: 400, message: 'bad request' }));
    try {
      expect((await text(key.key)).statusCode).toBe(400);
    } finally {
      fake.decide((request) => (request.method === 'GET' ? { kind: 'ok' } : { kind: 'ok', waitFor: held, text: 'Parallel answer.' }));
    }
    expect((await listKeys(accessToken))[0].budget).toMatchObject({ spentTokens: 0, reservedTokens: 0 });
    expect((await text(key.key)).statusCode).toBe(200);
  });

  it('releases the hold when the sweeper closes a reservation a dead process left open', async () => {
    const account = await apiUser();
    const { user } = account;
    const accessToken = account.accessToken;
    const perCall = await perCallTokens();
    const key = await createApiKey(t, accessToken, ['ai:text'], { budget: { tokens: perCall * 3, period: 'total' } });
    const [row] = await t.platform.db.select().from(apiKeys).where(eq(apiKeys.id, key.id));
    const model = await t.services.catalog.resolveForGateway(MODEL);
    const principal = {
      userId: user.id,
      role: 'USER' as const,
      sessionId: null,
      via: 'api_key' as const,
      scopes: ['ai:text'],
      apiKeyId: key.id,
      keyControls: { budget: { tokens: row!.budgetTokens!, period: 'total' as const }, requestsPerMinute: null, allowedModels: null },
    };
    const metered = await t.services.gateway.metering.reserve(principal, {
      model,
      operation: 'text.generate',
      tokens: perCall,
      requestId: `swept-${key.id}`,
      leaseSeconds: 1,
    });
    expect((await listKeys(accessToken))[0].budget).toMatchObject({ reservedTokens: perCall });
    await t.services.gateway.metering.answered(metered, 7);
    t.clock.advance(16 * 60 * 1000);
    await t.services.wallet.sweepExpired();
    expect((await listKeys(await login(account)))[0].budget).toMatchObject({ spentTokens: 7, reservedTokens: 0 });
    const [reservation] = await t.platform.db.select().from(walletReservations).where(eq(walletReservations.requestId, metered.requestId));
    expect(reservation!.status).toBe('SETTLED');
  });
});

describe('per-key allow-list of models', () => {
  it('refuses other models with 403 MODEL_NOT_ALLOWED_FOR_KEY on /v1/ai/text and the SDK-compatible routes, and lists only the allowed ones', async () => {
    const { accessToken } = await apiUser();
    const key = await createApiKey(t, accessToken, ['ai:text'], { allowedModels: ['local/text'] });
    expect((await text(key.key, 'local/text')).statusCode).toBe(200);
    const refused = await text(key.key, MODEL);
    expect(refused.statusCode).toBe(403);
    expect(json(refused).error).toMatchObject({ code: 'MODEL_NOT_ALLOWED_FOR_KEY', details: { model: MODEL, allowedModels: ['local/text'] } });

    const openAi = await t.app.inject({ method: 'POST', url: '/openai/v1/chat/completions', headers: bearer(key.key), payload: { model: MODEL, messages } });
    expect(openAi.statusCode).toBe(403);
    expect(json(openAi).error).toMatchObject({ code: 'model_not_allowed_for_key', type: 'permission_error' });
    const allowedOpenAi = await t.app.inject({
      method: 'POST',
      url: '/openai/v1/chat/completions',
      headers: bearer(key.key),
      payload: { model: 'local/text', messages },
    });
    expect(allowedOpenAi.statusCode).toBe(200);
    const anthropic = await t.app.inject({
      method: 'POST',
      url: '/anthropic/v1/messages',
      headers: { 'x-api-key': key.key },
      payload: { model: MODEL, max_tokens: 50, messages },
    });
    expect(anthropic.statusCode).toBe(403);
    expect(JSON.stringify(json(anthropic)).toLowerCase()).toContain('this api key may call only');

    const models = json(await t.app.inject({ method: 'GET', url: '/openai/v1/models', headers: bearer(key.key) }));
    expect(models.data.map((m: { id: string }) => m.id)).toEqual(['local/text']);
    const unrestricted = await createApiKey(t, accessToken, ['ai:text']);
    expect(json(await t.app.inject({ method: 'GET', url: '/openai/v1/models', headers: bearer(unrestricted.key) })).data.length).toBeGreaterThan(1);

    // Lifting the list (null) takes effect at once.
    expect((await patch(accessToken, key.id, { allowedModels: null })).statusCode).toBe(200);
    expect((await text(key.key, 'local/text')).statusCode).toBe(200);
    expect(json(await t.app.inject({ method: 'GET', url: '/openai/v1/models', headers: bearer(key.key) })).data.length).toBeGreaterThan(1);
  });
});

describe('per-key rate limit (one instance)', () => {
  it('answers 429 RATE_LIMITED with Retry-After past requestsPerMinute, per key', async () => {
    const { accessToken } = await apiUser();
    const key = await createApiKey(t, accessToken, ['ai:text'], { rateLimit: { requestsPerMinute: 2 } });
    const other = await createApiKey(t, accessToken, ['ai:text']);
    expect((await text(key.key, 'local/text')).statusCode).toBe(200);
    expect((await text(key.key, 'local/text')).statusCode).toBe(200);
    const limited = await text(key.key, 'local/text');
    expect(limited.statusCode).toBe(429);
    expect(json(limited).error).toMatchObject({ code: 'RATE_LIMITED', details: { limit: 2 } });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect((await text(other.key, 'local/text')).statusCode).toBe(200);
    expect((await text(accessToken, 'local/text')).statusCode).toBe(200);
  });
});

describe('managing controls', () => {
  it('creates, lists and patches each control, and removes one with null', async () => {
    const { accessToken } = await apiUser();
    const created = await t.app.inject({
      method: 'POST',
      url: '/v1/account/api-keys',
      headers: bearer(accessToken),
      payload: {
        label: 'agent',
        scopes: ['ai:text'],
        budget: { tokens: 5000, period: 'month' },
        rateLimit: { requestsPerMinute: 60 },
        allowedModels: ['local/text', 'local/text'],
      },
    });
    expect(created.statusCode).toBe(201);
    const body = json(created);
    expect(body).toMatchObject({
      rateLimit: { requestsPerMinute: 60 },
      allowedModels: ['local/text'],
      budget: { tokens: 5000, period: 'month', spentTokens: 0, reservedTokens: 0 },
    });
    const [listed] = await listKeys(accessToken);
    expect(listed).toMatchObject({ id: body.id, budget: body.budget, rateLimit: body.rateLimit, allowedModels: body.allowedModels });

    const changed = await patch(accessToken, body.id, { label: 'renamed', rateLimit: null, budget: { tokens: 9000, period: 'day' } });
    expect(changed.statusCode).toBe(200);
    expect(json(changed)).toMatchObject({ label: 'renamed', rateLimit: null, allowedModels: ['local/text'], budget: { tokens: 9000, period: 'day' } });
    expect((await patch(accessToken, body.id, { budget: null })).statusCode).toBe(200);
    expect((await listKeys(accessToken))[0]).toMatchObject({ label: 'renamed', budget: null, rateLimit: null });

    const stranger = await apiUser();
    expect((await patch(stranger.accessToken, body.id, { label: 'mine' })).statusCode).toBe(404);
    expect((await patch(accessToken, '01950000-0000-7000-8000-000000000000', { label: 'x' })).statusCode).toBe(404);
  });

  it.each([
    ['an unknown model slug', { allowedModels: ['local/text', 'nope/nothing'] }, 'allowedModels.1'],
    ['an empty allow-list', { allowedModels: [] }, 'allowedModels'],
    ['a zero budget', { budget: { tokens: 0, period: 'day' } }, 'budget.tokens'],
    ['a fractional budget', { budget: { tokens: 1.5, period: 'day' } }, 'budget.tokens'],
    ['an unknown period', { budget: { tokens: 10, period: 'week' } }, 'budget.period'],
    ['a budget without tokens', { budget: { period: 'day' } }, 'budget.tokens'],
    ['a zero rate', { rateLimit: { requestsPerMinute: 0 } }, 'rateLimit.requestsPerMinute'],
    ['a rate over 100000', { rateLimit: { requestsPerMinute: 100_001 } }, 'rateLimit.requestsPerMinute'],
  ])('refuses %s with 400 naming the field, on create and on PATCH, changing nothing', async (_label, controls, field) => {
    const { accessToken, user } = await apiUser();
    const created = await t.app.inject({
      method: 'POST',
      url: '/v1/account/api-keys',
      headers: bearer(accessToken),
      payload: { label: 'x', scopes: ['ai:text'], ...controls },
    });
    expect(created.statusCode).toBe(400);
    expect(json(created).error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
    expect(await t.platform.db.$count(apiKeys, eq(apiKeys.userId, user.id))).toBe(0);

    const key = await createApiKey(t, accessToken, ['ai:text'], { rateLimit: { requestsPerMinute: 10 } });
    const patched = await patch(accessToken, key.id, controls);
    expect(patched.statusCode).toBe(400);
    expect(json(patched).error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
    expect((await listKeys(accessToken))[0]).toMatchObject({ budget: null, rateLimit: { requestsPerMinute: 10 }, allowedModels: null });
  });

  it('refuses an empty PATCH', async () => {
    const { accessToken } = await apiUser();
    const key = await createApiKey(t, accessToken, ['ai:text']);
    expect((await patch(accessToken, key.id, {})).statusCode).toBe(400);
  });
});

describe('spend by key', () => {
  it('filters GET /v1/usage by apiKeyId and sums by key in GET /v1/usage/summary', async () => {
    const { accessToken, user } = await apiUser();
    const a = await createApiKey(t, accessToken, ['ai:text']);
    const b = await createApiKey(t, accessToken, ['ai:text']);
    for (const credential of [a.key, a.key, b.key, accessToken]) expect((await text(credential, 'local/text')).statusCode).toBe(200);

    const feed = (query: string) => t.app.inject({ method: 'GET', url: `/v1/usage?${query}`, headers: bearer(accessToken) });
    const ofA = json(await feed(`apiKeyId=${a.id}`)).items;
    expect(ofA).toHaveLength(2);
    expect(ofA.every((r: { apiKeyId: string }) => r.apiKeyId === a.id)).toBe(true);
    expect(json(await feed(`apiKeyId=${b.id}`)).items).toHaveLength(1);
    expect((await feed('apiKeyId=not-a-uuid')).statusCode).toBe(400);

    const rows = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, user.id));
    const sumOf = (id: string | null) => rows.filter((r) => r.apiKeyId === id).reduce((sum, r) => sum + r.tokensConsumed, 0);
    const summary = json(await t.app.inject({ method: 'GET', url: '/v1/usage/summary?window=day', headers: bearer(accessToken) }));
    expect(summary.byApiKey).toEqual(
      expect.arrayContaining([
        { apiKeyId: a.id, _count: { _all: 2 }, _sum: { creditsConsumed: sumOf(a.id) } },
        { apiKeyId: b.id, _count: { _all: 1 }, _sum: { creditsConsumed: sumOf(b.id) } },
        { apiKeyId: null, _count: { _all: 1 }, _sum: { creditsConsumed: sumOf(null) } },
      ]),
    );
    expect(summary.byApiKey).toHaveLength(3);
    expect(summary.byModel.every((m: { modelId: string | null }) => m.modelId !== undefined)).toBe(true);
  });
});
