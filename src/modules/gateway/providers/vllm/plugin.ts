import { listOpenAiModels, openAiCompatibleText } from '../openai-compatible/parts.js';
import { withTopK, type ProviderProfile } from '../openai-compatible/profile.js';
import type { ProviderPlugin } from '../plugin.js';

const BASE_URL = 'http://127.0.0.1:8000/v1';

// https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html: OpenAI's set plus its sampling extras (top_k).
const PROFILE: ProviderProfile = { slug: 'vllm', parameters: withTopK, tokenLimit: 'max_tokens', streamUsage: 'stream_options', jsonSchema: true };

export const vllm: ProviderPlugin = {
  slug: 'vllm',
  keyless: true,
  text: openAiCompatibleText(PROFILE, BASE_URL),
  listModels: listOpenAiModels(BASE_URL),
  unseeded: 'Self-hosted: it serves whatever model its operator loaded, added through the admin API.',
};
