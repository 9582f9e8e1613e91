import { getJson, idsOf, urlOf } from '../model-lists.js';
import type { ModelLister, TextPlugin } from '../plugin.js';
import { UpstreamError } from '../types.js';
import { createOpenAiAdapter } from './adapter.js';
import type { ProviderProfile } from './profile.js';

/** The text part of an OpenAI-compatible provider's plugin: OpenAI's wire adapter, speaking the provider's profile. */
export function openAiCompatibleText(profile: ProviderProfile, defaultBaseUrl: string): TextPlugin {
  return {
    defaultBaseUrl,
    profile,
    create: (options) =>
      createOpenAiAdapter({
        defaultBaseUrl: options.defaultBaseUrl ?? defaultBaseUrl,
        profile,
        streamIdleTimeoutMs: options.streamIdleTimeoutMs,
        http: options.http,
      }),
  };
}

/**
 * OpenAI's model list, which the compatible servers answer too: `GET {base}/models` -> `data[].id`
 * (https://platform.openai.com/docs/api-reference/models/list). Without a default, the account's base URL is needed.
 */
export const listOpenAiModels =
  (defaultBase: string | undefined): ModelLister =>
  async (credential, http) => {
    const base = credential.baseUrl ?? defaultBase;
    if (!base) throw new UpstreamError('server', 'The account has no base URL to ask.', null, 'no_base_url');
    const body = await getJson(http, urlOf(base, '/models'), credential.apiKey ? { authorization: `Bearer ${credential.apiKey}` } : {}, credential);
    // OpenAI answers `{ object: "list", data: [...] }`; a few compatible servers answer the bare array.
    return idsOf(Array.isArray(body) ? body : (body as { data?: unknown }).data, 'id');
  };
