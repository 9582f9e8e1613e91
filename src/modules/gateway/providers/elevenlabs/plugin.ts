import { getJson, idsOf, urlOf } from '../model-lists.js';
import type { ProviderPlugin } from '../plugin.js';
import { createElevenLabsAdapter, ELEVENLABS_DEFAULT_BASE_URL } from './media.js';

/** ElevenLabs (speech and music): media only. */
export const elevenlabs: ProviderPlugin = {
  slug: 'elevenlabs',
  media: {
    defaultBaseUrl: ELEVENLABS_DEFAULT_BASE_URL,
    create: (options) => createElevenLabsAdapter({ defaultBaseUrl: options.defaultBaseUrl ?? ELEVENLABS_DEFAULT_BASE_URL, http: options.http }),
  },
  // `GET /v1/models` -> `[].model_id` (https://elevenlabs.io/docs/api-reference/models/list).
  listModels: async (credential, http) =>
    idsOf(
      await getJson(http, urlOf(credential.baseUrl ?? ELEVENLABS_DEFAULT_BASE_URL, '/v1/models'), { 'xi-api-key': credential.apiKey ?? '' }, credential),
      'model_id',
    ),
};
