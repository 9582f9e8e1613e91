import { listOpenAiModels, openAiCompatibleText } from '../openai-compatible/parts.js';
import { PENALTIES, type ProviderProfile } from '../openai-compatible/profile.js';
import type { ProviderPlugin } from '../plugin.js';

const BASE_URL = 'https://api.deepseek.com/v1';

// https://api-docs.deepseek.com/api/create-chat-completion: no seed, user or parallel_tool_calls, and response_format
// is text or json_object only.
const PROFILE: ProviderProfile = {
  slug: 'deepseek',
  parameters: new Set(['tools', 'toolChoice', 'responseFormat', 'topP', 'stop', ...PENALTIES]),
  tokenLimit: 'max_tokens',
  streamUsage: 'stream_options',
  jsonSchema: false,
  // Thinking mode (https://api-docs.deepseek.com/guides/thinking_mode): temperature and the penalties are taken "but
  // will have no effect".
  families: [{ models: /^deepseek-reasoner/, without: PENALTIES, temperature: 'ignored' }],
};

export const deepseek: ProviderPlugin = { slug: 'deepseek', text: openAiCompatibleText(PROFILE, BASE_URL), listModels: listOpenAiModels(BASE_URL) };
