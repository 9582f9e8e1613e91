import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inArray } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../src/db/schema/usage.js';
import { createApiKey, setPlan } from '../helpers/gateway.js';
import { createTestApp, signUp, type TestApp } from '../helpers/test-app.js';

/**
 * OpenAI's Codex CLI (the pinned `@openai/codex` devDependency, its real binary) against the gateway's Responses
 * surface: `codex exec` with a `model_providers` entry (`wire_api = "responses"`) on the built-in `local/text` model,
 * offline (no update check, analytics, feedback or telemetry; `--strict-config` refuses a key it does not know), each run
 * in a fresh temp dir with a hard timeout. A recording pass-through in front of the app sees every call Codex makes.
 *
 * The built-in model calls a tool whenever tools are offered and the conversation does not end with tool results
 * (gateway/providers/local.ts), and Codex always offers its tools: every run is a turn of two calls, a tool call
 * (exec_command, which Codex runs) and the answer that reads its result.
 */

const CODEX = fileURLToPath(new URL('../../node_modules/@openai/codex/bin/codex.js', import.meta.url));
const RUN_TIMEOUT_MS = 60_000;

let t: TestApp;
let apiKey: string;
let home: string;
let proxy: Server;
/** What went through the pass-through: each call's body, status, x-ai-request-id and x-storefront-ignored. */
let calls: { path: string; body: Record<string, unknown>; status: number; requestId: string | null; ignored: string | null }[] = [];

/** Forwards to the app as it is (the SSE body streamed through), recording each call. */
function passThrough(target: string): Server {
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => name !== 'host' && name !== 'content-length')) as Record<string, string>;
      void (async () => {
        const answer = await fetch(`${target}${req.url}`, { method: req.method, headers, body: body.length > 0 ? body : undefined });
        calls.push({
          path: `${req.method} ${req.url}`,
          body: body.length > 0 ? (JSON.parse(body.toString()) as Record<string, unknown>) : {},
          status: answer.status,
          requestId: answer.headers.get('x-ai-request-id'),
          ignored: answer.headers.get('x-storefront-ignored'),
        });
        res.writeHead(answer.status, Object.fromEntries([...answer.headers].filter(([name]) => name !== 'content-length' && name !== 'transfer-encoding')));
        if (answer.body) for await (const chunk of answer.body) res.write(chunk);
        res.end();
      })().catch((err: unknown) => res.destroy(err as Error));
    });
  });
}

