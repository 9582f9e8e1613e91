import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { generations } from '../../../db/schema/library.js';
import { usageRecords } from '../../../db/schema/usage.js';
import { startFakeAnthropic } from '../providers/anthropic/anthropic.fake.js';
import { startFakeOpenAi, type Decide, type FakeUpstream } from '../../../../test/helpers/fake-upstreams.js';
import { ledgerOf, parseSse, providerEnv, walletState } from '../../../../test/helpers/gateway.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../../test/helpers/test-app.js';
import { countTextTokens } from '../text/tokens.js';

/** The text gateway against fake OpenAI and Anthropic servers speaking their real wire formats. */
let openai: FakeUpstream;
let anthropic: FakeUpstream;
let t: TestApp;
let token: string;
let userId: string;
let decideOpenAi: Decide = () => ({ kind: 'ok' });
let decideAnthropic: Decide = () => ({ kind: 'ok' });

beforeAll(async () => {
  openai = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : decideOpenAi(request)));
  anthropic = await startFakeAnthropic((request) => (request.method === 'GET' ? { kind: 'ok' } : decideAnthropic(request)));
  t = await createTestApp({
    env: { ...providerEnv('OPENAI', openai.baseUrl, ['sk-openai-test-1']), ...providerEnv('ANTHROPIC', anthropic.origin, ['sk-ant-test-1']) },
  });
  const signed = await signUp(t.app);
  token = signed.accessToken;
  userId = signed.user.id;
});
afterAll(async () => {
  await t?.close();
  await openai?.close();
  await anthropic?.close();
});
beforeEach(() => {
  decideOpenAi = () => ({ kind: 'ok' });
  decideAnthropic = () => ({ kind: 'ok' });
});

const ask = (payload: unknown) => t.app.inject({ method: 'POST', url: '/v1/ai/text', headers: bearer(token), payload: payload as object });
const conversation = [
  { role: 'user', content: 'Hi' },
  { role: 'system', content: 'Answer like a pirate.' },
  { role: 'assistant', content: 'Ahoy' },
  { role: 'user', content: 'Tell me about lighthouses' },
];

async function priceOf(slug: string, inputTokens: number, outputTokens: number) {
  const model = await t.services.catalog.resolveForGateway(slug);
  return (await t.services.catalog.priceUsage(model, { inputTokens, outputTokens })).tokens;
}

