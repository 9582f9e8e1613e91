import { listOpenAiModels, openAiCompatibleText } from '../openai-compatible/parts.js';
import { without, withTopK, type ProviderProfile } from '../openai-compatible/profile.js';
import type { ProviderPlugin } from '../plugin.js';

const BASE_URL = 'https://api.perplexity.ai';

// `ApiChatCompletionsRequest` in @perplexity-ai/perplexity_ai (github.com/perplexityai/perplexity-node,
// src/generated/api.ts): top_k, no seed, user or stream_options; every chunk carries usage.
const PROFILE: ProviderProfile = {
  slug: 'perplexity',
  parameters: without(withTopK, 'seed', 'user'),
  tokenLimit: 'max_tokens',
  streamUsage: 'unasked',
  jsonSchema: true,
};

export const perplexity: ProviderPlugin = {
  slug: 'perplexity',
  text: openAiCompatibleText(PROFILE, BASE_URL),
  listModels: listOpenAiModels(BASE_URL),
  unseeded: 'No models seeded yet: an operator adds the ones to sell through the admin API.',
};
