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
 * Claude Code as shipped (`@anthropic-ai/claude-code`, pinned in devDependencies) against the real app on a port:
 * `claude -p` with ANTHROPIC_BASE_URL at `/anthropic` and an sk_sf key, each model call metered once. On the built-in
 * model, and on an Anthropic and an OpenAI model served by the agent-mode fakes: a plain answer, and a round trip
 * through its Bash tool.
 */
let h: AgentHarness;
beforeAll(async () => {
  h = await startAgentHarness('claude-code');
}, 60_000);
afterAll(async () => h?.close());

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

const claudeEnv = (key: string, model: string): NodeJS.ProcessEnv => ({
  HOME: h.home,
  XDG_CONFIG_HOME: join(h.home, '.config'),
  CLAUDE_CONFIG_DIR: join(h.home, '.claude'),
  ANTHROPIC_BASE_URL: `${h.origin}/anthropic`,
  ANTHROPIC_API_KEY: key,
  // Its side calls (titles, topic detection) go to the model under test as well.
  ANTHROPIC_MODEL: model,
  ANTHROPIC_SMALL_FAST_MODEL: model,
  ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
  // Claude Code asks for 32000 output tokens by default; the gateway refuses more than the model can write.
  CLAUDE_CODE_MAX_OUTPUT_TOKENS: '4096',
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  DISABLE_AUTOUPDATER: '1',
  DISABLE_TELEMETRY: '1',
  DISABLE_ERROR_REPORTING: '1',
  DISABLE_BUG_COMMAND: '1',
});

const isCall = (url: string) => /\/anthropic\/v1\/messages(\?|$)/.test(url);

/**
 * `claude -p <prompt>` on `model` in a fresh work dir for a new user, checked with `expectMeteredRun`. The Bash tool
 * may run `printf` only (print mode has nobody to ask for permission; running as root rules out skipping the check).
 */
async function claude(model: string, prompt: string, env: NodeJS.ProcessEnv = {}) {
  h.reset();
  const user = await agentUser(h.t);
  const before = await walletState(h.t, user.userId);
  const args = ['-p', prompt, '--output-format', 'text', '--model', model, '--allowedTools', 'Bash(printf:*)'];
  const run = await inWorkDir('claude-code', (cwd) => runCli('claude', args, cwd, { ...claudeEnv(user.key, model), ...env }));
  const metered = await expectMeteredRun(h, run, user, before, isCall, answerText);
  return { run, metered, bodies: metered.map(({ call }) => JSON.parse(call.body) as Record<string, any>) };
}

/** The tool round trip as Claude Code made it: the Bash call went out, its result (the command's output) came back. */
function expectBashRoundTrip(bodies: Record<string, any>[], stdout: string) {
  const blocks = bodies.flatMap((body) =>
    (body.messages as { role: string; content: unknown }[]).flatMap((message) =>
      Array.isArray(message.content) ? (message.content as Record<string, any>[]) : [],
    ),
  );
  expect(blocks).toContainEqual(expect.objectContaining({ type: 'tool_use', name: 'Bash' }));
  const results = blocks.filter((block) => block.type === 'tool_result');
  expect(JSON.stringify(results)).toContain(AGENT_CHECK);
  expect(stdout.trim().startsWith(QUOTE_PREFIX)).toBe(true);
  expect(stdout).toContain(AGENT_CHECK);
}

describe('Claude Code (claude -p) against /anthropic', () => {
  it(
    'answers the prompt on the built-in model, exit 0, each model call metered once',
    async () => {
      await claude('local/text', 'Explain how lighthouses work');
    },
    AGENT_TEST_TIMEOUT_MS,
  );

  it(
    `answers on ${ANTHROPIC_MODEL}: the thinking it asks for reaches Anthropic as sent, each call metered once`,
    async () => {
      const { run, bodies } = await claude(ANTHROPIC_MODEL, 'Explain how lighthouses work');
      expect(run.stdout.trim()).toBe(PLAIN_ANSWER);
      // On a model it knows as Claude it asks for a budget of its own (below its max_tokens), which Anthropic takes as is.
      const upstream = h.upstreams.anthropic.calls();
      expect(upstream).toHaveLength(bodies.length);
      bodies.forEach((body, i) => {
        expect(body.thinking).toMatchObject({ type: 'enabled', budget_tokens: expect.any(Number) });
        expect(upstream[i]!.body.thinking).toEqual({ type: 'enabled', budget_tokens: body.thinking.budget_tokens });
      });
    },
    AGENT_TEST_TIMEOUT_MS,
  );

  it(
    `runs Bash on ${ANTHROPIC_MODEL} with MAX_THINKING_TOKENS: budget 2048 reaches Anthropic, thinking goes back signed`,
    async () => {
      const { run, metered, bodies } = await claude(ANTHROPIC_MODEL, AGENT_TOOL_PROMPT, { MAX_THINKING_TOKENS: '2048' });
      expectBashRoundTrip(bodies, run.stdout);
      const upstream = h.upstreams.anthropic.calls().map((call) => call.body as Record<string, any>);
      const loop = upstream.filter((body) => body.tools?.some((tool: { name: string }) => tool.name === 'Bash'));
      expect(loop.length).toBeGreaterThanOrEqual(2);
      for (const body of loop) expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
      // The call that carries the result back starts the assistant turn with the signed thinking (the fake checks the signature).
      const assistant = (loop.at(-1)!.messages as { role: string; content: { type: string }[] }[]).filter((message) => message.role === 'assistant').at(-1)!;
      expect(assistant.content[0]).toMatchObject({ type: 'thinking', signature: expect.any(String) });
      for (const { call, record } of metered) if (JSON.parse(call.body).thinking) expect(reasoningTokensOf(record), call.body.slice(0, 300)).toBeGreaterThan(0);
    },
    AGENT_TEST_TIMEOUT_MS,
  );

  it(
    `answers on ${OPENAI_MODEL}: its effort reaches OpenAI as reasoning_effort, reasoning billed as its class`,
    async () => {
      const { run, metered, bodies } = await claude(OPENAI_MODEL, 'Explain how lighthouses work');
      expect(run.stdout.trim()).toBe(PLAIN_ANSWER);
      // On a model it does not know as Claude it asks for adaptive thinking at an effort (MAX_THINKING_TOKENS is not read).
      const upstream = h.upstreams.openai.calls();
      expect(upstream).toHaveLength(bodies.length);
      bodies.forEach((body, i) => {
        expect(body).toMatchObject({ thinking: { type: 'adaptive' }, output_config: { effort: expect.any(String) } });
        expect(upstream[i]!.body.reasoning_effort).toBe(body.output_config.effort);
      });
      for (const { record } of metered) expect(reasoningTokensOf(record)).toBe(OPENAI_REASONING_TOKENS);
    },
    AGENT_TEST_TIMEOUT_MS,
  );

  it(
    `runs Bash on ${OPENAI_MODEL}: the call and its result go through chat completions`,
    async () => {
      const { run, bodies } = await claude(OPENAI_MODEL, AGENT_TOOL_PROMPT);
      expectBashRoundTrip(bodies, run.stdout);
      const upstream = h.upstreams.openai.calls().map((call) => call.body as Record<string, any>);
      expect(upstream.at(-1)!.messages.at(-1)).toMatchObject({ role: 'tool', content: expect.stringContaining(AGENT_CHECK) });
    },
    AGENT_TEST_TIMEOUT_MS,
  );
});
