import { OPENAI_PARAMETERS } from '../openai-compatible/chat.js';
import { listOpenAiModels, openAiCompatibleText } from '../openai-compatible/parts.js';
import { PENALTIES, type ProviderProfile } from '../openai-compatible/profile.js';
import type { ProviderPlugin } from '../plugin.js';
import { createOpenAiMediaAdapter } from './media.js';

const BASE_URL = 'https://api.openai.com/v1';

// https://platform.openai.com/docs/api-reference/chat/create. `max_tokens` is refused by reasoning models and
// deprecated for the others, so `max_completion_tokens` for all.
const PROFILE: ProviderProfile = {
  slug: 'openai',
  parameters: OPENAI_PARAMETERS,
  tokenLimit: 'max_completion_tokens',
  streamUsage: 'stream_options',
  jsonSchema: true,
  families: [
    // Reasoning models: https://platform.openai.com/docs/guides/reasoning ("Limitations": no temperature, top_p or
    // penalties); `stop` answers 400 unsupported_parameter (github.com/huggingface/smolagents/issues/1671, gpt-5-mini),
    // as does `parallel_tool_calls` on the o-series (github.com/run-llama/llama_index/issues/20865: o1, o3, o4-mini).
    { models: /^o\d/, without: ['topP', ...PENALTIES, 'stop', 'parallelToolCalls'], temperature: 'refused' },
    // GPT-5 (https://platform.openai.com/docs/guides/latest-model, "parameter compatibility"): temperature and top_p
    // only on 5.1 and later with reasoning effort none, which the model name cannot tell, so never. The chat models
    // (gpt-5-chat-latest) do not reason and take everything.
    { models: /^gpt-5(?!.*-chat)/, without: ['topP', ...PENALTIES, 'stop'], temperature: 'refused' },
  ],
};

export const openai: ProviderPlugin = {
  slug: 'openai',
  text: openAiCompatibleText(PROFILE, BASE_URL),
  media: {
    defaultBaseUrl: BASE_URL,
    create: (options) => createOpenAiMediaAdapter({ defaultBaseUrl: options.defaultBaseUrl ?? BASE_URL, http: options.http }),
  },
  listModels: listOpenAiModels(BASE_URL),
};
