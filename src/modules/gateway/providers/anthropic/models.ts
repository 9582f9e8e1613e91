import { getJson, idsOf, urlOf } from '../model-lists.js';
import type { ModelLister } from '../plugin.js';
import { UpstreamError } from '../types.js';

const ANTHROPIC_VERSION = '2023-06-01';
/** A list that never ends is a broken upstream, not a catalog of a hundred thousand models. */
const MAX_PAGES = 100;

/**
 * Anthropic's model list: `GET /v1/models?limit=1000` -> `data[].id`, paged by `after_id` while `has_more`
 * (https://docs.anthropic.com/en/api/models-list).
 */
export const listAnthropicModels =
  (defaultBase: string): ModelLister =>
  async (credential, http) => {
    const found: string[] = [];
    let after: string | null = null;
    for (let page = 0; page < MAX_PAGES; page++) {
      const query = new URLSearchParams({ limit: '1000', ...(after ? { after_id: after } : {}) });
      const headers = { 'x-api-key': credential.apiKey ?? '', 'anthropic-version': ANTHROPIC_VERSION };
      const body = (await getJson(http, urlOf(credential.baseUrl ?? defaultBase, '/v1/models', query), headers, credential)) as {
        data?: unknown;
        has_more?: unknown;
        last_id?: unknown;
      };
      found.push(...idsOf(body.data, 'id'));
      after = body.has_more === true && typeof body.last_id === 'string' ? body.last_id : null;
      if (!after) return found;
    }
    throw new UpstreamError('server', `Anthropic's model list had more than ${MAX_PAGES} pages; it was not read to the end.`, null, 'list_too_long');
  };