describe('OpenAI-compatible provider through the gateway', () => {
  it("sends the server instruction first, then the caller's system message, then the conversation; default maxTokens 2048", async () => {
    decideOpenAi = () => ({ kind: 'ok', text: 'Arr, lighthouses guide ships.', usage: { inputTokens: 120, outputTokens: 9 } });
    const response = await ask({ model: 'openai/gpt-4o-mini', messages: conversation, temperature: 0.3 });
    expect(response.statusCode).toBe(200);
    const body = json(response);
    expect(body.text).toBe('Arr, lighthouses guide ships.');
    expect(body.usage).toEqual({ inputTokens: 120, outputTokens: 9, creditsConsumed: await priceOf('openai/gpt-4o-mini', 120, 9) });

    const sent = openai.calls().at(-1)!;
    expect(sent.apiKey).toBe('sk-openai-test-1');
    expect(sent.body.model).toBe('gpt-4o-mini');
    expect(sent.body.max_completion_tokens).toBe(2048);
    expect(sent.body.temperature).toBe(0.3);
    expect(sent.body.messages.map((m: { role: string }) => m.role)).toEqual(['system', 'system', 'user', 'assistant', 'user']);
    expect(sent.body.messages[0].content).toMatch(/helpful/);
    expect(sent.body.messages[1].content).toBe('Answer like a pirate.');
    expect(sent.body.messages.slice(2).map((m: { content: string }) => m.content)).toEqual(['Hi', 'Ahoy', 'Tell me about lighthouses']);

    const [saved] = await t.platform.db.select().from(generations).where(eq(generations.requestId, body.requestId));
    expect(saved).toMatchObject({ kind: 'TEXT', prompt: 'Tell me about lighthouses', output: { text: 'Arr, lighthouses guide ships.' } });
  });

  it('leaves temperature out for models that do not honour it', async () => {
    const response = await ask({ model: 'openai/gpt-5-mini', messages: conversation, temperature: 0.3 });
    expect(response.statusCode).toBe(200);
    expect(openai.calls().at(-1)!.body.temperature).toBeUndefined();
  });

  it('bills a sync answer without usage from a real count of its text', async () => {
    decideOpenAi = () => ({ kind: 'ok', text: 'Counted by the gateway itself.', usage: 'none' });
    const body = json(await ask({ model: 'openai/gpt-4o-mini', messages: conversation }));
    expect(body.usage.outputTokens).toBe(countTextTokens('Counted by the gateway itself.'));
    const [usage] = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.requestId, body.requestId));
    expect(usage!.metadata).toMatchObject({ usageSource: 'counted' });
  });

  it("streams, asks upstream for the final usage and bills the provider's own numbers", async () => {
    decideOpenAi = () => ({ kind: 'ok', text: 'one two three four', usage: { inputTokens: 300, outputTokens: 77 } });
    const before = await walletState(t, userId);
    const response = await ask({ model: 'openai/gpt-4o-mini', messages: conversation, stream: true });
    expect(response.statusCode).toBe(200);
    expect(openai.calls().at(-1)!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const events = parseSse(response.body);
    expect(events.filter((e) => e.type === 'text').map((e) => e.delta)).toEqual(['one ', 'two ', 'three ', 'four']);
    expect(events.slice(-2)).toEqual([
      { type: 'usage', usage: { inputTokens: 300, outputTokens: 77 } },
      { type: 'finish', finishReason: 'stop' },
    ]);
    const after = await walletState(t, userId);
    expect(before.balance - after.balance).toBe(await priceOf('openai/gpt-4o-mini', 300, 77));
    expect(after.ledgerSum).toBe(after.balance);
  });

  it('bills a stream that ends without usage from a real token count of the delivered text', async () => {
    const text = 'The keeper climbed the stairs and lit the great lamp at dusk.';
    decideOpenAi = () => ({ kind: 'ok', text, usage: 'none' });
    const before = await walletState(t, userId);
    const events = parseSse((await ask({ model: 'openai/gpt-4o-mini', messages: conversation, stream: true })).body);
    const usageEvent = events.find((e) => e.type === 'usage')!;
    expect(usageEvent.usage.outputTokens).toBe(countTextTokens(text));
    const charged = before.balance - (await walletState(t, userId)).balance;
    expect(charged).toBe(await priceOf('openai/gpt-4o-mini', usageEvent.usage.inputTokens, countTextTokens(text)));
  });

  it('ends a stream that breaks midway with an error event and bills only the text delivered, never the error text', async () => {
    decideOpenAi = () => ({ kind: 'midway', text: 'alpha beta gamma delta epsilon zeta', afterChunks: 3, how: 'error-event' });
    const before = await walletState(t, userId);
    const response = await ask({ model: 'openai/gpt-4o-mini', messages: conversation, stream: true });
    expect(response.statusCode).toBe(200);
    const events = parseSse(response.body);
    expect(
      events
        .filter((e) => e.type === 'text')
        .map((e) => e.delta)
        .join(''),
    ).toBe('alpha beta gamma ');
    const errorEvent = events.at(-1)!;
    expect(errorEvent).toEqual({
      type: 'error',
      error: { code: 'PROVIDER_UNAVAILABLE', message: expect.stringContaining('middle of the answer'), chargedTokens: expect.any(Number) },
    });
    expect(events.some((e) => e.type === 'finish')).toBe(false);

    const after = await walletState(t, userId);
    const [usage] = (await t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId))).slice(-1);
    expect(usage).toMatchObject({ status: 'PARTIAL', outputUnits: countTextTokens('alpha beta gamma ') });
    expect(before.balance - after.balance).toBe(usage!.tokensConsumed);
    expect(usage!.tokensConsumed).toBe(await priceOf('openai/gpt-4o-mini', usage!.inputUnits, countTextTokens('alpha beta gamma ')));
    // The error event says what the ledger took.
    expect(errorEvent.error.chargedTokens).toBe(usage!.tokensConsumed);
    expect(errorEvent.error.message).toContain(`The text delivered so far was charged: ${usage!.tokensConsumed} tokens.`);
    expect(after.ledgerSum).toBe(after.balance);
    expect(await t.platform.db.$count(generations, eq(generations.requestId, usage!.requestId))).toBe(0);
  });

  it.each(['disconnect', 'close'] as const)('ends a stream whose upstream connection %ss midway with an error event', async (how) => {
    decideOpenAi = () => ({ kind: 'midway', text: 'alpha beta gamma delta', afterChunks: 2, how });
    const events = parseSse((await ask({ model: 'openai/gpt-4o-mini', messages: conversation, stream: true })).body);
    expect(events.filter((e) => e.type === 'text').length).toBe(2);
    expect(events.at(-1)?.type).toBe('error');
  });

  it('refunds in full a stream that breaks before any text, ending it with an error event', async () => {
    decideOpenAi = () => ({ kind: 'midway', text: 'never sent', afterChunks: 0, how: 'error-event' });
    const before = await walletState(t, userId);
    const response = await ask({ model: 'openai/gpt-4o-mini', messages: conversation, stream: true });
    const events = parseSse(response.body);
    expect(events.map((e) => e.type)).toEqual(['error']);
    expect(events[0]!.error).toMatchObject({ chargedTokens: 0, message: expect.stringContaining('Nothing was charged.') });
    expect(await walletState(t, userId)).toEqual(before);
    const [usage] = (await t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId))).slice(-1);
    expect(usage).toMatchObject({ status: 'FAILED', tokensConsumed: 0 });
    const ledger = await ledgerOf(t, usage!.requestId);
    expect(ledger.map((r) => r.kind)).toEqual(['USAGE', 'REFUND']);
  });

  it('answers errors before the stream starts as JSON, not as events', async () => {
    decideOpenAi = () => ({ kind: 'error', status: 403 });
    const response = await ask({ model: 'openai/gpt-4o-mini', messages: conversation, stream: true });
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toMatch(/application\/json/);
    expect(json(response).error.code).toBe('BAD_REQUEST');
  });
});

