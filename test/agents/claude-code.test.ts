import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { models } from '../../src/db/schema/catalog.js';
import { usageRecords } from '../../src/db/schema/usage.js';
import { createTestApp, signUp, type TestApp } from '../helpers/test-app.js';
import { createApiKey, setPlan, walletState } from '../helpers/gateway.js';

/**
 * Claude Code as shipped (`@anthropic-ai/claude-code`, pinned in devDependencies) against the real app on a port:
 * `claude -p` with ANTHROPIC_BASE_URL at `/anthropic` and an sk_sf key. A recording proxy in front of the app lists
 * every request the CLI made, so each model call can be matched with exactly one usage record.
 */

const CLAUDE = join(process.cwd(), 'node_modules', '.bin', 'claude');
const RUN_TIMEOUT_MS = 90_000;

interface Seen {
  method: string;
  url: string;
  status: number;
  body: string;
  answer: string;
}

let t: TestApp;
let proxy: Server;
let origin: string;
let home: string;
const seen: Seen[] = [];

/** Forwards to the app as is and notes each request with the status it got. */
function recordingProxy(target: string): Server {
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !['host', 'connection', 'content-length', 'transfer-encoding'].includes(name))) as Record<string, string>;
      void fetch(`${target}${req.url}`, { method: req.method, headers, body: body.length ? body : undefined })
        .then(async (upstream) => {
          const noted: Seen = { method: req.method ?? '', url: req.url ?? '', status: upstream.status, body: body.toString('utf8'), answer: '' };
          seen.push(noted);
          const out: Record<string, string> = {};
          upstream.headers.forEach((value, name) => {
            if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(name)) out[name] = value;
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

beforeAll(async () => {
  t = await createTestApp();
  // Claude Code's system prompt and tool definitions are about 17k tokens; local/text's seeded window (8192) is
  // smaller than any model an agent would be pointed at, so the test gives it a window of Claude's size.
  await t.platform.db.update(models).set({ maxContextTokens: 200_000 }).where(eq(models.slug, 'local/text'));
  t.services.catalog.invalidate();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  proxy = recordingProxy(`http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`);
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  home = await mkdtemp(join(tmpdir(), 'claude-code-home-'));
}, 60_000);
afterAll(async () => {
  await new Promise((resolve) => proxy?.close(resolve));
  await t?.close();
  if (home) await rm(home, { recursive: true, force: true });
});

/** The text an Anthropic message stream (or a message) carried: its text deltas (or text blocks) joined. */
function answerText(raw: string): string {
  if (raw.trimStart().startsWith('{')) {
    const message = JSON.parse(raw) as { content?: { type: string; text?: string }[] };
    return (message.content ?? []).map((block) => (block.type === 'text' ? (block.text ?? '') : '')).join('');
  }
  return raw
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice(6)) as { type: string; delta?: { type: string; text?: string } })
    .map((event) => (event.type === 'content_block_delta' && event.delta?.type === 'text_delta' ? (event.delta.text ?? '') : ''))
    .join('');
}

function runClaude(prompt: string, key: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    CLAUDE_CONFIG_DIR: join(home, '.claude'),
    ANTHROPIC_BASE_URL: `${origin}/anthropic`,
    ANTHROPIC_API_KEY: key,
    ANTHROPIC_MODEL: 'local/text',
    ANTHROPIC_SMALL_FAST_MODEL: 'local/text',
    ANTHROPIC_DEFAULT_HAIKU_MODEL: 'local/text',
    // Claude Code asks for 32000 output tokens by default; the gateway refuses more than the model can write.
    CLAUDE_CODE_MAX_OUTPUT_TOKENS: '4096',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_BUG_COMMAND: '1',
    CI: '1',
  };
  return new Promise((resolve) => {
    const child = execFile(CLAUDE, ['-p', prompt, '--output-format', 'text', '--model', 'local/text'], { cwd: home, env, timeout: RUN_TIMEOUT_MS, killSignal: 'SIGKILL', maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
      resolve({ code, stdout, stderr });
    });
    // Nothing on stdin: without EOF there, -p waits 3 s for piped input.
    child.stdin?.end();
  });
}

describe('Claude Code (claude -p) against /anthropic', () => {
  it('answers the prompt, exit 0, each model call metered once', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setPlan(t, user.id, 'starter');
    const { key } = await createApiKey(t, accessToken, ['ai:text']);
    const before = await walletState(t, user.id);

    const run = await runClaude('Explain how lighthouses work', key);
    const calls = seen.filter((request) => request.method === 'POST' && /\/anthropic\/v1\/messages(\?|$)/.test(request.url));
    const report = JSON.stringify({ code: run.code, stdout: run.stdout, stderr: run.stderr.slice(0, 4000), seen: seen.map(({ method, url, status, body }) => ({ method, url, status, body: body.slice(0, 1500) })) }, null, 2);
    expect(run.code, report).toBe(0);
    expect(calls.length, report).toBeGreaterThan(0);
    // What the CLI printed is the model's last answer, as the gateway sent it.
    const answer = answerText(calls.at(-1)!.answer).trim();
    expect(answer.length, report).toBeGreaterThan(0);
    expect(run.stdout.trim(), report).toBe(answer);
    expect(calls.every((call) => call.status === 200), report).toBe(true);
    const records = await t.platform.db.select().from(usageRecords).where(eq(usageRecords.userId, user.id));
    expect(records).toHaveLength(calls.length);
    expect(records.every((record) => record.status === 'SUCCESS' && record.operation === 'text.generate')).toBe(true);
    const after = await walletState(t, user.id);
    expect(after.balance).toBe(before.balance - records.reduce((sum, record) => sum + record.tokensConsumed, 0));
    expect(after.ledgerSum).toBe(after.balance);
  }, RUN_TIMEOUT_MS + 30_000);
});
