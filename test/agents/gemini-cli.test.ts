import { mkdir, writeFile } from 'node:fs/promises';
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
 * Gemini CLI as shipped (`@google/gemini-cli`, pinned in devDependencies) against the real app on a port: `gemini -p`
 * with GOOGLE_GEMINI_BASE_URL at `/gemini` and an sk_sf key, each model call metered once. On the built-in model, and
 * on an OpenAI and an Anthropic model served by the agent-mode fakes: a plain answer, and a round trip through its
 * run_shell_command tool. Gemini CLI puts the model id in the URL path as given, slash and all.
 */
let h: AgentHarness;
const POLICY = 'agent-check.toml';
beforeAll(async () => {
  h = await startAgentHarness('gemini-cli');
  // Telemetry, usage statistics and the update check off in the (temporary) user settings.
  await mkdir(join(h.home, '.gemini'), { recursive: true });
  const settings = {
    general: { disableAutoUpdate: true, disableUpdateNag: true },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    security: { auth: { selectedType: 'gemini-api-key' } },
    modelConfigs: {
      customAliases: {
        // Gemini CLI's default sampling for a model it does not know is Gemini's (topP 0.95, topK 64); the gateway
        // refuses parameters the built-in model cannot take (it has no topK), so that model gets its own.
        'local/text': { modelConfig: { model: 'local/text', generateContentConfig: { temperature: 1 } } },
        // The others get what Gemini CLI sends a Gemini 2.5 model: that sampling and a thinking budget of 8192 (for a
        // model it does not know it asks for no thinking, only to see thoughts), which the gateway must translate.
        [OPENAI_MODEL]: { extends: 'chat-base-2.5', modelConfig: { model: OPENAI_MODEL } },
        [ANTHROPIC_MODEL]: { extends: 'chat-base-2.5', modelConfig: { model: ANTHROPIC_MODEL } },
      },
    },
  };
  await writeFile(join(h.home, '.gemini', 'settings.json'), JSON.stringify(settings));
  // Headless mode has nobody to confirm a shell command: a policy lets `printf` (and nothing else) run.
  await writeFile(
    join(h.home, POLICY),
    ['[[rule]]', 'toolName = "run_shell_command"', 'commandPrefix = "printf"', 'decision = "allow"', 'priority = 100', ''].join('\n'),
  );
}, 60_000);
afterAll(async () => h?.close());

/** The text a Gemini answer carried: its parts' text (thoughts left out), from one response or its SSE chunks. */
function answerText(raw: string): string {
  const responses = raw.trimStart().startsWith('{')
    ? [raw]
    : raw
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice(6));
  return responses
    .map((text) => JSON.parse(text) as { candidates?: { content?: { parts?: { text?: string; thought?: boolean }[] } }[] })
    .flatMap((response) => response.candidates?.[0]?.content?.parts ?? [])
    .map((part) => (part.thought ? '' : (part.text ?? '')))
    .join('');
}

const geminiEnv = (key: string, cwd: string): NodeJS.ProcessEnv => ({
  HOME: h.home,
  // Its error reports go to the work dir, not the machine's /tmp.
  TMPDIR: cwd,
  // It relaunches itself for a bigger heap, loading its whole bundle twice; a headless run needs no more than the default.
  GEMINI_CLI_NO_RELAUNCH: 'true',
  GOOGLE_GEMINI_BASE_URL: `${h.origin}/gemini`,
  GEMINI_API_KEY: key,
  GEMINI_TELEMETRY_ENABLED: 'false',
  GEMINI_CLI_TRUST_WORKSPACE: 'true',
  NO_BROWSER: 'true',
});

const isCall = (url: string) => /\/gemini\/v1beta\/models\/.+:(generateContent|streamGenerateContent)/.test(url);

/** `gemini -p <prompt> -m <model>` for a new user in a fresh work dir, checked with `expectMeteredRun`. */
async function gemini(model: string, prompt: string) {
  h.reset();
  const user = await agentUser(h.t);
  const before = await walletState(h.t, user.userId);
  const args = ['-p', prompt, '-m', model, '--policy', join(h.home, POLICY)];
  const run = await inWorkDir('gemini-cli', (cwd) => runCli('gemini', args, cwd, geminiEnv(user.key, cwd)));
  const metered = await expectMeteredRun(h, run, user, before, isCall, answerText);
  for (const { call } of metered) expect(call.url).toContain(`/models/${model}:`);
  return { run, metered, bodies: metered.map(({ call }) => JSON.parse(call.body) as Record<string, any>) };
}

