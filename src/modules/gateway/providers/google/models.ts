import { UpstreamError, type UpstreamCredential } from '../types.js';
import { googleError, isOk, type GoogleClient } from './api.js';
import { jsonOf } from '../media/http.js';

/**
 * The models the Gemini API serves a key, from `GET /v1beta/models` (https://ai.google.dev/api/models#method:-models.list):
 * pages of at most 1000 `models[]` entries named `models/<id>`, followed by `nextPageToken` until it is absent. The
 * native list is the one that names every model the key can call (text, image, video, embeddings); the OpenAI-compatible
 * `/v1beta/openai/models` the text adapter checks keys with is not read here.
 */
const PAGE_SIZE = 1000;
/** A list that never ends is a broken upstream, not a catalog of a hundred thousand models. */
const MAX_PAGES = 100;

/** Model ids as calls name them (`gemini-2.5-flash`, without `models/`), in Google's order. */
export async function listGoogleModels(client: GoogleClient, credential: UpstreamCredential): Promise<string[]> {
  const ids: string[] = [];
  let pageToken: string | null = null;
  for (let page = 0; page < MAX_PAGES; page++) {
    const query = new URLSearchParams({ pageSize: String(PAGE_SIZE), ...(pageToken ? { pageToken } : {}) });
    const response = await client.call(credential, 'GET', `/v1beta/models?${query.toString()}`);
    if (!isOk(response)) throw googleError(response, '');
    const answer = jsonOf(response) as { models?: unknown; nextPageToken?: unknown } | null;
    if (!answer || typeof answer !== 'object')
      throw new UpstreamError('server', 'Google answered the model list with something other than JSON.', response.status, 'malformed_answer');
    // Google's JSON (proto3) leaves an empty list out: an empty page is `{}`.
    const models = Array.isArray(answer.models) ? (answer.models as { name?: unknown }[]) : [];
    for (const model of models) if (typeof model?.name === 'string' && model.name) ids.push(model.name.replace(/^models\//, ''));
    pageToken = typeof answer.nextPageToken === 'string' && answer.nextPageToken ? answer.nextPageToken : null;
    if (!pageToken) return ids;
  }
  throw new UpstreamError('server', `Google's model list had more than ${MAX_PAGES} pages; it was not read to the end.`, null, 'list_too_long');
}
