import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eq } from 'drizzle-orm';
import { expect } from 'vitest';
import { models } from '../../src/db/schema/catalog.js';
import { usageRecords } from '../../src/db/schema/usage.js';
import { createApiKey, setPlan, walletState } from './gateway.js';
import { createTestApp, signUp, type TestApp } from './test-app.js';

/**
 * What the coding-agent tests share: the real app on a port behind a recording proxy (every request a CLI made, with
 * the status and the answer it got), a temporary HOME, the CLI run as a child process with a hard timeout, and the
 * check that each model call was answered and metered exactly once.
 */
export const AGENT_RUN_TIMEOUT_MS = 90_000;

export interface SeenRequest {
  method: string;
  url: string;
  status: number;
  body: string;
  answer: string;
}

export interface AgentHarness {
  t: TestApp;
  /** The proxy's origin: what the CLI's base URL points at. */
  origin: string;
  home: string;
  seen: SeenRequest[];
  close(): Promise<void>;
}

const REQUEST_HEADERS_DROPPED = ['host', 'connection', 'content-length', 'transfer-encoding'];
// fetch decodes what it reads, so the answer goes on decoded and without its encoding.
const ANSWER_HEADERS_DROPPED = ['connection', 'content-length', 'transfer-encoding', 'content-encoding'];

/** Forwards to the app as is and notes each request with the status and the body it got. */
function recordingProxy(target: string, seen: SeenRequest[]): Server {
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !REQUEST_HEADERS_DROPPED.includes(name))) as Record<string, string>;
      void fetch(`${target}${req.url}`, { method: req.method, headers, body: body.length ? body : undefined })
        .then(async (upstream) => {
          const noted: SeenRequest = { method: req.method ?? '', url: req.url ?? '', status: upstream.status, body: body.toString('utf8'), answer: '' };
          seen.push(noted);
          const out: Record<string, string> = {};
          upstream.headers.forEach((value, name) => {
            if (!ANSWER_HEADERS_DROPPED.includes(name)) out[name] = value;
          });
          res.writeHead(upstream.status, out);
          if (upstream.body) {
            for await (const chunk of upstream.body) {
              res.write(chunk);
              noted.answer += Buffer.from(chunk as Uint8Array).toString('utf8');
            }
          }
          res.end();
        })
        .catch((err: unknown) => {
          seen.push({ method: req.method ?? '', url: req.url ?? '', status: 599, body: String(err), answer: '' });
          res.destroy();
        });
    });
  });
}

/**
 * Starts the app and the proxy. An agent's system prompt and tool definitions run past local/text's seeded window
 * (8,192 tokens), which is smaller than any model an agent is pointed at, so the run gets a window of 200,000.
 */
export async function startAgentHarness(name: string): Promise<AgentHarness> {
  const t = await createTestApp();
  await t.platform.db.update(models).set({ maxContextTokens: 200_000 }).where(eq(models.slug, 'local/text'));
  t.services.catalog.invalidate();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const seen: SeenRequest[] = [];
  const proxy = recordingProxy(`http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`, seen);
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const home = await mkdtemp(join(tmpdir(), `${name}-home-`));
  return {
    t,
    origin: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    home,
    seen,
    async close() {
      await new Promise((resolve) => proxy.close(resolve));
      await t.close();
      await rm(home, { recursive: true, force: true });
    },
  };
}

/** A signed-up user on a plan with API access, and an `ai:text` key. */
export async function agentUser(t: TestApp): Promise<{ userId: string; key: string }> {
  const { accessToken, user } = await signUp(t.app);
  await setPlan(t, user.id, 'starter');
  const { key } = await createApiKey(t, accessToken, ['ai:text']);
  return { userId: user.id, key };
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a CLI of node_modules/.bin in `cwd` with exactly `env` (plus PATH and CI), killed past the timeout. */
export function runCli(bin: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<CliRun> {
  return new Promise((resolve) => {
    const file = join(process.cwd(), 'node_modules', '.bin', bin);
    const options = { cwd, env: { PATH: process.env.PATH, CI: '1', ...env }, timeout: AGENT_RUN_TIMEOUT_MS, killSignal: 'SIGKILL' as const, maxBuffer: 16 * 1024 * 1024 };
    const child = execFile(file, args, options, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
    });
    // Nothing on stdin: without EOF there, a CLI in print mode may wait for piped input.
    child.stdin?.end();
  });
}

/**
 * The run ended well and was paid for once: exit 0, every model call (`isCall`) answered 200, what the CLI printed is
 * the model's last answer (`answerText` reads it from the recorded body), one SUCCESS usage record per call, and the
 * wallet moved by exactly their total.
 */
export async function expectMeteredRun(h: AgentHarness, run: CliRun, user: { userId: string }, before: { balance: number }, isCall: (url: string) => boolean, answerText: (raw: string) => string): Promise<void> {
  const calls = h.seen.filter((request) => request.method === 'POST' && isCall(request.url));
  const report = JSON.stringify({ code: run.code, stdout: run.stdout, stderr: run.stderr.slice(0, 4000), seen: h.seen.map(({ method, url, status, body }) => ({ method, url, status, body: body.slice(0, 1500) })) }, null, 2);
  expect(run.code, report).toBe(0);
  expect(calls.length, report).toBeGreaterThan(0);
  const answer = answerText(calls.at(-1)!.answer).trim();
  expect(answer.length, report).toBeGreaterThan(0);
  expect(run.stdout.trim(), report).toBe(answer);
  expect(calls.every((call) => call.status === 200), report).toBe(true);
  const records = await h.t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, user.userId));
  expect(records).toHaveLength(calls.length);
  expect(records.every((record) => record.status === 'SUCCESS' && record.operation === 'text.generate')).toBe(true);
  const after = await walletState(h.t, user.userId);
  expect(after.balance).toBe(before.balance - records.reduce((sum, record) => sum + record.tokensConsumed, 0));
  expect(after.ledgerSum).toBe(after.balance);
}
