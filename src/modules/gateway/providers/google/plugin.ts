import { openAiCompatibleText } from '../openai-compatible/parts.js';
import type { ProviderProfile } from '../openai-compatible/profile.js';
import type { ProviderPlugin } from '../plugin.js';
import { GOOGLE_DEFAULT_ROOT, googleClient } from './api.js';
import { createGoogleMediaAdapter } from './media.js';
import { listGoogleModels } from './models.js';

/** Text goes through the Gemini API's OpenAI-compatible endpoint; media and the model list through its native API. */
const BASE_URL = 'https://generativelanguage.googleapis.com/v1beta/openai';

// https://ai.google.dev/gemini-api/docs/openai. The endpoint refuses fields it does not know with 400 "Unknown name
// ... Cannot find field", seen for seed, frequency_penalty and presence_penalty (github.com/Vali-98/ChatterUI/issues/227,
// github.com/BerriAI/litellm/issues/14753) and parallel_tool_calls ("Parallel tool calls are not supported",
// github.com/TheAgenticAI/TheAgenticBrowser/issues/4); `user` is not documented.
const PROFILE: ProviderProfile = {
  slug: 'google',
  parameters: new Set(['tools', 'toolChoice', 'responseFormat', 'topP', 'stop']),
  tokenLimit: 'max_tokens',
  streamUsage: 'stream_options',
  jsonSchema: true,
};

export const google: ProviderPlugin = {
  slug: 'google',
  text: openAiCompatibleText(PROFILE, BASE_URL),
  media: {
    defaultBaseUrl: GOOGLE_DEFAULT_ROOT,
    create: (options) => createGoogleMediaAdapter({ defaultBaseUrl: options.defaultBaseUrl ?? GOOGLE_DEFAULT_ROOT, http: options.http }),
  },
  listModels: (credential, http) => listGoogleModels(googleClient(GOOGLE_DEFAULT_ROOT, http), credential),
};
