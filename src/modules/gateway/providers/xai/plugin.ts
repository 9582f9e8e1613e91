import { OPENAI_PARAMETERS } from '../openai-compatible/chat.js';
import { listOpenAiModels, openAiCompatibleText } from '../openai-compatible/parts.js';
import { PENALTIES, type ProviderProfile } from '../openai-compatible/profile.js';
import type { ProviderPlugin } from '../plugin.js';

const BASE_URL = 'https://api.x.ai/v1';

// https://docs.x.ai/docs/api-reference#chat-completions: OpenAI's set; stream_options.include_usage is taken.
const PROFILE: ProviderProfile = {
  slug: 'xai',
  parameters: OPENAI_PARAMETERS,
  tokenLimit: 'max_tokens',
  streamUsage: 'stream_options',
  jsonSchema: true,
  families: [
    // https://docs.x.ai/docs/guides/reasoning: "presencePenalty, frequencyPenalty and stop parameters are not supported
    // by reasoning models. Adding them in the request would result in error." Every grok-3-mini, grok-4 and
    // grok-code model reasons, but for the `-non-reasoning` variants.
    { models: /^grok-(3-mini|4|code)(?!.*non-reasoning)/, without: [...PENALTIES, 'stop'] },
    // The grok-4 non-reasoning variants refuse the penalties too (github.com/miaoxworld/NativeTavern/issues/83).
    { models: /^grok-4.*non-reasoning/, without: PENALTIES },
  ],
};

export const xai: ProviderPlugin = { slug: 'xai', text: openAiCompatibleText(PROFILE, BASE_URL), listModels: listOpenAiModels(BASE_URL) };
