import { OPENAI_PARAMETERS } from '../openai-compatible/chat.js';
import { listOpenAiModels, openAiCompatibleText } from '../openai-compatible/parts.js';
import { without, type ProviderProfile } from '../openai-compatible/profile.js';
import type { ProviderPlugin } from '../plugin.js';

const BASE_URL = 'http://127.0.0.1:11434/v1';

// https://github.com/ollama/ollama/blob/main/docs/openai.md ("Supported request fields"): no tool_choice, user or
// parallel_tool_calls; the server ignores fields it does not know, so they are refused here rather than lost.
const PROFILE: ProviderProfile = {
  slug: 'ollama',
  parameters: without(OPENAI_PARAMETERS, 'toolChoice', 'parallelToolCalls', 'user'),
  tokenLimit: 'max_tokens',
  streamUsage: 'stream_options',
  jsonSchema: true,
};

export const ollama: ProviderPlugin = {
  slug: 'ollama',
  keyless: true,
  text: openAiCompatibleText(PROFILE, BASE_URL),
  listModels: listOpenAiModels(BASE_URL),
  unseeded: 'Self-hosted: it serves whatever models its operator pulled, added through the admin API.',
};
