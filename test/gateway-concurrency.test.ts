import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { walletReservations } from '../src/db/schema/wallet.js';
import { withServerInstruction } from '../src/modules/gateway/text/instructions.js';
import { countMessageTokens } from '../src/modules/gateway/text/tokens.js';
import { startFakeOpenAi, type FakeUpstream } from './helpers/fake-upstreams.js';
import { providerEnv, setBalance, walletState } from './helpers/gateway.js';
import { bearer, createTestApp, json, signUp, type TestApp } from './helpers/test-app.js';

/**
 * 50 parallel generations through the HTTP gateway against a balance that covers 10. The fake upstream holds every
 * call it receives until the test releases them, so all reservations are taken before any settles: exactly the
 * reservations the balance covers may reach the provider.
 */
let fake: FakeUpstream;
let t: TestApp;
let release!: () => void;
const held = new Promise<void>((resolve) => (release = resolve));

beforeAll(async () => {
  fake = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : { kind: 'ok', waitFor: held, text: 'Parallel answer.' }));
  t = await createTestApp({ env: providerEnv('OPENAI', fake.baseUrl, ['sk-concurrency-1']) });
});
afterAll(async () => {
  release?.();
  await t?.close();
  await fake?.close();
});

describe('parallel generations against a small balance', () => {
  it('lets exactly 10 of 50 through, never overdraws, and keeps balance = sum of ledger', async () => {
    const { accessToken, user } = await signUp(t.app);
    const messages = [{ role: 'user' as const, content: 'Count to three' }];
    const model = await t.services.catalog.resolveForGateway('openai/gpt-4o-mini');
    const perCall = await t.services.catalog.estimateTokens(model, {
      kind: 'text',
      inputTokens: countMessageTokens(withServerInstruction(model, messages)),
      maxOutputTokens: 200,
    });
    expect(perCall).toBeGreaterThan(1);
    await setBalance(t, user.id, perCall * 10 + Math.floor(perCall / 2));

    let answered = 0;
    const samples: number[] = [];
    const calls = Array.from({ length: 50 }, () =>
      t.app
        .inject({ method: 'POST', url: '/v1/ai/text', headers: bearer(accessToken), payload: { model: 'openai/gpt-4o-mini', messages, maxTokens: 200 } })
        .then((response) => {
          answered++;
          return response;
        }),
    );
    // Wait until every call was either refused or is held at the provider.
    for (let i = 0; i < 3000 && !(answered === 40 && fake.calls().length === 10); i++) {
      samples.push((await walletState(t, user.id)).balance);
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(fake.calls()).toHaveLength(10);
    expect(answered).toBe(40);
    const open = await t.platform.db.$count(walletReservations, eq(walletReservations.status, 'OPEN'));
    expect(open).toBe(10);
    release();
    const responses = await Promise.all(calls);

    const ok = responses.filter((r) => r.statusCode === 200);
    const refused = responses.filter((r) => r.statusCode === 429);
    expect(ok).toHaveLength(10);
    expect(refused).toHaveLength(40);
    for (const response of refused) {
      expect(json(response).error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { shortfallTokens: expect.any(Number) } });
      expect(json(response).error.details.shortfallTokens).toBeGreaterThan(0);
    }
    expect(fake.calls()).toHaveLength(10);
    expect(Math.min(...samples)).toBeGreaterThanOrEqual(0);

    const final = await walletState(t, user.id);
    expect(final.balance).toBeGreaterThanOrEqual(0);
    expect(final.balance).toBe(final.ledgerSum);
    const charged = ok.reduce((sum, r) => sum + json(r).usage.creditsConsumed, 0);
    expect(final.balance).toBe(perCall * 10 + Math.floor(perCall / 2) - charged);
  });
});
