import { callUpstream, httpError, jsonOf } from './media/http.js';
import { UpstreamError, type UpstreamCredential } from './types.js';
import type { UpstreamHttp } from './upstream-http.js';

/** What the plugins' model listers (`ModelLister`) share: one JSON read, and the ids out of a list. */

/** `base` + `path` (+ `query`), keeping a query the base URL carries (some compatible servers need one, e.g. an api-version). */
export function urlOf(base: string, path: string, query?: URLSearchParams): string {
  if (!URL.canParse(base)) throw new UpstreamError('network', `The account's base URL is not a valid URL: ${base}`, null, 'connection_error');
  const url = new URL(base);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${path}`;
  for (const [name, value] of query ?? []) url.searchParams.set(name, value);
  return url.toString();
}

/** The message and code of an error answer in OpenAI's, Anthropic's or ElevenLabs' shape. */
function errorFields(body: unknown): { code: string | null; message: string | null } {
  const error = (body as { error?: { message?: unknown; code?: unknown; type?: unknown } } | null)?.error;
  const detail = (body as { detail?: { message?: unknown; status?: unknown } } | null)?.detail;
  const text = (v: unknown) => (typeof v === 'string' && v ? v : null);
  return { code: text(error?.code) ?? text(error?.type) ?? text(detail?.status), message: text(error?.message) ?? text(detail?.message) };
}

/** A GET of JSON within the credential's time limit; an error status or a body that is not JSON is an `UpstreamError`. */
export async function getJson(http: UpstreamHttp, url: string, headers: Record<string, string>, credential: UpstreamCredential): Promise<unknown> {
  const response = await callUpstream(http, url, { method: 'GET', headers: { accept: 'application/json', ...headers }, timeoutMs: credential.timeoutMs });
  const body = jsonOf(response);
  if (response.status < 200 || response.status >= 300) throw httpError(response, errorFields(body), '');
  if (body === null)
    throw new UpstreamError('server', 'The provider answered the model list with something other than JSON.', response.status, 'malformed_answer');
  return body;
}

/** The non-empty string `field` of each item of a list (anything else reads as an empty list). */
export const idsOf = (items: unknown, field: 'id' | 'model_id'): string[] =>
  (Array.isArray(items) ? (items as Record<string, unknown>[]) : []).flatMap((item) => {
    const id = item?.[field];
    return typeof id === 'string' && id ? [id] : [];
  });
