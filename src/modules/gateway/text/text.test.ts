import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { models } from '../../../db/schema/catalog.js';
import { generations } from '../../../db/schema/library.js';
import { subscriptions } from '../../../db/schema/subscriptions.js';
import { usageRecords } from '../../../db/schema/usage.js';
import { walletReservations } from '../../../db/schema/wallet.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../../test/helpers/test-app.js';
import { ledgerOf, parseSse, setBalance, setPlan, walletState } from '../../../../test/helpers/gateway.js';
import { withServerInstruction } from './instructions.js';
import { countMessageTokens, countTextTokens } from './tokens.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

const TEXT_MODEL = 'local/text';
const MULTIMODAL_MODEL = 'local/vision';
const ask = (token: string, payload: unknown, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url: '/v1/ai/text', headers: { ...bearer(token), ...headers }, payload: payload as object });
const enhance = (token: string, payload: unknown) =>
  t.app.inject({ method: 'POST', url: '/v1/ai/enhance/prompt', headers: bearer(token), payload: payload as object });
const hello = { model: TEXT_MODEL, messages: [{ role: 'user', content: 'Explain how lighthouses work' }] };

async function usageOf(requestId: string) {
  return t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, requestId));
}

describe('POST /v1/ai/text with the local provider', () => {
  it('answers with text, usage, model and requestId, and bills the real usage', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const response = await ask(accessToken, hello);
    expect(response.statusCode).toBe(200);
    const body = json(response);
    expect(body).toEqual({
      text: expect.stringContaining('lighthouses'),
      usage: { inputTokens: expect.any(Number), outputTokens: countTextTokens(body.text), creditsConsumed: expect.any(Number) },
      model: TEXT_MODEL,
      requestId: expect.any(String),
    });
    expect(body.usage.creditsConsumed).toBeGreaterThan(0);

    const model = await t.services.catalog.resolveForGateway(TEXT_MODEL);
    const price = await t.services.catalog.priceUsage(model, { inputTokens: body.usage.inputTokens, outputTokens: body.usage.outputTokens });
    expect(body.usage.creditsConsumed).toBe(price.tokens);

    const after = await walletState(t, user.id);
    expect(after.balance).toBe(before.balance - body.usage.creditsConsumed);
    expect(after.ledgerSum).toBe(after.balance);
    // Reserved for the default 2048 output tokens, then the unused part refunded.
    const ledger = await ledgerOf(t, body.requestId);
    expect(ledger.map((r) => r.kind)).toEqual(['USAGE', 'REFUND']);
    const inputTokens = countMessageTokens(withServerInstruction(model, hello.messages as never));
    expect(-ledger[0]!.amount).toBe(await t.services.catalog.estimateTokens(model, { kind: 'text', inputTokens, maxOutputTokens: 2048 }));
    expect(ledger.reduce((sum, r) => sum + r.amount, 0)).toBe(-body.usage.creditsConsumed);

    const [usage] = await usageOf(body.requestId);
    expect(usage).toMatchObject({
      userId: user.id,
      modelId: model.id,
      providerId: model.providerId,
      operation: 'text.generate',
      status: 'SUCCESS',
      inputUnits: body.usage.inputTokens,
      outputUnits: body.usage.outputTokens,
      tokensConsumed: body.usage.creditsConsumed,
      providerAccountId: expect.any(String),
    });
    expect(usage!.metadata).toMatchObject({ maxTokens: 2048, usageSource: 'provider', finishReason: 'stop' });

    const [saved] = await t.platform.db.select().from(generations).where(eq(generations.requestId, body.requestId));
    expect(saved).toMatchObject({
      userId: user.id,
      kind: 'TEXT',
      prompt: 'Explain how lighthouses work',
      output: { text: body.text },
      modelId: model.id,
      visibility: 'PRIVATE',
      favorite: false,
      tags: [],
    });
  });

  it('is deterministic offline and honours maxTokens', async () => {
    const { accessToken } = await signUp(t.app);
    const a = json(await ask(accessToken, hello));
    const b = json(await ask(accessToken, hello));
    expect(a.text).toBe(b.text);
    expect(a.requestId).not.toBe(b.requestId);
    const short = json(await ask(accessToken, { ...hello, maxTokens: 5 }));
    expect(short.usage.outputTokens).toBeLessThanOrEqual(5);
    const [usage] = await usageOf(short.requestId);
    expect(usage!.metadata).toMatchObject({ finishReason: 'length', maxTokens: 5 });
  });

  it('streams text events, then usage, then finish, billed like the same call unstreamed', async () => {
    const { accessToken, user } = await signUp(t.app);
    const sync = json(await ask(accessToken, hello));
    const before = await walletState(t, user.id);
    const response = await ask(accessToken, { ...hello, stream: true });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(response.headers['x-request-id']).toBeTruthy();
    expect(response.body).toMatch(/^data: \{.*\}\n\n/);
    const events = parseSse(response.body);
    const texts = events.filter((e) => e.type === 'text');
    expect(texts.length).toBeGreaterThan(3);
    for (const e of texts) expect(Object.keys(e).sort()).toEqual(['delta', 'type']);
    expect(texts.map((e) => e.delta).join('')).toBe(sync.text);
    expect(events.slice(-2)).toEqual([
      { type: 'usage', usage: { inputTokens: sync.usage.inputTokens, outputTokens: sync.usage.outputTokens } },
      { type: 'finish', finishReason: 'stop' },
    ]);
    const after = await walletState(t, user.id);
    expect(before.balance - after.balance).toBe(sync.usage.creditsConsumed);
    expect(after.ledgerSum).toBe(after.balance);
    const rows = await t.platform.db.select().from(generations).where(eq(generations.userId, user.id));
    expect(rows).toHaveLength(2);
  });

  it('streams a model that cannot stream as one text event, then usage and finish', async () => {
    const { accessToken } = await signUp(t.app);
    const sync = json(await ask(accessToken, hello));
    const [row] = await t.platform.db.select().from(models).where(eq(models.slug, TEXT_MODEL));
    await t.platform.db
      .update(models)
      .set({ capabilityOverride: { ...row!.capabilityOverride, flags: { streaming: false } } })
      .where(eq(models.id, row!.id));
    t.services.catalog.invalidate();
    try {
      const events = parseSse((await ask(accessToken, { ...hello, stream: true })).body);
      expect(events).toEqual([
        { type: 'text', delta: sync.text },
        { type: 'usage', usage: { inputTokens: sync.usage.inputTokens, outputTokens: sync.usage.outputTokens } },
        { type: 'finish', finishReason: 'stop' },
      ]);
    } finally {
      await t.platform.db.update(models).set({ capabilityOverride: row!.capabilityOverride }).where(eq(models.id, row!.id));
      t.services.catalog.invalidate();
    }
  });

  it('trims old history to a quarter of the context window but keeps system text and the last message', async () => {
    const { accessToken } = await signUp(t.app);
    const filler = 'word '.repeat(700);
    const messages = [
      { role: 'system', content: 'Answer in one paragraph.' },
      ...Array.from({ length: 6 }, (_, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: `${i} ${filler}` })),
      { role: 'user', content: 'Now summarise lighthouses' },
    ];
    const response = await ask(accessToken, { model: TEXT_MODEL, messages });
    expect(response.statusCode).toBe(200);
    const body = json(response);
    // local/text has an 8192-token context: the budget is 2048 tokens of history.
    expect(body.usage.inputTokens).toBeLessThan(2048 + 200);
    const [usage] = await usageOf(body.requestId);
    expect(usage!.metadata.trimmedMessages).toBeGreaterThanOrEqual(4);
  });
});

