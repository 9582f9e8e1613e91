import type { AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import { expect } from 'vitest';
import { usageRecords } from '../../src/db/schema/usage.js';
import { startFakeAnthropic } from '../../src/modules/gateway/providers/anthropic/anthropic.fake.js';
import { startFakeOpenAi, type Decide, type FakeUpstream } from '../helpers/fake-upstreams.js';
import { createApiKey, providerEnv, setBalance, setPlan, walletState } from '../helpers/gateway.js';
import { recordingProxy, type SeenRequest } from '../helpers/recording-proxy.js';
import { createTestApp, signUp, type TestApp } from '../helpers/test-app.js';

/**
 * What the agent-framework tests share: the real app on a port, fake OpenAI and Anthropic upstreams behind it, and a
 * recording proxy in front of it, so each framework is configured exactly as a user would (a base URL and a key, no
 * custom fetch) while the test still sees every call it made, the status it got and the gateway's request id.
 */

/** A call a framework made; its body parsed as JSON where it is JSON. */
export type SeenCall = SeenRequest<any>;

export interface FrameworkHarness {
  t: TestApp;
  /** The proxy's origin: what a framework's base URL points at. */
  origin: string;
  key: string;
  userId: string;
  seen: SeenCall[];
  openai: FakeUpstream;
  anthropic: FakeUpstream;
  /** Replaces what the fake OpenAI (or Anthropic) upstream answers to model calls. */
  decideOpenAi(decide: Decide): void;
  decideAnthropic(decide: Decide): void;
  close(): Promise<void>;
}

function parsed(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/** The app with both fakes, the proxy, and a user on a plan with API access holding an `ai:text` key. */
export async function startFrameworkHarness(): Promise<FrameworkHarness> {
  let openAiDecide: Decide = () => ({ kind: 'ok' });
  let anthropicDecide: Decide = () => ({ kind: 'ok' });
  const openai = await startFakeOpenAi((request) => (request.method === 'GET' ? { kind: 'ok' } : openAiDecide(request)));
  const anthropic = await startFakeAnthropic((request) => (request.method === 'GET' ? { kind: 'ok' } : anthropicDecide(request)));
  const t = await createTestApp({
    env: { ...providerEnv('OPENAI', openai.baseUrl, ['sk-frameworks-0001']), ...providerEnv('ANTHROPIC', anthropic.origin, ['sk-ant-frameworks-1']) },
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const seen: SeenCall[] = [];
  const proxy = recordingProxy(`http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`, seen, parsed);
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const { accessToken, user } = await signUp(t.app);
  await setPlan(t, user.id, 'starter');
  // Thinking budgets are reserved up front on Sonnet's prices: room for a few of them.
  await setBalance(t, user.id, 5_000_000);
  const { key } = await createApiKey(t, accessToken, ['ai:text']);
  return {
    t,
    origin: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    key,
    userId: user.id,
    seen,
    openai,
    anthropic,
    decideOpenAi: (decide) => void (openAiDecide = decide),
    decideAnthropic: (decide) => void (anthropicDecide = decide),
    async close() {
      await new Promise((resolve) => proxy.close(resolve));
      await t.close();
      await openai.close();
      await anthropic.close();
    },
  };
}

export interface Mark {
  seen: number;
  /** The ids of the usage records already there. */
  records: Set<string>;
  balance: number;
}

const recordsOf = (h: FrameworkHarness) => h.t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, h.userId));

/** Where the calls, usage records and wallet stand before a run, for `expectMetered`. */
export async function mark(h: FrameworkHarness): Promise<Mark> {
  return { seen: h.seen.length, records: new Set((await recordsOf(h)).map((record) => record.id)), balance: (await walletState(h.t, h.userId)).balance };
}

/**
 * The run since `since` made `count` model calls, each answered 200 with its own request id and no field read past,
 * each metered exactly once (one SUCCESS `text.generate` record per request id and no other), and the wallet moved by exactly their total.
 * Returns the calls, for the test to read what the framework sent.
 */
export async function expectMetered(h: FrameworkHarness, since: Mark, count: number): Promise<SeenCall[]> {
  const calls = h.seen.slice(since.seen).filter((call) => call.method === 'POST');
  const report = JSON.stringify(
    calls.map(({ url, status, requestId, ignored, body, answer }) => ({ url, status, requestId, ignored, body, answer: answer.slice(0, 2000) })),
    null,
    2,
  );
  expect(
    calls.map((call) => call.status),
    report,
  ).toEqual(Array.from({ length: count }, () => 200));
  // Every field the framework sent was taken: none was read past and named in x-storefront-ignored.
  expect(
    calls.map((call) => call.ignored),
    report,
  ).toEqual(Array.from({ length: count }, () => null));
  const ids = calls.map((call) => call.requestId);
  expect(ids.every(Boolean), report).toBe(true);
  expect(new Set(ids).size).toBe(count);
  const records = (await recordsOf(h)).filter((record) => !since.records.has(record.id));
  expect(records.map((record) => record.requestId).sort()).toEqual([...ids].sort());
  expect(records.every((record) => record.status === 'SUCCESS' && record.operation === 'text.generate')).toBe(true);
  const after = await walletState(h.t, h.userId);
  const total = records.reduce((sum, record) => sum + record.tokensConsumed, 0);
  expect(total).toBeGreaterThan(0);
  expect(after.balance).toBe(since.balance - total);
  expect(after.ledgerSum).toBe(after.balance);
  return calls;
}
