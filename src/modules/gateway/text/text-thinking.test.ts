import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { usageRecords } from '../../../db/schema/usage.js';
import { createTestApp, signUp, type TestApp } from '../../../../test/helpers/test-app.js';
import { createApiKey, parseSse, providerEnv, setBalance, setPlan, walletState } from '../../../../test/helpers/gateway.js';
import { startFakeAnthropic } from '../providers/anthropic/anthropic.fake.js';
import { signatureOf } from '../providers/anthropic/anthropic-thinking.fake.js';
import type { Decide, FakeUpstream } from '../../../../test/helpers/fake-upstreams.js';

/**
 * `thinking` on an assistant message of POST /v1/ai/text: the answer's blocks, sent back unchanged, reach Anthropic
 * first in that turn (it refuses a tool-use follow-up without them); on any other role the field is a 400.
 */

const MODEL = 'anthropic/claude-sonnet-4-6';
let fake: FakeUpstream;
let t: TestApp;
let decide: Decide = () => ({ kind: 'ok' });
let apiKey: string;
let userId: string;

beforeAll(async () => {
  fake = await startFakeAnthropic((request) => (request.method === 'GET' ? { kind: 'ok' } : decide(request)));
  t = await createTestApp({ env: providerEnv('ANTHROPIC', fake.origin, ['sk-ant-text-thinking']) });
  const { accessToken, user } = await signUp(t.app);
  userId = user.id;
  await setPlan(t, userId, 'starter');
  await setBalance(t, userId, 5_000_000);
  apiKey = (await createApiKey(t, accessToken, ['ai:text'])).key;
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

type Block = { type: 'thinking'; thinking: string; signature: string } | { type: 'redacted_thinking'; data: string };
type ToolCall = { id: string; name: string; arguments: string };
type Answer = { text: string; requestId: string; toolCalls?: ToolCall[]; thinking?: Block[] };

const sent = () => fake.calls().at(-1)!.body as Record<string, any>;
const recordsOf = () => t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, userId));
const tools = [
  { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
];
const question = { role: 'user', content: 'What is the weather in Paris?' };
const resultOf = (callId: string) => ({ role: 'tool', toolCallId: callId, content: '18°C and sunny' });
const ask = (messages: unknown[], extra: Record<string, unknown> = {}) =>
  t.app.inject({
    method: 'POST',
    url: '/v1/ai/text',
    headers: { authorization: `Bearer ${apiKey}` },
    payload: { model: MODEL, maxTokens: 1000, reasoning: { effort: 'low' }, tools, messages, ...extra },
  });
const toolTurn = () => {
  decide = (request) =>
    (request.body as { messages: unknown[] }).messages.length === 1
      ? { kind: 'ok', text: '', toolCalls: [{ id: 'toolu_text_1', name: 'get_weather', arguments: '{"city":"Paris"}' }] }
      : { kind: 'ok', text: 'Sunny, 18°C.' };
};

async function expectMeteredOnce(requestIds: string[]) {
  const records = await recordsOf();
  for (const requestId of requestIds) expect(records.filter((r) => r.requestId === requestId)).toHaveLength(1);
}

describe('thinking sent back on POST /v1/ai/text', () => {
  it('a streamed Idempotency-Key replay streams the same thinking, signature included, uncharged', async () => {
    toolTurn();
    const keyed = (key: string) =>
      t.app.inject({
        method: 'POST',
        url: '/v1/ai/text',
        headers: { authorization: `Bearer ${apiKey}`, 'idempotency-key': key },
        payload: { model: MODEL, maxTokens: 1000, reasoning: { effort: 'low' }, tools, messages: [question], stream: true },
      });
    const thinkingOf = (body: string) => parseSse(body).filter((e) => e.type === 'thinking');
    const first = await keyed('thinking-replay-1');
    const balance = (await walletState(t, userId)).balance;
    const calls = fake.calls().length;
    const again = await keyed('thinking-replay-1');
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(fake.calls().length).toBe(calls);
    expect((await walletState(t, userId)).balance).toBe(balance);
    const join = (events: ReturnType<typeof thinkingOf>) => ({
      text: events.map((e) => e.delta ?? '').join(''),
      signature: events.find((e) => e.signature)?.signature,
    });
    const original = join(thinkingOf(first.body));
    expect(original.text.length).toBeGreaterThan(0);
    expect(original.signature).toBe(signatureOf(original.text));
    expect(join(thinkingOf(again.body))).toEqual(original);
  });

  it("takes the answer's thinking back through a tool turn; without it the provider refuses", async () => {
    toolTurn();
    const before = (await recordsOf()).length;
    const first = (await ask([question])).json<Answer>();
    const block = first.thinking![0]!;
    expect(block).toEqual({ type: 'thinking', thinking: expect.stringContaining('think'), signature: signatureOf((block as { thinking: string }).thinking) });

    const turn = { role: 'assistant', content: '', toolCalls: first.toolCalls, thinking: first.thinking };
    const second = await ask([question, turn, resultOf(first.toolCalls![0]!.id)]);
    expect(second.statusCode).toBe(200);
    expect(sent().messages[1].content[0]).toEqual(block);
    expect(second.json<Answer>().text).toBe('Sunny, 18°C.');

    const refused = await ask([question, { role: 'assistant', content: '', toolCalls: first.toolCalls }, resultOf(first.toolCalls![0]!.id)]);
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error.message).toContain('must start with a thinking block');

    const records = (await recordsOf()).slice(before);
    expect(records.map((r) => r.status).sort()).toEqual(['FAILED', 'SUCCESS', 'SUCCESS']);
    await expectMeteredOnce([first.requestId, second.json<Answer>().requestId]);
  });

  it("rebuilds the blocks from the stream's thinking events and sends them back", async () => {
    toolTurn();
    const streamed = await ask([question], { stream: true });
    expect(streamed.statusCode).toBe(200);
    const events = parseSse(streamed.body);
    const blocks: Block[] = [];
    for (const e of events.filter((e) => e.type === 'thinking')) {
      const b = (blocks[e.index] ??= { type: 'thinking', thinking: '', signature: '' }) as { thinking: string; signature: string };
      b.thinking += e.delta ?? '';
      b.signature += e.signature ?? '';
    }
    const call = events.find((e) => e.type === 'tool_call' && e.id)!;
    expect(blocks).toEqual([
      { type: 'thinking', thinking: expect.stringContaining('think'), signature: signatureOf((blocks[0] as { thinking: string }).thinking) },
    ]);

    const turn = { role: 'assistant', content: '', toolCalls: [{ id: call.id, name: call.name, arguments: '{"city":"Paris"}' }], thinking: blocks };
    const second = await ask([question, turn, resultOf(call.id)], { stream: true });
    expect(second.statusCode).toBe(200);
    expect(sent().messages[1].content[0]).toEqual(blocks[0]);
    expect(
      parseSse(second.body)
        .filter((e) => e.type === 'text')
        .map((e) => e.delta)
        .join(''),
    ).toBe('Sunny, 18°C.');
    await expectMeteredOnce([streamed.headers['x-ai-request-id'] as string, second.headers['x-ai-request-id'] as string]);
  });

  it('passes a redacted block and leaves out an unsigned one', async () => {
    decide = () => ({ kind: 'ok', text: 'Sunny.' });
    const thinking = [
      { type: 'thinking', thinking: 'Plain reasoning text.', signature: '' },
      { type: 'redacted_thinking', data: 'EncryptedByAnthropic==' },
    ];
    const call = { id: 'toolu_text_2', name: 'get_weather', arguments: '{"city":"Paris"}' };
    const answer = await ask([question, { role: 'assistant', content: '', toolCalls: [call], thinking }, resultOf(call.id)]);
    expect(answer.statusCode).toBe(200);
    const blocks = sent().messages[1].content as { type: string }[];
    expect(blocks[0]).toEqual({ type: 'redacted_thinking', data: 'EncryptedByAnthropic==' });
    expect(blocks.filter((b) => b.type === 'thinking')).toHaveLength(0);
  });

  it('refuses thinking on another role, or a malformed block, with a 400 and nothing charged', async () => {
    const signed = { type: 'thinking', thinking: 'A thought.', signature: signatureOf('A thought.') };
    const call = { id: 'toolu_text_3', name: 'get_weather', arguments: '{}' };
    const cases: [unknown[], string][] = [
      [[{ ...question, thinking: [signed] }], 'messages.0.thinking'],
      [
        [question, { role: 'assistant', content: '', toolCalls: [call], thinking: [{ type: 'thinking', thinking: 'No signature.' }] }, resultOf(call.id)],
        'messages.1.thinking.0',
      ],
    ];
    for (const [messages, field] of cases) {
      const before = await walletState(t, userId);
      const calls = fake.calls().length;
      const refused = await ask(messages);
      expect(refused.statusCode).toBe(400);
      expect(refused.json().error.details[0].field).toMatch(new RegExp(`^${field.replace(/\./g, '\\.')}`));
      expect(await walletState(t, userId)).toEqual(before);
      expect(fake.calls().length).toBe(calls);
    }
  });
});
