import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANTHROPIC_MODEL,
  AGENT_TEST_TIMEOUT_MS,
  OPENAI_MODEL,
  agentUser,
  expectMeteredRun,
  inWorkDir,
  reasoningTokensOf,
  runCli,
  startAgentHarness,
  type AgentHarness,
} from '../helpers/agent-cli.js';
import { AGENT_CHECK, AGENT_TOOL_PROMPT, OPENAI_REASONING_TOKENS, PLAIN_ANSWER, QUOTE_PREFIX } from '../helpers/fake-agent-upstreams.js';
import { walletState } from '../helpers/gateway.js';

/**
 * OpenAI's Codex CLI (the pinned `@openai/codex` devDependency, its real binary) against the gateway's Responses
 * surface: `codex exec` with a `model_providers` entry (`wire_api = "responses"`), offline (no update check,
 * analytics, feedback or telemetry; `--strict-config` refuses a key it does not know), each run in a fresh temp dir
 * with a hard timeout, behind the shared harness's recording proxy.
 *
 * On the built-in `local/text` model every run is a turn of two calls: that model calls a tool whenever tools are
 * offered and the conversation does not end with tool results (gateway/providers/local/text.ts), and Codex always offers
 * its tools. On an OpenAI and an Anthropic model (served by the agent-mode fakes) with `model_reasoning_effort =
 * "high"`: a plain answer, and a round trip through exec_command.
 */