/** The round trip: run_shell_command called, its result (the command's output) sent back, the answer quotes it. */
function expectShellRoundTrip(bodies: Record<string, any>[], stdout: string) {
  const parts = (bodies.at(-1)!.contents as { parts: Record<string, any>[] }[]).flatMap((content) => content.parts);
  expect(parts).toContainEqual(expect.objectContaining({ functionCall: expect.objectContaining({ name: 'run_shell_command' }) }));
  const responses = parts.filter((part) => part.functionResponse);
  expect(JSON.stringify(responses)).toContain(AGENT_CHECK);
  expect(stdout.trim().startsWith(QUOTE_PREFIX)).toBe(true);
  expect(stdout).toContain(AGENT_CHECK);
}

/** The thinkingConfig Gemini CLI sent on its calls (the same on each). */
function sentThinking(bodies: Record<string, any>[]) {
  const configs = bodies.map((body) => JSON.stringify(body.generationConfig?.thinkingConfig ?? null));
  expect(new Set(configs).size).toBe(1);
  return JSON.parse(configs[0]!) as { thinkingBudget?: number; thinkingLevel?: string; includeThoughts?: boolean } | null;
}

describe('Gemini CLI (gemini -p) against /gemini', () => {
  it(
    'answers the prompt on the built-in model, exit 0, each model call metered once',
    async () => {
      await gemini('local/text', 'Explain how lighthouses work');
    },
    AGENT_TEST_TIMEOUT_MS,
  );

  it(
    `answers on ${OPENAI_MODEL}: its thinking budget arrives as OpenAI's effort, topK left out and named`,
    async () => {
      const { run, metered, bodies } = await gemini(OPENAI_MODEL, 'Explain how lighthouses work');
      expect(run.stdout.trim()).toBe(PLAIN_ANSWER);
      expect(sentThinking(bodies)).toEqual({ includeThoughts: true, thinkingBudget: 8192 });
      for (const { call, record } of metered) {
        expect(call.ignored?.split(', ')).toContain('topK');
        expect(reasoningTokensOf(record)).toBe(OPENAI_REASONING_TOKENS);
      }
      // 8192 is the budget the gateway's `medium` stands for; OpenAI takes it as that effort.
      for (const call of h.upstreams.openai.calls()) {
        expect(call.body.reasoning_effort).toBe('medium');
        expect(call.body).not.toHaveProperty('top_k');
      }
    },
    AGENT_TEST_TIMEOUT_MS,
  );

  it(
    `runs run_shell_command on ${OPENAI_MODEL}: the command's output goes back and the answer quotes it`,
    async () => {
      const { run, bodies } = await gemini(OPENAI_MODEL, AGENT_TOOL_PROMPT);
      expectShellRoundTrip(bodies, run.stdout);
      expect(h.upstreams.openai.calls().at(-1)!.body.messages.at(-1)).toMatchObject({ role: 'tool', content: expect.stringContaining(AGENT_CHECK) });
    },
    AGENT_TEST_TIMEOUT_MS,
  );

  it(
    `answers on ${ANTHROPIC_MODEL}: its thinking budget arrives as Anthropic's thinking, the thoughts billed as reasoning`,
    async () => {
      const { run, metered, bodies } = await gemini(ANTHROPIC_MODEL, 'Explain how lighthouses work');
      expect(run.stdout.trim()).toBe(PLAIN_ANSWER);
      expect(sentThinking(bodies)).toEqual({ includeThoughts: true, thinkingBudget: 8192 });
      for (const call of h.upstreams.anthropic.calls()) expect(call.body.thinking).toEqual({ type: 'enabled', budget_tokens: 8192 });
      for (const { record } of metered) expect(reasoningTokensOf(record)).toBeGreaterThan(0);
    },
    AGENT_TEST_TIMEOUT_MS,
  );

  it(
    `runs run_shell_command on ${ANTHROPIC_MODEL} with thinking: the thought signature brings the signed thinking back`,
    async () => {
      const { run, bodies } = await gemini(ANTHROPIC_MODEL, AGENT_TOOL_PROMPT);
      expectShellRoundTrip(bodies, run.stdout);
      // Gemini CLI keeps the thinking only as the function call's thoughtSignature, and sends it back with the result.
      const parts = (bodies.at(-1)!.contents as { parts: Record<string, any>[] }[]).flatMap((content) => content.parts);
      expect(parts).toContainEqual(expect.objectContaining({ functionCall: expect.anything(), thoughtSignature: expect.any(String) }));
      const assistant = (h.upstreams.anthropic.calls().at(-1)!.body.messages as { role: string; content: { type: string }[] }[])
        .filter((message) => message.role === 'assistant')
        .at(-1)!;
      expect(assistant.content[0]).toMatchObject({ type: 'thinking', signature: expect.any(String) });
    },
    AGENT_TEST_TIMEOUT_MS,
  );
});
