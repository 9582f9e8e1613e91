import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { storedResponses } from '../../db/schema/responses.js';
import { subscriptions } from '../../db/schema/subscriptions.js';
import { DAY_MS } from '../../platform/clock/clock.js';
import { startFakeOpenAi, type Decide, type FakeUpstream } from '../../../test/helpers/fake-upstreams.js';
import { verifyEmail } from '../../../test/helpers/email-verification.js';
import { createApiKey, ledgerOf, providerEnv, setPlan, walletState } from '../../../test/helpers/gateway.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';

/** Stored responses: retrieval, input items, deletion, `previous_response_id` chains, ownership, expiry and replays. */

let fake: FakeUpstream;
let t: TestApp;
let decide: Decide = () => ({ kind: 'ok' });
let baseURL: string;

beforeAll(async () => {
  fake = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : decide(request)));
  t = await createTestApp({ env: providerEnv('OPENAI', fake.baseUrl, ['sk-responses-store-0001']) });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseURL = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/openai/v1`;
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const MODEL = 'openai/gpt-4o-mini';
/** The SDK's page type cannot name its items (some item types have no required id), so the tests name them. */
type Item = OpenAI.Responses.ResponseItem;

async function caller(keyControls: Record<string, unknown> = {}) {
  const account = await signUp(t.app);
  await setPlan(t, account.user.id, 'starter');
  const { key } = await createApiKey(t, account.accessToken, ['ai:text'], keyControls);
  return { ...account, userId: account.user.id as string, openai: new OpenAI({ apiKey: key, baseURL, maxRetries: 0 }) };
}
const rowsWithId = (id: string) => t.platform.db.select().from(storedResponses).where(eq(storedResponses.id, id));
const notFound = (run: () => Promise<unknown>) => expect(run()).rejects.toMatchObject({ status: 404, error: { type: 'invalid_request_error' } });

describe("a key's controls on the Responses surface", () => {
  it('refuses a model outside the allow-list and a call over the budget, with nothing charged or stored', async () => {
    const limited = await caller({ allowedModels: ['local/text'] });
    const before = await walletState(t, limited.userId);
    const calls = fake.calls().length;
    await expect(limited.openai.responses.create({ model: MODEL, input: 'Hello' })).rejects.toMatchObject({ status: 403, code: 'model_not_allowed_for_key' });
    const allowed = await limited.openai.responses.create({ model: 'local/text', input: 'Hello' });
    expect(allowed.status).toBe('completed');

    const broke = await caller({ budget: { tokens: 1, period: 'day' } });
    const brokeBefore = await walletState(t, broke.userId);
    await expect(broke.openai.responses.create({ model: MODEL, input: 'Hello' })).rejects.toMatchObject({ status: 429, code: 'key_budget_exceeded' });
    expect(await walletState(t, broke.userId)).toEqual(brokeBefore);
    expect((await walletState(t, limited.userId)).balance).toBeLessThan(before.balance); // only the local call was charged
    expect(fake.calls().length).toBe(calls);
    expect(await t.platform.db.select().from(storedResponses).where(eq(storedResponses.userId, broke.userId))).toEqual([]);
  });
});

describe('stored responses', () => {
  it('are retrieved, list their input items page by page, and are deleted', async () => {
    const { openai, userId } = await caller();
    decide = () => ({ kind: 'ok', text: 'Noted.' });
    const input: OpenAI.Responses.ResponseInput = [
      { role: 'developer', content: 'Answer in one word.' },
      { role: 'user', content: 'First' },
      { role: 'user', content: [{ type: 'input_text', text: 'Second' }] },
    ];
    const created = await openai.responses.create({ model: MODEL, input, metadata: { topic: 'lists' } });
    const [row] = await rowsWithId(created.id);
    expect(row).toMatchObject({ ownerType: 'USER', ownerId: userId, userId, previousResponseId: null });
    expect(row!.expiresAt.getTime() - row!.createdAt.getTime()).toBe(30 * DAY_MS);

    expect(await openai.responses.retrieve(created.id)).toEqual(created);

    const newestFirst = await openai.responses.inputItems.list(created.id);
    expect(newestFirst.data.map((item: Item) => item.type === 'message' && item.content[0])).toEqual([
      { type: 'input_text', text: 'Second' },
      { type: 'input_text', text: 'First' },
      { type: 'input_text', text: 'Answer in one word.' },
    ]);
    expect(newestFirst.data.map((item: Item) => item.type === 'message' && item.role)).toEqual(['user', 'user', 'developer']);
    expect(newestFirst.has_more).toBe(false);

    const firstPage = await openai.responses.inputItems.list(created.id, { order: 'asc', limit: 2 });
    expect(firstPage.data).toHaveLength(2);
    expect(firstPage.has_more).toBe(true);
    const secondPage = await firstPage.getNextPage();
    expect(secondPage.data.map((item: Item) => item.id)).toEqual([newestFirst.data[0]!.id]);
    expect(secondPage.has_more).toBe(false);

    const deleted = await openai.delete(`/responses/${created.id}`);
    expect(deleted).toEqual({ id: created.id, object: 'response', deleted: true });
    expect(await rowsWithId(created.id)).toEqual([]);
    await notFound(() => openai.responses.retrieve(created.id));
    await notFound(() => openai.responses.delete(created.id));
    await notFound(() => openai.responses.inputItems.list(created.id));
  });

  it('rebuild a three-turn conversation from previous_response_id, without the earlier instructions', async () => {
    const { openai } = await caller();
    decide = () => ({ kind: 'ok', text: 'Hello, Ana.' });
    const first = await openai.responses.create({ model: MODEL, instructions: 'Be warm.', input: 'My name is Ana.' });
    decide = () => ({ kind: 'ok', text: 'Lisbon is lovely.' });
    const second = await openai.responses.create({ model: MODEL, previous_response_id: first.id, input: 'I live in Lisbon.' });
    expect(second.previous_response_id).toBe(first.id);
    decide = () => ({ kind: 'ok', text: 'Ana, from Lisbon.' });
    const third = await openai.responses.create({ model: MODEL, instructions: 'Be brief.', previous_response_id: second.id, input: 'Who am I?' });

    expect(fake.calls().at(-1)!.body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'My name is Ana.' },
      { role: 'assistant', content: 'Hello, Ana.' },
      { role: 'user', content: 'I live in Lisbon.' },
      { role: 'assistant', content: 'Lisbon is lovely.' },
      { role: 'user', content: 'Who am I?' },
    ]);
    expect(third).toMatchObject({ previous_response_id: second.id, instructions: 'Be brief.', output_text: 'Ana, from Lisbon.' });
    // A response's input items are its own turn's.
    const items = await openai.responses.inputItems.list(third.id);
    expect(items.data).toEqual([
      { type: 'message', id: expect.stringMatching(/^msg_/), role: 'user', status: 'completed', content: [{ type: 'input_text', text: 'Who am I?' }] },
    ]);
  });

  it('continue a function call through previous_response_id with only its output as input', async () => {
    const { openai } = await caller();
    const tool: OpenAI.Responses.FunctionTool = {
      type: 'function',
      name: 'lookup',
      description: 'Looks a word up',
      parameters: { type: 'object', properties: { word: { type: 'string' } } },
      strict: false,
    };
    decide = () => ({ kind: 'ok', toolCalls: [{ id: 'call_1', name: 'lookup', arguments: '{"word":"farol"}' }] });
    const first = await openai.responses.create({ model: MODEL, input: 'What is a farol?', tools: [tool] });
    decide = () => ({ kind: 'ok', text: 'A lighthouse.' });
    await openai.responses.create({
      model: MODEL,
      tools: [tool],
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: 'call_1', output: 'lighthouse' }],
    });
    expect(fake.calls().at(-1)!.body.messages).toEqual([
      { role: 'user', content: 'What is a farol?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"word":"farol"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'lighthouse' },
    ]);
  });

  it("are another caller's 404, and their id cannot be continued", async () => {
    const alice = await caller();
    const bob = await caller();
    decide = () => ({ kind: 'ok', text: 'Private.' });
    const mine = await alice.openai.responses.create({ model: MODEL, input: 'A secret' });
    await notFound(() => bob.openai.responses.retrieve(mine.id));
    await notFound(() => bob.openai.responses.inputItems.list(mine.id));
    await notFound(() => bob.openai.responses.delete(mine.id));
    const before = await walletState(t, bob.userId);
    await expect(bob.openai.responses.create({ model: MODEL, previous_response_id: mine.id, input: 'Go on' })).rejects.toMatchObject({
      status: 404,
      code: 'previous_response_not_found',
      param: 'previous_response_id',
    });
    expect(await walletState(t, bob.userId)).toEqual(before);
    expect(await rowsWithId(mine.id)).toHaveLength(1);
  });

  it('keep nothing with store: false', async () => {
    const { openai } = await caller();
    decide = () => ({ kind: 'ok', text: 'Forgotten.' });
    const response = await openai.responses.create({ model: MODEL, input: 'Do not keep this', store: false });
    expect(response).toMatchObject({ store: false, output_text: 'Forgotten.' });
    expect(await rowsWithId(response.id)).toEqual([]);
    await notFound(() => openai.responses.retrieve(response.id));
    await expect(openai.responses.create({ model: MODEL, previous_response_id: response.id, input: 'Go on' })).rejects.toMatchObject({
      status: 404,
      code: 'previous_response_not_found',
    });
  });

  it('replay an Idempotency-Key: the same response, charged once and stored once', async () => {
    const { openai, userId } = await caller();
    decide = () => ({ kind: 'ok', text: 'Once.', usage: { inputTokens: 20, outputTokens: 2 } });
    const body = { model: MODEL, input: 'Only once, please' };
    const first = await openai.responses.create(body, { headers: { 'Idempotency-Key': 'responses-once' } });
    const calls = fake.calls().length;
    const afterFirst = await walletState(t, userId);
    const replay = await openai.responses.create(body, { headers: { 'Idempotency-Key': 'responses-once' } }).withResponse();
    expect(replay.response.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.data).toEqual(first);
    expect(fake.calls().length).toBe(calls);
    expect(await walletState(t, userId)).toEqual(afterFirst);
    expect(await rowsWithId(first.id)).toHaveLength(1);
    const ledger = await ledgerOf(t, replay.response.headers.get('x-ai-request-id'));
    expect(-ledger.reduce((sum, entry) => sum + entry.amount, 0)).toBe((first.usage as unknown as { tokens_charged: number }).tokens_charged);

    // A streamed replay answers the same stored response, still charged once.
    const stream = openai.responses.stream(body, { headers: { 'Idempotency-Key': 'responses-once' } });
    expect(await stream.finalResponse()).toMatchObject({ id: first.id, output_text: 'Once.' });
    expect(await walletState(t, userId)).toEqual(afterFirst);
    expect(await rowsWithId(first.id)).toHaveLength(1);
  });

  it('keep a streamed response, so it can be retrieved and continued', async () => {
    const { openai } = await caller();
    decide = () => ({ kind: 'ok', text: 'Streamed and kept.' });
    const final = await openai.responses.stream({ model: MODEL, input: 'Stream this' }).finalResponse();
    expect(await openai.responses.retrieve(final.id)).toMatchObject({ id: final.id, status: 'completed', output_text: 'Streamed and kept.' });
    decide = () => ({ kind: 'ok', text: 'Continued.' });
    await openai.responses.create({ model: MODEL, previous_response_id: final.id, input: 'And then?' });
    expect(
      fake
        .calls()
        .at(-1)!
        .body.messages.map((m: { content: string }) => m.content),
    ).toEqual(['Stream this', 'Streamed and kept.', 'And then?']);
  });

  it('expire after 30 days: refused at once, then swept', async () => {
    const { openai } = await caller();
    decide = () => ({ kind: 'ok', text: 'Short-lived.' });
    const first = await openai.responses.create({ model: MODEL, input: 'Remember this' });
    const second = await openai.responses.create({ model: MODEL, previous_response_id: first.id, input: 'And this' });
    t.clock.advance(30 * DAY_MS + 1);
    try {
      await notFound(() => openai.responses.retrieve(first.id));
      await expect(openai.responses.create({ model: MODEL, previous_response_id: second.id, input: 'Go on' })).rejects.toMatchObject({
        status: 404,
        code: 'previous_response_not_found',
      });
      expect(await rowsWithId(first.id)).toHaveLength(1);
      const [purge] = t.services.responses.jobs();
      await purge!.handler({}, { id: 'test', retryCount: 0 });
      expect(await rowsWithId(first.id)).toEqual([]);
      expect(await rowsWithId(second.id)).toEqual([]);
    } finally {
      t.clock.advance(-(30 * DAY_MS + 1));
    }
  });
});

describe('stored responses of a deleted account', () => {
  it('go with the account', async () => {
    const { openai, accessToken, password } = await caller();
    decide = () => ({ kind: 'ok', text: 'Mine.' });
    const response = await openai.responses.create({ model: MODEL, input: 'Keep this' });
    expect(await rowsWithId(response.id)).toHaveLength(1);
    expect((await t.app.inject({ method: 'POST', url: '/v1/account/delete', headers: bearer(accessToken), payload: { password } })).statusCode).toBe(200);
    expect(await rowsWithId(response.id)).toEqual([]);
  });
});

describe('stored responses of a workspace', () => {
  it('belong to the workspace whose subscription the call metered against', async () => {
    const owner = await signUp(t.app);
    const member = await signUp(t.app);
    const outsider = await signUp(t.app);
    await verifyEmail(t, member);
    const call = (token: string, method: 'GET' | 'POST', url: string, payload?: object) =>
      t.app.inject({ method, url, headers: bearer(token), ...(payload ? { payload } : {}) });
    const workspace = json(await call(owner.accessToken, 'POST', '/v1/workspaces', { name: 'Shared answers' }));
    const { token } = json(await call(owner.accessToken, 'POST', `/v1/workspaces/${workspace.id}/invitations`, { email: member.email }));
    expect((await call(member.accessToken, 'POST', '/v1/workspaces/invitations/accept', { token })).statusCode).toBe(200);
    await t.platform.db.update(subscriptions).set({ workspaceId: workspace.id }).where(eq(subscriptions.userId, owner.user.id));
    t.services.subscriptions.forgetCached(owner.user.id);
    await t.services.wallet.credit({
      workspaceId: workspace.id,
      kind: 'ADJUSTMENT',
      amount: 5_000_000,
      idempotencyKey: `responses-ws:${workspace.id}`,
      note: 'test funding',
    });

    const created = await call(member.accessToken, 'POST', '/openai/v1/responses', { model: 'local/text', input: 'A shared note' });
    expect(created.statusCode).toBe(200);
    const id = json(created).id as string;
    expect((await rowsWithId(id))[0]).toMatchObject({ ownerType: 'WORKSPACE', ownerId: workspace.id, userId: member.user.id });
    expect((await call(owner.accessToken, 'GET', `/openai/v1/responses/${id}`)).statusCode).toBe(200);
    const refused = await call(outsider.accessToken, 'GET', `/openai/v1/responses/${id}`);
    expect(refused.statusCode).toBe(404);
    expect(json(refused).error).toMatchObject({ type: 'invalid_request_error', code: 'not_found' });
  });
});
