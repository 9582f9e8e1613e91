import { OPENAI_PARAMETERS } from '../openai-compatible/chat.js';
import { listOpenAiModels, openAiCompatibleText } from '../openai-compatible/parts.js';
import { without, type ProviderProfile } from '../openai-compatible/profile.js';
import type { ProviderPlugin } from '../plugin.js';

const BASE_URL = 'https://api.mistral.ai/v1';

// `ChatCompletionStreamRequest$Outbound` in @mistralai/mistralai (github.com/mistralai/client-ts,
// src/models/components/chatcompletionstreamrequest.ts): the seed is `random_seed`, there is no `user` and no
// `stream_options`, and any other field is a 422 "Extra inputs are not permitted". Usage comes unasked on the last
// chunk (the one with the finish reason), as in https://docs.mistral.ai/api/#tag/chat.
const PROFILE: ProviderProfile = {
  slug: 'mistral',
  parameters: without(OPENAI_PARAMETERS, 'user'),
  renames: { seed: 'random_seed' },
  tokenLimit: 'max_tokens',
  streamUsage: 'unasked',
  jsonSchema: true,
};

export const mistral: ProviderPlugin = { slug: 'mistral', text: openAiCompatibleText(PROFILE, BASE_URL), listModels: listOpenAiModels(BASE_URL) };
