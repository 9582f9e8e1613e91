import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
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
 * Gemini CLI as shipped (`@google/gemini-cli`, pinned in devDependencies) against the real app on a port: `gemini -p`
 * with GOOGLE_GEMINI_BASE_URL at `/gemini` and an sk_sf key. A recording proxy in front of the app lists every request
 * the CLI made, so each model call can be matched with exactly one usage record.
 */

const GEMINI = join(process.cwd(), 'node_modules', '.bin', 'gemini');
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
  // Gemini CLI's system prompt and tool declarations are longer than local/text's seeded window (8192), which is
  // smaller than any model an agent would be pointed at, so the test gives it a large one.
  await t.platform.db.update(models).set({ maxContextTokens: 200_000 }).where(eq(models.slug, 'local/text'));
  t.services.catalog.invalidate();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  proxy = recordingProxy(`http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`);
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  home = await mkdtemp(join(tmpdir(), 'gemini-cli-home-'));
}, 60_000);
afterAll(async () => {
  await new Promise((resolve) => proxy?.close(resolve));
  await t?.close();
  if (home) await rm(home, { recursive: true, force: true });
});

/** The text a Gemini answer carried: its parts' text (thoughts left out), from one response or its SSE chunks. */
function answerText(raw: string): string {
  const responses = raw.trimStart().startsWith('{') ? [raw] : raw.split('\n').filter((line) => line.startsWith('data: ')).map((line) => line.slice(6));
  return responses
    .map((text) => JSON.parse(text) as { candidates?: { content?: { parts?: { text?: string; thought?: boolean }[] } }[] })
    .flatMap((response) => response.candidates?.[0]?.content?.parts ?? [])
    .map((part) => (part.thought ? '' : (part.text ?? '')))
    .join('');
}

async function runGemini(prompt: string, key: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // Telemetry, usage statistics and the update check off in the (temporary) user settings.
  await mkdir(join(home, '.gemini'), { recursive: true });
  const settings = {
    general: { disableAutoUpdate: true, disableUpdateNag: true },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    security: { auth: { selectedType: 'gemini-api-key' } },
    // Gemini CLI's default sampling for a model it does not know is Gemini's (topP 0.95, topK 64); the gateway refuses
    // parameters a model's provider cannot take (local/text, like OpenAI's, has no topK), so the model gets its own.
    modelConfigs: { customAliases: { 'local/text': { modelConfig: { model: 'local/text', generateContentConfig: { temperature: 1 } } } } },
  };
  await writeFile(join(home, '.gemini', 'settings.json'), JSON.stringify(settings));
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: home,
    GOOGLE_GEMINI_BASE_URL: `${origin}/gemini`,
    GEMINI_API_KEY: key,
    GEMINI_TELEMETRY_ENABLED: 'false',
    GEMINI_CLI_TRUST_WORKSPACE: 'true',
    NO_BROWSER: 'true',
    CI: '1',
  };
  return new Promise((resolve) => {
    const child = execFile(GEMINI, ['-p', prompt, '-m', 'local/text'], { cwd: home, env, timeout: RUN_TIMEOUT_MS, killSignal: 'SIGKILL', maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
      resolve({ code, stdout, stderr });
    });
    child.stdin?.end();
  });
}

describe('Gemini CLI (gemini -p) against /gemini', () => {
  it('answers the prompt, exit 0, each model call metered once', async () => {
    const { accessToken, user } = await signUp(t.app);
    await setPlan(t, user.id, 'starter');
    const { key } = await createApiKey(t, accessToken, ['ai:text']);
    const before = await walletState(t, user.id);

    const run = await runGemini('Explain how lighthouses work', key);
    const calls = seen.filter((request) => request.method === 'POST' && /\/gemini\/v1beta\/models\/.+:(generateContent|streamGenerateContent)/.test(request.url));
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
