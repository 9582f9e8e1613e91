import { listOpenAiModels, openAiCompatibleText } from '../openai-compatible/parts.js';
import { withTopK, type ProviderProfile } from '../openai-compatible/profile.js';
import type { ProviderPlugin } from '../plugin.js';

const BASE_URL = 'https://openrouter.ai/api/v1';

// https://openrouter.ai/docs/api-reference/parameters: OpenAI's set plus top_k. Usage is always in the last chunk;
// `stream_options.include_usage` is deprecated "and has no effect" (openrouter.ai/docs/client-sdks/python/components
// /chatstreamoptions).
const PROFILE: ProviderProfile = { slug: 'openrouter', parameters: withTopK, tokenLimit: 'max_tokens', streamUsage: 'unasked', jsonSchema: true };

export const openrouter: ProviderPlugin = {
  slug: 'openrouter',
  text: openAiCompatibleText(PROFILE, BASE_URL),
  listModels: listOpenAiModels(BASE_URL),
};