describe('POST /v1/ai/text errors', () => {
  let token: string;
  let userId: string;
  beforeAll(async () => {
    const signed = await signUp(t.app);
    token = signed.accessToken;
    userId = signed.user.id;
  });

  async function expectNothingMoved(run: () => Promise<void>) {
    const before = await walletState(t, userId);
    const usageBefore = await t.platform.db.$count(usageRecords, eq(usageRecords.userId, userId));
    const reservationsBefore = await t.platform.db.$count(walletReservations);
    await run();
    expect(await walletState(t, userId)).toEqual(before);
    expect(await t.platform.db.$count(usageRecords, eq(usageRecords.userId, userId))).toBe(usageBefore);
    expect(await t.platform.db.$count(walletReservations)).toBe(reservationsBefore);
  }

  it('answers 401 without a token', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/v1/ai/text', payload: hello });
    expect(response.statusCode).toBe(401);
    expect(json(response).error.code).toBe('UNAUTHORIZED');
  });

  it('answers 404 NOT_FOUND for an unknown model', async () => {
    await expectNothingMoved(async () => {
      const response = await ask(token, { ...hello, model: 'local/does-not-exist' });
      expect(response.statusCode).toBe(404);
      expect(json(response).error).toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining('local/does-not-exist') });
    });
  });

  it('answers 503 MODEL_UNAVAILABLE before reserving for a provider without a working credential', async () => {
    await expectNothingMoved(async () => {
      const response = await ask(token, { ...hello, model: 'openai/gpt-4o-mini' });
      expect(response.statusCode).toBe(503);
      expect(json(response).error.code).toBe('MODEL_UNAVAILABLE');
    });
  });

  it('never serves a model without a price (MODEL_UNAVAILABLE, not billed at zero)', async () => {
    const [row] = await t.platform.db.select().from(models).where(eq(models.slug, TEXT_MODEL));
    await t.platform.db.update(models).set({ pricing: null }).where(eq(models.id, row!.id));
    t.services.catalog.invalidate();
    try {
      await expectNothingMoved(async () => {
        const response = await ask(token, hello);
        expect(response.statusCode).toBe(503);
        expect(json(response).error).toMatchObject({ code: 'MODEL_UNAVAILABLE', message: expect.stringContaining('price') });
      });
    } finally {
      await t.platform.db.update(models).set({ pricing: row!.pricing }).where(eq(models.id, row!.id));
      t.services.catalog.invalidate();
    }
  });

  it('answers 503 MODEL_UNAVAILABLE for a disabled model', async () => {
    await t.platform.db.update(models).set({ status: 'DISABLED' }).where(eq(models.slug, TEXT_MODEL));
    t.services.catalog.invalidate();
    try {
      await expectNothingMoved(async () => {
        const response = await ask(token, hello);
        expect(response.statusCode).toBe(503);
        expect(json(response).error.code).toBe('MODEL_UNAVAILABLE');
      });
    } finally {
      await t.platform.db.update(models).set({ status: 'ACTIVE' }).where(eq(models.slug, TEXT_MODEL));
      t.services.catalog.invalidate();
    }
  });

  it('answers 400 for a model that does not write text', async () => {
    await expectNothingMoved(async () => {
      const response = await ask(token, { ...hello, model: 'local/image' });
      expect(response.statusCode).toBe(400);
      expect(json(response).error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('TEXT or MULTIMODAL') });
    });
  });

  it('answers 403 MODEL_NOT_IN_PLAN when the plan does not grant the model', async () => {
    const other = await signUp(t.app);
    await setPlan(t, other.user.id, 'internal-playground');
    const response = await ask(other.accessToken, hello);
    expect(response.statusCode).toBe(403);
    expect(json(response).error).toMatchObject({ code: 'MODEL_NOT_IN_PLAN', details: { model: TEXT_MODEL, plan: 'internal-playground' } });
    expect(await t.platform.db.$count(usageRecords, eq(usageRecords.userId, other.user.id))).toBe(0);
  });

  it('answers 403 NO_ACTIVE_SUBSCRIPTION without a plan', async () => {
    const other = await signUp(t.app);
    await t.platform.db.update(subscriptions).set({ status: 'EXPIRED' }).where(eq(subscriptions.userId, other.user.id));
    const before = await walletState(t, other.user.id);
    const response = await ask(other.accessToken, hello);
    expect(response.statusCode).toBe(403);
    expect(json(response).error.code).toBe('NO_ACTIVE_SUBSCRIPTION');
    expect(await walletState(t, other.user.id)).toEqual(before);
  });

  it('answers 429 QUOTA_EXCEEDED with details.shortfallTokens when the balance cannot cover the reservation', async () => {
    const other = await signUp(t.app);
    await setBalance(t, other.user.id, 10);
    const response = await ask(other.accessToken, hello);
    expect(response.statusCode).toBe(429);
    const { error } = json(response);
    expect(error.code).toBe('QUOTA_EXCEEDED');
    expect(error.details.shortfallTokens).toBeGreaterThan(0);
    expect(await walletState(t, other.user.id)).toEqual({ balance: 10, ledgerSum: 10 });
    expect(await t.platform.db.$count(usageRecords, eq(usageRecords.userId, other.user.id))).toBe(0);
  });

  it.each([
    ['a missing model', { messages: hello.messages }, 'model'],
    ['missing messages', { model: TEXT_MODEL }, 'messages'],
    ['empty messages', { model: TEXT_MODEL, messages: [] }, 'messages'],
    ['an unknown role', { model: TEXT_MODEL, messages: [{ role: 'robot', content: 'x' }] }, 'messages.0.role'],
    [
      'a tool result without its call id',
      {
        model: TEXT_MODEL,
        messages: [
          { role: 'user', content: 'x' },
          { role: 'tool', content: 'x' },
        ],
      },
      'messages.1.toolCallId',
    ],
    ['an empty message', { model: TEXT_MODEL, messages: [{ role: 'user', content: '' }] }, 'messages.0.content'],
    ['a message of the wrong type', { model: TEXT_MODEL, messages: [{ role: 'user', content: 42 }] }, 'messages.0.content'],
    ['an unknown field in a message', { model: TEXT_MODEL, messages: [{ role: 'user', content: 'x', name: 'bob' }] }, 'messages.0.name'],
    ['an over-long message', { model: TEXT_MODEL, messages: [{ role: 'user', content: 'x'.repeat(200_001) }] }, 'messages.0.content'],
    ['maxTokens of 0', { ...hello, maxTokens: 0 }, 'maxTokens'],
    ['a fractional maxTokens', { ...hello, maxTokens: 1.5 }, 'maxTokens'],
    ['a temperature above 2', { ...hello, temperature: 3 }, 'temperature'],
    ['a non-boolean stream', { ...hello, stream: 'yes' }, 'stream'],
    ['an unknown field', { ...hello, topN: 3 }, 'topN'],
    ['a parameter that changes the answer and the model cannot honour', { ...hello, presencePenalty: 0.5 }, 'presencePenalty'],
    ['an over-long model slug', { ...hello, model: 'm'.repeat(201) }, 'model'],
    ['no user message', { model: TEXT_MODEL, messages: [{ role: 'system', content: 'Be brief.' }] }, 'messages'],
    ['maxTokens above what the model can write', { ...hello, maxTokens: 5000 }, 'maxTokens'],
  ])('refuses %s with 400 naming the field, moving nothing', async (_label, payload, field) => {
    await expectNothingMoved(async () => {
      const response = await ask(token, payload);
      expect(response.statusCode).toBe(400);
      const { error } = json(response);
      expect(error.code).toBe('BAD_REQUEST');
      expect(error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
    });
  });

  it('refuses messages that with maxTokens do not fit the context window', async () => {
    await expectNothingMoved(async () => {
      const response = await ask(token, { model: TEXT_MODEL, maxTokens: 4000, messages: [{ role: 'user', content: 'lighthouse '.repeat(5000) }] });
      expect(response.statusCode).toBe(400);
      expect(json(response).error.message).toMatch(/context/);
    });
  });
});

