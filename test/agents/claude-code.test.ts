import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { AGENT_RUN_TIMEOUT_MS, agentUser, expectMeteredRun, runCli, startAgentHarness, type AgentHarness } from '../helpers/agent-cli.js';
import { walletState } from '../helpers/gateway.js';

/**
 * Claude Code as shipped (`@anthropic-ai/claude-code`, pinned in devDependencies) against the real app on a port:
 * `claude -p` with ANTHROPIC_BASE_URL at `/anthropic` and an sk_sf key, each model call metered once.
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

const claudeEnv = (key: string): NodeJS.ProcessEnv => ({
  HOME: h.home,
  XDG_CONFIG_HOME: join(h.home, '.config'),
  CLAUDE_CONFIG_DIR: join(h.home, '.claude'),
  ANTHROPIC_BASE_URL: `${h.origin}/anthropic`,
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
});

describe('Claude Code (claude -p) against /anthropic', () => {
  it('answers the prompt, exit 0, each model call metered once', async () => {
    const user = await agentUser(h.t);
    const before = await walletState(h.t, user.userId);
    const run = await runCli('claude', ['-p', 'Explain how lighthouses work', '--output-format', 'text', '--model', 'local/text'], h.home, claudeEnv(user.key));
    await expectMeteredRun(h, run, user, before, (url) => /\/anthropic\/v1\/messages(\?|$)/.test(url), answerText);
  }, AGENT_RUN_TIMEOUT_MS + 30_000);
});