describe('Anthropic provider through the gateway', () => {
  it('sends system text in the system field, server instruction first, and bills the reported usage', async () => {
    decideAnthropic = () => ({ kind: 'ok', text: 'Lighthouses warn sailors.', usage: { inputTokens: 55, outputTokens: 6 } });
    const response = await ask({ model: 'anthropic/claude-haiku-4-5', messages: conversation, maxTokens: 300 });
    expect(response.statusCode).toBe(200);
    const body = json(response);
    expect(body).toMatchObject({
      text: 'Lighthouses warn sailors.',
      usage: { inputTokens: 55, outputTokens: 6, creditsConsumed: await priceOf('anthropic/claude-haiku-4-5', 55, 6) },
    });
    const sent = anthropic.calls().at(-1)!;
    expect(sent.apiKey).toBe('sk-ant-test-1');
    expect(sent.body.model).toBe('claude-haiku-4-5-20251001');
    expect(sent.body.max_tokens).toBe(300);
    expect(sent.body.system).toMatch(/^You are a helpful[\s\S]*\n\nAnswer like a pirate\.$/);
    expect(sent.body.messages).toEqual([
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Ahoy' },
      { role: 'user', content: 'Tell me about lighthouses' },
    ]);
  });

  it('streams Anthropic events as text, usage and finish', async () => {
    decideAnthropic = () => ({ kind: 'ok', text: 'red green blue', usage: { inputTokens: 40, outputTokens: 3 }, finishReason: 'max_tokens' });
    const events = parseSse((await ask({ model: 'anthropic/claude-haiku-4-5', messages: conversation, stream: true })).body);
    expect(
      events
        .filter((e) => e.type === 'text')
        .map((e) => e.delta)
        .join(''),
    ).toBe('red green blue');
    expect(events.slice(-2)).toEqual([
      { type: 'usage', usage: { inputTokens: 40, outputTokens: 3 } },
      { type: 'finish', finishReason: 'length' },
    ]);
  });

  it('ends an overloaded stream with an error event', async () => {
    decideAnthropic = () => ({ kind: 'midway', text: 'one two three', afterChunks: 1, how: 'error-event' });
    const events = parseSse((await ask({ model: 'anthropic/claude-haiku-4-5', messages: conversation, stream: true })).body);
    expect(events.map((e) => e.type)).toEqual(['text', 'error']);
  });
});