describe('POST /v1/ai/enhance/prompt', () => {
  it.each(['text', 'image', 'video', 'audio', 'audio.speech', 'audio.music', 'audio.sfx'])(
    'rewrites a prompt for target %s, metered and not saved',
    async (target) => {
      const { accessToken, user } = await signUp(t.app);
      const before = await walletState(t, user.id);
      const response = await enhance(accessToken, { model: MULTIMODAL_MODEL, prompt: 'a lighthouse in a storm', target });
      expect(response.statusCode).toBe(200);
      const body = json(response);
      expect(Object.keys(body)).toEqual(['enhanced']);
      expect(body.enhanced.toLowerCase()).toContain('lighthouse in a storm');
      expect(body.enhanced.length).toBeGreaterThan('a lighthouse in a storm'.length);
      const after = await walletState(t, user.id);
      expect(after.balance).toBeLessThan(before.balance);
      expect(after.ledgerSum).toBe(after.balance);
      const [usage] = await t.platform.db
        .select()
        .from(usageRecords)
        .where(and(eq(usageRecords.userId, user.id), eq(usageRecords.operation, 'prompt.enhance')));
      expect(usage).toMatchObject({ status: 'SUCCESS', tokensConsumed: before.balance - after.balance });
      expect(await t.platform.db.$count(generations, eq(generations.userId, user.id))).toBe(0);
    },
  );

  it('defaults to the text target and treats bare audio as speech', async () => {
    const { accessToken } = await signUp(t.app);
    const plain = json(await enhance(accessToken, { model: MULTIMODAL_MODEL, prompt: 'a lighthouse' }));
    const text = json(await enhance(accessToken, { model: MULTIMODAL_MODEL, prompt: 'a lighthouse', target: 'text' }));
    expect(plain.enhanced).toBe(text.enhanced);
    const audio = json(await enhance(accessToken, { model: MULTIMODAL_MODEL, prompt: 'a lighthouse', target: 'audio' }));
    const speech = json(await enhance(accessToken, { model: MULTIMODAL_MODEL, prompt: 'a lighthouse', target: 'audio.speech' }));
    expect(audio.enhanced).toBe(speech.enhanced);
  });

  it('answers 400 for a model that is not multimodal, moving nothing', async () => {
    const { accessToken, user } = await signUp(t.app);
    const before = await walletState(t, user.id);
    const response = await enhance(accessToken, { model: TEXT_MODEL, prompt: 'a lighthouse' });
    expect(response.statusCode).toBe(400);
    expect(json(response).error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('multimodal') });
    expect(await walletState(t, user.id)).toEqual(before);
  });

  it.each([
    ['a missing prompt', { model: MULTIMODAL_MODEL }, 'prompt'],
    ['a blank prompt', { model: MULTIMODAL_MODEL, prompt: '   ' }, 'prompt'],
    ['an over-long prompt', { model: MULTIMODAL_MODEL, prompt: 'p'.repeat(8001) }, 'prompt'],
    ['an unknown target', { model: MULTIMODAL_MODEL, prompt: 'x', target: 'audio.podcast' }, 'target'],
    ['an unknown field', { model: MULTIMODAL_MODEL, prompt: 'x', style: 'noir' }, 'style'],
  ])('refuses %s with 400', async (_label, payload, field) => {
    const { accessToken } = await signUp(t.app);
    const response = await enhance(accessToken, payload);
    expect(response.statusCode).toBe(400);
    expect(json(response).error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
  });

  it('answers 401 without a token', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/v1/ai/enhance/prompt', payload: { model: MULTIMODAL_MODEL, prompt: 'x' } });
    expect(response.statusCode).toBe(401);
  });
});