let h: AgentHarness;
beforeAll(async () => {
  h = await startAgentHarness('codex');
  await writeFile(
    join(h.home, 'config.toml'),
    [
      'model = "local/text"',
      'model_provider = "storefront"',
      'check_for_update_on_startup = false',
      '',
      '[model_providers.storefront]',
      'name = "Storefront"',
      `base_url = "${h.origin}/openai/v1"`,
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
afterAll(async () => h?.close());

/** The text of the answer's messages, from the `response.completed` event of a Responses stream (or a response). */
function answerText(raw: string): string {
  const completed = raw.trimStart().startsWith('{')
    ? (JSON.parse(raw) as Record<string, any>)
    : raw
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => JSON.parse(line.slice(6)) as Record<string, any>)
        .find((event) => event.type === 'response.completed')?.response;
  const output = (completed?.output ?? []) as { type: string; content?: { type: string; text?: string }[] }[];
  return output
    .filter((item) => item.type === 'message')
    .flatMap((item) => item.content ?? [])
    .map((part) => (part.type === 'output_text' ? (part.text ?? '') : ''))
    .join('');
}

const isCall = (url: string) => url === '/openai/v1/responses';

/** Codex's items of the last call's input: the calls it made and their outputs. */
type InputItem = { type: string; name?: string; arguments?: string; output?: string; encrypted_content?: string };

/**
 * `codex exec <prompt>` for a new user in a fresh work dir (`prepare` lays it out), checked with `expectMeteredRun`;
 * `config` are `-c` overrides of config.toml. The sandbox lets its shell write the work dir only.
 */
async function codexExec(prompt: string, options: { model?: string; config?: string[]; prepare?: (cwd: string) => Promise<unknown> } = {}) {
  h.reset();
  const user = await agentUser(h.t);
  const before = await walletState(h.t, user.userId);
  const { run, last } = await inWorkDir('codex', async (cwd) => {
    await options.prepare?.(cwd);
    const lastFile = join(cwd, 'last-message.txt');
    const overrides = (options.config ?? []).flatMap((setting) => ['-c', setting]);
    const args = [
      'exec',
      '--strict-config',
      '--ephemeral',
      '--skip-git-repo-check',
      '--sandbox',
      'workspace-write',
      '--color',
      'never',
      '--output-last-message',
      lastFile,
      ...(options.model ? ['-m', options.model] : []),
      ...overrides,
      prompt,
    ];
    const run = await runCli('codex', args, cwd, { HOME: h.home, CODEX_HOME: h.home, TMPDIR: cwd, SF_KEY: user.key, NO_COLOR: '1' });
    return { run, last: await readFile(lastFile, 'utf8').catch(() => '') };
  });
  const metered = await expectMeteredRun(h, run, user, before, isCall, answerText);
  expect(run.stdout.trim()).toBe(last.trim());
  const bodies = metered.map(({ call }) => JSON.parse(call.body) as Record<string, any>);
  return { run, last, metered, bodies, items: (bodies.at(-1)!.input as InputItem[]).filter((item) => item.type !== 'message') };
}

/** The round trip: exec_command called with the check, Codex ran it and sent its output back, the answer quotes it. */
function expectExecRoundTrip(items: InputItem[], last: string) {
  const calls = items.filter((item) => item.type === 'function_call' || item.type === 'function_call_output');
  expect(calls[0]).toMatchObject({ type: 'function_call', name: 'exec_command' });
  expect(calls[1]!.output).toContain(AGENT_CHECK);
  expect(last.trim().startsWith(QUOTE_PREFIX)).toBe(true);
  expect(last).toContain(AGENT_CHECK);
}

const HIGH_EFFORT = ['model_reasoning_effort="high"'];

describe('Codex CLI (codex exec) against /openai/v1/responses', () => {
  it(
    'answers a prompt on the built-in model: exits 0 with the answer, what it sends accepted and what is left out named',
    async () => {
      const { last, metered, bodies, items } = await codexExec('Write a haiku about the sea.');
      expect(last).toContain('This summary comes from the built-in offline model.');
      // What Codex sends: a namespace of functions, a built-in web_search, its hints; the built-in tool is named back.
      expect(bodies[0]).toMatchObject({
        model: 'local/text',
        stream: true,
        store: false,
        tool_choice: 'auto',
        parallel_tool_calls: true,
        include: ['reasoning.encrypted_content'],
      });
      const tools = bodies[0]!.tools as { type: string }[];
      expect(tools.map((tool) => tool.type)).toEqual(expect.arrayContaining(['function', 'namespace', 'web_search']));
      expect(bodies[0]).toHaveProperty('prompt_cache_key');
      expect(bodies[0]).toHaveProperty('client_metadata');
      expect(metered[0]!.call.ignored).toBe('tools.web_search');
      // The second call carries the tool's output back.
      expect(items).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'function_call_output' })]));
    },
    AGENT_TEST_TIMEOUT_MS,
  );

  it(
    'runs a tool loop on the built-in model: it calls exec_command, Codex runs it, and the answer reads its output',
    async () => {
      // The built-in model writes every string argument from the prompt's topic words: `cmd` and `workdir` are both
      // "command hostname", a shell command that prints the host name (and a directory made for it).
      const { run, last, metered, items } = await codexExec('Run the command hostname', { prepare: (cwd) => mkdir(join(cwd, 'command hostname')) });
      expect(metered).toHaveLength(2);
      const output = items.filter((item) => item.type === 'function_call' || item.type === 'function_call_output');
      expect(output[0]).toMatchObject({ type: 'function_call', name: 'exec_command' });
      expect(JSON.parse(output[0]!.arguments!)).toMatchObject({ cmd: 'command hostname' });
      expect(output[1]!.output).toContain('exited with code 0');
      // Codex reports the command on stderr and prints the answer (which reads the command's result) on stdout.
      expect(run.stderr).toContain('command hostname');
      expect(last).toContain('According to exec_command');
      expect(last).toContain('Process exited with code 0');
    },
    AGENT_TEST_TIMEOUT_MS,
  );

  it(
    `answers on ${OPENAI_MODEL} with model_reasoning_effort "high": OpenAI gets reasoning_effort high, reasoning billed as its class`,
    async () => {
      const { last, metered } = await codexExec('Explain how lighthouses work', { model: OPENAI_MODEL, config: HIGH_EFFORT });
      expect(last.trim()).toBe(PLAIN_ANSWER);
      const upstream = h.upstreams.openai.calls();
      expect(upstream).toHaveLength(metered.length);
      for (const call of upstream) expect(call.body).toMatchObject({ model: 'gpt-5', reasoning_effort: 'high' });
      for (const { call, record } of metered) {
        expect(call.ignored ?? '').not.toContain('reasoning');
        expect(reasoningTokensOf(record)).toBe(OPENAI_REASONING_TOKENS);
      }
    },
    AGENT_TEST_TIMEOUT_MS,
  );

  it(
    `runs exec_command on ${OPENAI_MODEL}: Codex runs the command and the answer quotes its output`,
    async () => {
      const { last, metered, items } = await codexExec(AGENT_TOOL_PROMPT, { model: OPENAI_MODEL, config: HIGH_EFFORT });
      expect(metered).toHaveLength(2);
      expectExecRoundTrip(items, last);
      expect(h.upstreams.openai.calls().at(-1)!.body.messages.at(-1)).toMatchObject({ role: 'tool', content: expect.stringContaining(AGENT_CHECK) });
    },
    AGENT_TEST_TIMEOUT_MS,
  );

  it(
    `answers on ${ANTHROPIC_MODEL} with model_reasoning_effort "high": Anthropic gets a 24576-token thinking budget`,
    async () => {
      const { last, metered } = await codexExec('Explain how lighthouses work', { model: ANTHROPIC_MODEL, config: HIGH_EFFORT });
      expect(last.trim()).toBe(PLAIN_ANSWER);
      const upstream = h.upstreams.anthropic.calls();
      expect(upstream).toHaveLength(metered.length);
      for (const call of upstream) expect(call.body.thinking).toEqual({ type: 'enabled', budget_tokens: 24_576 });
      for (const { record } of metered) expect(reasoningTokensOf(record)).toBeGreaterThan(0);
    },
    AGENT_TEST_TIMEOUT_MS,
  );

  it(
    `runs exec_command on ${ANTHROPIC_MODEL} with thinking: the reasoning goes back to Anthropic signed`,
    async () => {
      const { last, metered, items } = await codexExec(AGENT_TOOL_PROMPT, { model: ANTHROPIC_MODEL, config: HIGH_EFFORT });
      expect(metered).toHaveLength(2);
      expectExecRoundTrip(items, last);
      // Codex keeps the thinking only as the reasoning item's encrypted_content, and sends it back with the tool's output.
      expect(items).toContainEqual(expect.objectContaining({ type: 'reasoning', encrypted_content: expect.any(String) }));
      const assistant = (h.upstreams.anthropic.calls().at(-1)!.body.messages as { role: string; content: { type: string }[] }[])
        .filter((message) => message.role === 'assistant')
        .at(-1)!;
      expect(assistant.content[0]).toMatchObject({ type: 'thinking', signature: expect.any(String) });
    },
    AGENT_TEST_TIMEOUT_MS,
  );
});
