import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { gatewayIdempotency } from '../../../db/schema/gateway.js';
import { generations } from '../../../db/schema/library.js';
import { usageRecords } from '../../../db/schema/usage.js';
import { HOUR_MS } from '../../../platform/clock/clock.js';
import { startFakeOpenAi, type FakeUpstream } from '../../../../test/helpers/fake-upstreams.js';
import { createApiKey, parseSse, providerEnv, setBalance, setPlan, walletState } from '../../../../test/helpers/gateway.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../../test/helpers/test-app.js';

let t: TestApp;
let fake: FakeUpstream;
let gate: Promise<void> | null = null;

beforeAll(async () => {
  fake = await startFakeOpenAi((request) => (request.method === 'POST' && gate ? { kind: 'ok', waitFor: gate } : { kind: 'ok' }));
  t = await createTestApp({ env: providerEnv('OPENAI', fake.baseUrl, ['sk-idem-0001']) });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const body = { model: 'local/text', messages: [{ role: 'user', content: 'Write a haiku about the sea' }] };
const ask = (token: string, payload: unknown, key?: string) =>
  t.app.inject({ method: 'POST', url: '/v1/ai/text', headers: { ...bearer(token), ...(key ? { 'idempotency-key': key } : {}) }, payload: payload as object });

async function counts(userId: string) {
  return {
    usage: await t.platform.db.$count(usageRecords, eq(usageRecords.userId, userId)),
    history: await t.platform.db.$count(generations, eq(generations.userId, userId)),
    wallet: await walletState(t, userId),
  };
}

describe('Idempotency-Key on /v1/ai/*', () => {
  it('replays the first answer for the same key and body without charging again', async () => {
    const { accessToken, user } = await signUp(t.app);
    const first = await ask(accessToken, body, 'order-123');
    expect(first.statusCode).toBe(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const afterFirst = await counts(user.id);
    // Same body with its keys in another order is the same request.
    const second = await ask(accessToken, { messages: body.messages, model: body.model }, 'order-123');
    expect(second.statusCode).toBe(200);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(json(second)).toEqual(json(first));
    expect(await counts(user.id)).toEqual(afterFirst);
    expect(afterFirst.usage).toBe(1);
    expect(afterFirst.history).toBe(1);
  });

  it('a completion that fails after the charge committed: the replay is refused, never charged twice', async () => {
    const { accessToken, user } = await signUp(t.app);
    // A call whose answer is known only after its charge (an image): the settlement marks the key CHARGED, then the
    // answer is stored. That second write fails here (a trigger refuses it), as a crash between the two would.
    await t.platform.database.exec(`
      create function refuse_idempotency_completion() returns trigger language plpgsql as $$
      begin raise exception 'completion refused by the test'; end $$;
      create trigger refuse_completion before update on gateway_idempotency
        for each row when (new.status = 'COMPLETED') execute function refuse_idempotency_completion();`);
    const image = { model: 'local/image', prompt: 'a lighthouse', count: 1, width: 64, height: 64 };
    const call = () =>
      t.app.inject({ method: 'POST', url: '/v1/ai/image', headers: { ...bearer(accessToken), 'idempotency-key': 'image-once' }, payload: image });
    try {
      expect((await call()).statusCode).toBe(500);
    } finally {
      await t.platform.database.exec('drop trigger refuse_completion on gateway_idempotency; drop function refuse_idempotency_completion();');
    }
    const charged = await counts(user.id);
    expect(charged.usage).toBe(1);
    expect(charged.wallet.balance).toBe(charged.wallet.ledgerSum);
    const [entry] = await t.platform.db.select().from(gatewayIdempotency).where(eq(gatewayIdempotency.key, 'image-once'));
    expect(entry!.status).toBe('CHARGED');

    const replay = await call();
    expect(replay.statusCode).toBe(409);
    expect(json(replay).error.message).toContain('was charged');
    expect(await counts(user.id)).toEqual(charged);
  });

  it('refuses the same key with a different body (409) and changes nothing', async () => {
    const { accessToken, user } = await signUp(t.app);
    await ask(accessToken, body, 'reused-key');
    const before = await counts(user.id);
    const response = await ask(accessToken, { ...body, maxTokens: 10 }, 'reused-key');
    expect(response.statusCode).toBe(409);
    expect(json(response).error).toMatchObject({
      code: 'CONFLICT',
      message: expect.stringContaining('different request'),
      details: { idempotencyKey: 'reused-key' },
    });
    expect(await counts(user.id)).toEqual(before);
    const otherRoute = await t.app.inject({
      method: 'POST',
      url: '/v1/ai/enhance/prompt',
      headers: { ...bearer(accessToken), 'idempotency-key': 'reused-key' },
      payload: { model: 'local/vision', prompt: 'sea' },
    });
    expect(otherRoute.statusCode).toBe(409);
  });

  it('keeps keys per user', async () => {
    const a = await signUp(t.app);
    const b = await signUp(t.app);
    const first = json(await ask(a.accessToken, body, 'shared-name'));
    const other = await ask(b.accessToken, body, 'shared-name');
    expect(other.headers['idempotent-replayed']).toBeUndefined();
    expect(json(other).requestId).not.toBe(first.requestId);
    expect((await counts(b.user.id)).usage).toBe(1);
  });

  it('frees the key after a failed call, so a retry with it runs', async () => {
    const { accessToken, user } = await signUp(t.app);
    const { balance } = await walletState(t, user.id);
    await setBalance(t, user.id, 5);
    const refused = await ask(accessToken, body, 'retry-me');
    expect(refused.statusCode).toBe(429);
    await setBalance(t, user.id, balance);
    const retried = await ask(accessToken, body, 'retry-me');
    expect(retried.statusCode).toBe(200);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
  });

  it('answers 409 while the first request with the key is still running', async () => {
    const { accessToken } = await signUp(t.app);
    let open!: () => void;
    gate = new Promise<void>((resolve) => (open = resolve));
    const payload = { model: 'openai/gpt-4o-mini', messages: body.messages };
    const first = ask(accessToken, payload, 'slow-one');
    while (!fake.calls().some((c) => c.body?.messages?.at(-1)?.content === body.messages[0]!.content)) await new Promise((r) => setTimeout(r, 10));
    const during = await ask(accessToken, payload, 'slow-one');
    expect(during.statusCode).toBe(409);
    expect(json(during).error.message).toMatch(/still running/);
    open();
    gate = null;
    expect((await first).statusCode).toBe(200);
    const after = await ask(accessToken, payload, 'slow-one');
    expect(after.headers['idempotent-replayed']).toBe('true');
  });

  it('replays a streamed answer as events, without charging again', async () => {
    const { accessToken, user } = await signUp(t.app);
    const streamed = { ...body, stream: true };
    const first = parseSse((await ask(accessToken, streamed, 'stream-key')).body);
    const before = await counts(user.id);
    const replay = await ask(accessToken, streamed, 'stream-key');
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['content-type']).toMatch(/text\/event-stream/);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    const events = parseSse(replay.body);
    const text = (list: typeof events) =>
      list
        .filter((e) => e.type === 'text')
        .map((e) => e.delta)
        .join('');
    expect(text(events)).toBe(text(first));
    expect(events.slice(-2)).toEqual(first.slice(-2));
    expect(await counts(user.id)).toEqual(before);
  });

  it('replays prompt enhancement', async () => {
    const { accessToken, user } = await signUp(t.app);
    const send = () =>
      t.app.inject({
        method: 'POST',
        url: '/v1/ai/enhance/prompt',
        headers: { ...bearer(accessToken), 'idempotency-key': 'enh-1' },
        payload: { model: 'local/vision', prompt: 'sea' },
      });
    const first = await send();
    const before = await counts(user.id);
    const second = await send();
    expect(json(second)).toEqual(json(first));
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(await counts(user.id)).toEqual(before);
  });

  it('forgets a key after 24 hours (API keys outlive access tokens, so one is used here)', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setPlan(t, user.id, 'starter');
    const { key } = await createApiKey(t, accessToken, ['ai:text']);
    const first = json(await ask(key, body, 'daily'));
    t.clock.advance(25 * HOUR_MS);
    const later = await ask(key, body, 'daily');
    expect(later.headers['idempotent-replayed']).toBeUndefined();
    expect(json(later).requestId).not.toBe(first.requestId);
    // The hourly purge drops keys past their 24 hours.
    t.clock.advance(25 * HOUR_MS);
    expect(await t.services.gateway.idempotency.purgeExpired()).toBeGreaterThanOrEqual(1);
    expect(await t.platform.db.$count(gatewayIdempotency, eq(gatewayIdempotency.userId, user.id))).toBe(0);
  });

  it.each([
    ['an empty key', ''],
    ['a key with spaces', 'has spaces'],
    ['an over-long key', 'k'.repeat(256)],
  ])('refuses %s with 400', async (_label, key) => {
    const { accessToken, user } = await signUp(t.app);
    const response = await t.app.inject({ method: 'POST', url: '/v1/ai/text', headers: { ...bearer(accessToken), 'idempotency-key': key }, payload: body });
    expect(response.statusCode).toBe(400);
    expect(json(response).error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'header.idempotency-key' })]));
    expect((await counts(user.id)).usage).toBe(0);
  });
});
