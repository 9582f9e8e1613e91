import { OPENAI_PARAMETERS } from '../openai-compatible/chat.js';
import { listOpenAiModels, openAiCompatibleText } from '../openai-compatible/parts.js';
import { PENALTIES, without, type ProviderProfile } from '../openai-compatible/profile.js';
import type { ProviderPlugin } from '../plugin.js';

const BASE_URL = 'https://api.groq.com/openai/v1';

// `ChatCompletionCreateParams` in groq-sdk (github.com/groq/groq-typescript, src/resources/chat/completions.ts):
// frequency_penalty and presence_penalty are "not yet supported by any of our models" (taken and ignored). A stream's
// usage comes in `x_groq.usage` on its last chunk, and in OpenAI's usage chunk when asked.
const PROFILE: ProviderProfile = {
  slug: 'groq',
  parameters: without(OPENAI_PARAMETERS, ...PENALTIES),
  tokenLimit: 'max_tokens',
  streamUsage: 'stream_options',
  jsonSchema: true,
};

export const groq: ProviderPlugin = { slug: 'groq', text: openAiCompatibleText(PROFILE, BASE_URL), listModels: listOpenAiModels(BASE_URL) };