beforeAll(async () => {
  t = await createTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { accessToken, user } = await signUp(t.app);
  await setPlan(t, user.id, 'starter');
  apiKey = (await createApiKey(t, accessToken, ['ai:text'])).key;
  proxy = passThrough(`http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`);
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/openai/v1`;
  home = await mkdtemp(join(tmpdir(), 'codex-home-'));
  await writeFile(
    join(home, 'config.toml'),
    [
      'model = "local/text"',
      'model_provider = "storefront"',
      'check_for_update_on_startup = false',
      '',
      '[model_providers.storefront]',
      'name = "Storefront"',
      `base_url = "${baseUrl}"`,
      'wire_api = "responses"',
      'env_key = "SF_KEY"',
      'request_max_retries = 0',
      'stream_max_retries = 0',
      '',
      '[analytics]',
      'enabled = false',
      '',
      '[feedback]',
      'enabled = false',
      '',
      '[otel]',
      'exporter = "none"',
      '',
      // The goal tools' descriptions would take the prompt past local/text's 8,192-token context.
      '[features]',
      'goals = false',
      '',
    ].join('\n'),
  );
}, 60_000);

afterAll(async () => {
  await new Promise((resolve) => (proxy ? proxy.close(resolve) : resolve(undefined)));
  await t?.close();
  if (home) await rm(home, { recursive: true, force: true, maxRetries: 3 });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The agent's last message (`--output-last-message`). */
  last: string;
}

/**
 * `codex exec <prompt>` in a fresh temp dir, stdin closed (else it waits for more input), in its own process group
 * so the timeout kills the native binary too, not only the Node launcher.
 */
async function codexExec(prompt: string, prepare: (cwd: string) => Promise<void> = async () => undefined): Promise<Run> {
  const cwd = await mkdtemp(join(tmpdir(), 'codex-work-'));
  await prepare(cwd);
  const lastFile = join(cwd, 'last-message.txt');
  try {
    const args = ['exec', '--strict-config', '--ephemeral', '--skip-git-repo-check', '--sandbox', 'workspace-write', '--color', 'never', '--output-last-message', lastFile, prompt];
    const run = await new Promise<Omit<Run, 'last'>>((resolve, reject) => {
      const child = spawn(process.execPath, [CODEX, ...args], {
        cwd,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, CODEX_HOME: home, TMPDIR: cwd, SF_KEY: apiKey, NO_COLOR: '1' },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const timer = setTimeout(() => {
        stderr += `\n[killed after ${RUN_TIMEOUT_MS} ms]`;
        process.kill(-child.pid!, 'SIGKILL');
      }, RUN_TIMEOUT_MS);
      child.on('error', reject);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
    return { ...run, last: await readFile(lastFile, 'utf8').catch(() => '') };
  } finally {
    await rm(cwd, { recursive: true, force: true, maxRetries: 3 });
  }
}

/** Codex's calls of the Responses surface, each answered 200 and metered exactly once. */
async function expectEachCallMeteredOnce(made: typeof calls) {
  const responses = made.filter((call) => call.path === 'POST /openai/v1/responses');
  expect(responses.length).toBeGreaterThan(0);
  for (const call of responses) expect(call).toMatchObject({ status: 200, requestId: expect.any(String) });
  const ids = responses.map((call) => call.requestId!);
  const records = await t.platform.db.select().from(usageRecords).where(inArray(usageRecords.requestId, ids));
  expect(records.map((record) => record.requestId).sort()).toEqual([...ids].sort());
  for (const record of records) expect(record).toMatchObject({ operation: 'text.generate', status: 'SUCCESS' });
  return responses;
}

describe('Codex CLI (codex exec) against /openai/v1/responses', () => {
  it('answers a prompt: exits 0 with the answer, what it sends accepted and what is left out named', async () => {
    calls = [];
    const run = await codexExec('Write a haiku about the sea.');
    expect(run.code, run.stderr).toBe(0);
    expect(run.last).toContain('This summary comes from the built-in offline model.');
    expect(run.stdout).toContain(run.last.trim());

    const responses = await expectEachCallMeteredOnce(calls);
    const [first] = responses;
    // What Codex sends: a namespace of functions, a built-in web_search, its hints; the built-in tool is named back.
    expect(first!.body).toMatchObject({ model: 'local/text', stream: true, store: false, tool_choice: 'auto', parallel_tool_calls: true, include: ['reasoning.encrypted_content'] });
    const tools = first!.body.tools as { type: string }[];
    expect(tools.map((tool) => tool.type)).toEqual(expect.arrayContaining(['function', 'namespace', 'web_search']));
    expect(first!.body).toHaveProperty('prompt_cache_key');
    expect(first!.body).toHaveProperty('client_metadata');
    expect(first!.ignored).toBe('tools.web_search');
    // The second call carries the tool's output back.
    expect(responses.at(-1)!.body.input).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'function_call_output' })]));
  }, 90_000);

  it('runs a tool loop: the model calls exec_command, Codex runs it, and the answer reads its output', async () => {
    calls = [];
    // The built-in model writes every string argument from the prompt's topic words: `cmd` and `workdir` are both
    // "command hostname", a shell command that prints the host name (and a directory made for it).
    const run = await codexExec('Run the command hostname', (cwd) => mkdir(join(cwd, 'command hostname')));
    expect(run.code, run.stderr).toBe(0);
    const responses = await expectEachCallMeteredOnce(calls);
    expect(responses).toHaveLength(2);
    const output = (responses[1]!.body.input as { type: string; name?: string; arguments?: string; output?: string }[]).filter((item) => item.type === 'function_call' || item.type === 'function_call_output');
    expect(output[0]).toMatchObject({ type: 'function_call', name: 'exec_command' });
    expect(JSON.parse(output[0]!.arguments!)).toMatchObject({ cmd: 'command hostname' });
    expect(output[1]!.output).toContain('exited with code 0');
    // Codex reports the command on stderr and prints the answer (which reads the command's result) on stdout.
    expect(run.stderr).toContain('command hostname');
    expect(run.last).toContain('According to exec_command');
    expect(run.last).toContain('Process exited with code 0');
    expect(run.stdout).toContain(run.last.trim());
  }, 90_000);
});
