import { listOpenAiModels, openAiCompatibleText } from '../openai-compatible/parts.js';
import { without, withTopK, type ProviderProfile } from '../openai-compatible/profile.js';
import type { ProviderPlugin } from '../plugin.js';

const BASE_URL = 'https://api.fireworks.ai/inference/v1';

// https://docs.fireworks.ai/api-reference/post-chatcompletions: top_k and user; no seed or parallel_tool_calls.
const PROFILE: ProviderProfile = {
  slug: 'fireworks',
  parameters: without(withTopK, 'seed', 'parallelToolCalls'),
  tokenLimit: 'max_tokens',
  streamUsage: 'stream_options',
  jsonSchema: true,
};

export const fireworks: ProviderPlugin = {
  slug: 'fireworks',
  text: openAiCompatibleText(PROFILE, BASE_URL),
  listModels: listOpenAiModels(BASE_URL),
  unseeded: 'No models seeded yet: an operator adds the ones to sell through the admin API.',
};
