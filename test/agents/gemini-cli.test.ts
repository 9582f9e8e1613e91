import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { AGENT_RUN_TIMEOUT_MS, agentUser, expectMeteredRun, runCli, startAgentHarness, type AgentHarness } from '../helpers/agent-cli.js';
import { walletState } from '../helpers/gateway.js';

/**
 * Gemini CLI as shipped (`@google/gemini-cli`, pinned in devDependencies) against the real app on a port: `gemini -p`
 * with GOOGLE_GEMINI_BASE_URL at `/gemini` and an sk_sf key, each model call metered once.
 */
let h: AgentHarness;
beforeAll(async () => {
  h = await startAgentHarness('gemini-cli');
  // Telemetry, usage statistics and the update check off in the (temporary) user settings.
  await mkdir(join(h.home, '.gemini'), { recursive: true });
  const settings = {
    general: { disableAutoUpdate: true, disableUpdateNag: true },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    security: { auth: { selectedType: 'gemini-api-key' } },
    // Gemini CLI's default sampling for a model it does not know is Gemini's (topP 0.95, topK 64); the gateway refuses
    // parameters a model's provider cannot take (local/text, like OpenAI's, has no topK), so the model gets its own.
    modelConfigs: { customAliases: { 'local/text': { modelConfig: { model: 'local/text', generateContentConfig: { temperature: 1 } } } } },
  };
  await writeFile(join(h.home, '.gemini', 'settings.json'), JSON.stringify(settings));
}, 60_000);
afterAll(async () => h?.close());

/** The text a Gemini answer carried: its parts' text (thoughts left out), from one response or its SSE chunks. */
function answerText(raw: string): string {
  const responses = raw.trimStart().startsWith('{') ? [raw] : raw.split('\n').filter((line) => line.startsWith('data: ')).map((line) => line.slice(6));
  return responses
    .map((text) => JSON.parse(text) as { candidates?: { content?: { parts?: { text?: string; thought?: boolean }[] } }[] })
    .flatMap((response) => response.candidates?.[0]?.content?.parts ?? [])
    .map((part) => (part.thought ? '' : (part.text ?? '')))
    .join('');
}

const geminiEnv = (key: string): NodeJS.ProcessEnv => ({
  HOME: h.home,
  GOOGLE_GEMINI_BASE_URL: `${h.origin}/gemini`,
  GEMINI_API_KEY: key,
  GEMINI_TELEMETRY_ENABLED: 'false',
  GEMINI_CLI_TRUST_WORKSPACE: 'true',
  NO_BROWSER: 'true',
});

describe('Gemini CLI (gemini -p) against /gemini', () => {
  it('answers the prompt, exit 0, each model call metered once', async () => {
    const user = await agentUser(h.t);
    const before = await walletState(h.t, user.userId);
    const run = await runCli('gemini', ['-p', 'Explain how lighthouses work', '-m', 'local/text'], h.home, geminiEnv(user.key));
    await expectMeteredRun(h, run, user, before, (url) => /\/gemini\/v1beta\/models\/.+:(generateContent|streamGenerateContent)/.test(url), answerText);
  }, AGENT_RUN_TIMEOUT_MS + 30_000);
});
