import { listOpenAiModels, openAiCompatibleText } from '../openai-compatible/parts.js';
import { without, withTopK, type ProviderProfile } from '../openai-compatible/profile.js';
import type { ProviderPlugin } from '../plugin.js';

const BASE_URL = 'https://api.together.xyz/v1';

// `CompletionCreateParams` in together-ai (github.com/togethercomputer/together-typescript,
// src/resources/chat/completions.ts): top_k, no user or parallel_tool_calls, no stream_options; its chunks carry usage.
const PROFILE: ProviderProfile = {
  slug: 'together',
  parameters: without(withTopK, 'user', 'parallelToolCalls'),
  tokenLimit: 'max_tokens',
  streamUsage: 'unasked',
  jsonSchema: true,
};

export const together: ProviderPlugin = {
  slug: 'together',
  text: openAiCompatibleText(PROFILE, BASE_URL),
  listModels: listOpenAiModels(BASE_URL),
  unseeded: 'No models seeded yet: an operator adds the ones to sell through the admin API.',
};
