import { listOpenAiModels, openAiCompatibleText } from '../openai-compatible/parts.js';
import { without, withTopK, type ProviderProfile } from '../openai-compatible/profile.js';
import type { ProviderPlugin } from '../plugin.js';

const BASE_URL = 'https://api.fireworks.ai/inference/v1';

// https://docs.fireworks.ai/api-reference/post-chatcompletions: top_k and user; no seed, parallel_tool_calls or
// stream_options (a 400 "Extra inputs are not permitted, field: 'stream_options'", github.com/FlowiseAI/Flowise/issues/2866);
// a stream's usage comes unasked on its last chunk.
const PROFILE: ProviderProfile = {
  slug: 'fireworks',
  parameters: without(withTopK, 'seed', 'parallelToolCalls'),
  tokenLimit: 'max_tokens',
  streamUsage: 'unasked',
  jsonSchema: true,
};

export const fireworks: ProviderPlugin = {
  slug: 'fireworks',
  text: openAiCompatibleText(PROFILE, BASE_URL),
  listModels: listOpenAiModels(BASE_URL),
  unseeded: 'No models seeded yet: an operator adds the ones to sell through the admin API.',
};
