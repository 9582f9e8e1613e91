import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eq } from 'drizzle-orm';
import { expect } from 'vitest';
import { models } from '../../src/db/schema/catalog.js';
import { usageRecords } from '../../src/db/schema/usage.js';
import { startAgentUpstreams, type AgentUpstreams } from './fake-agent-upstreams.js';
import { createApiKey, setBalance, setPlan, walletState } from './gateway.js';
import { recordingProxy, type SeenRequest } from './recording-proxy.js';
import { createTestApp, signUp, type TestApp } from './test-app.js';

/**
 * What the coding-agent tests share: the real app on a port behind a recording proxy (every request a CLI made, with
 * the status, the request id and the answer it got), OpenAI and Anthropic accounts pointed at the agent-mode fakes
 * (fake-agent-upstreams.ts), a temporary HOME, the CLI run as a child process in a fresh temp dir with a hard timeout,
 * and the check that each model call was answered and metered exactly once.
 */
export const AGENT_RUN_TIMEOUT_MS = 90_000;
/** A test's time: one CLI run and the checks around it. */
export const AGENT_TEST_TIMEOUT_MS = AGENT_RUN_TIMEOUT_MS + 30_000;

/**
 * The models an agent is pointed at besides the built-in one: an OpenAI reasoning model and an Anthropic thinking model
 * that takes a thinking budget (Claude Code asks the 4.6 models for adaptive thinking instead, which the gateway lowers
 * to a budget, so their budget would not be the one the agent set).
 */
export const OPENAI_MODEL = 'openai/gpt-5';
export const ANTHROPIC_MODEL = 'anthropic/claude-haiku-4-5';

export interface AgentHarness {
  t: TestApp;
  upstreams: AgentUpstreams;
  /** The proxy's origin: what the CLI's base URL points at. */
  origin: string;
  home: string;
  seen: SeenRequest[];
  /** Forgets what the proxy and the fakes saw (each run starts from nothing). */
  reset(): void;
  close(): Promise<void>;
}

/**
 * Starts the fakes, the app wired to them, and the proxy. An agent's system prompt and tool definitions run past
 * local/text's seeded window (8,192 tokens), which is smaller than any model an agent is pointed at, so the run gets a
 * window of 200,000.
 */
export async function startAgentHarness(name: string): Promise<AgentHarness> {
  const upstreams = await startAgentUpstreams();
  const t = await createTestApp({ env: upstreams.env });
  await t.platform.db.update(models).set({ maxContextTokens: 200_000 }).where(eq(models.slug, 'local/text'));
  t.services.catalog.invalidate();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const seen: SeenRequest[] = [];
  const proxy = recordingProxy(`http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`, seen, (raw) => raw);
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const home = await mkdtemp(join(tmpdir(), `${name}-home-`));
  return {
    t,
    upstreams,
    origin: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    home,
    seen,
    reset() {
      seen.length = 0;
      upstreams.openai.requests.length = 0;
      upstreams.anthropic.requests.length = 0;
    },
    async close() {
      await new Promise((resolve) => proxy.close(resolve));
      await t.close();
      await upstreams.close();
      await rm(home, { recursive: true, force: true, maxRetries: 3 });
    },
  };
}

/**
 * A signed-up user on a plan with API access, an `ai:text` key, and a wallet that covers an agent's calls on the
 * priced models (each call reserves its whole output room up front).
 */
export async function agentUser(t: TestApp): Promise<{ userId: string; key: string }> {
  const { accessToken, user } = await signUp(t.app);
  await setPlan(t, user.id, 'starter');
  await setBalance(t, user.id, 50_000_000);
  const { key } = await createApiKey(t, accessToken, ['ai:text']);
  return { userId: user.id, key };
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a CLI of node_modules/.bin in `cwd` with exactly `env` (plus PATH and CI), stdin at EOF (without it a CLI in
 * print mode may wait for piped input), in its own process group so that the timeout kills what it started too (Codex's
 * launcher runs a native binary).
 */
export function runCli(bin: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const file = join(process.cwd(), 'node_modules', '.bin', bin);
    const child = spawn(file, args, { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH, CI: '1', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      stderr += `\n[killed after ${AGENT_RUN_TIMEOUT_MS} ms]`;
      process.kill(-child.pid!, 'SIGKILL');
    }, AGENT_RUN_TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** `run` in a fresh temp dir (the CLI's cwd, where its shell tool runs), removed afterwards. */
export async function inWorkDir<T>(name: string, run: (cwd: string) => Promise<T>): Promise<T> {
  const cwd = await mkdtemp(join(tmpdir(), `${name}-work-`));
  try {
    return await run(cwd);
  } finally {
    await rm(cwd, { recursive: true, force: true, maxRetries: 3 });
  }
}

/** A run's story for an assertion message: exit, output and what went through the proxy. */
export const runReport = (h: AgentHarness, run: CliRun) =>
  JSON.stringify(
    {
      code: run.code,
      stdout: run.stdout,
      stderr: run.stderr.slice(-4000),
      seen: h.seen.map(({ method, url, status, body, answer }) => ({
        method,
        url,
        status,
        body: body.slice(0, 1500),
        answer: status === 200 ? undefined : answer.slice(0, 1500),
      })),
    },
    null,
    2,
  );

/**
 * The run ended well and was paid for once: exit 0, every model call (`isCall`) answered 200 with a request id, what
 * the CLI printed is the model's last answer (`answerText` reads it from the recorded body), one SUCCESS usage record
 * per call and no other, and the wallet moved by exactly their total. Returns the calls and their records, in order.
 */
export async function expectMeteredRun(
  h: AgentHarness,
  run: CliRun,
  user: { userId: string },
  before: { balance: number },
  isCall: (url: string) => boolean,
  answerText: (raw: string) => string,
) {
  const calls = h.seen.filter((request) => request.method === 'POST' && isCall(request.url));
  const report = runReport(h, run);
  expect(run.code, report).toBe(0);
  expect(calls.length, report).toBeGreaterThan(0);
  expect(
    calls.every((call) => call.status === 200 && call.requestId),
    report,
  ).toBe(true);
  const answer = answerText(calls.at(-1)!.answer).trim();
  expect(answer.length, report).toBeGreaterThan(0);
  expect(run.stdout.trim(), report).toBe(answer);
  const records = await h.t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, user.userId));
  expect(records.map((record) => record.requestId).sort(), report).toEqual(calls.map((call) => call.requestId).sort());
  expect(records.every((record) => record.status === 'SUCCESS' && record.operation === 'text.generate')).toBe(true);
  const after = await walletState(h.t, user.userId);
  expect(after.balance).toBe(before.balance - records.reduce((sum, record) => sum + record.tokensConsumed, 0));
  expect(after.ledgerSum).toBe(after.balance);
  return calls.map((call) => ({ call, record: records.find((record) => record.requestId === call.requestId)! }));
}

/** The reasoning tokens a usage record billed as their own class. */
export const reasoningTokensOf = (record: { metadata: Record<string, unknown> }) =>
  (record.metadata.tokens as { reasoning?: number } | undefined)?.reasoning ?? 0;
