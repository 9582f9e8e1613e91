import { UpstreamError, classifyStatus } from '../types.js';
import { connectRefusal, redirectError, type UpstreamHttp } from '../upstream-http.js';
import type { MediaFile } from './media-types.js';

/** One answer of an upstream HTTP API, fully read. */
export interface UpstreamResponse {
  status: number;
  headers: Headers;
  body: Buffer;
}

export interface UpstreamRequest {
  method: 'GET' | 'POST' | 'DELETE';
  headers: Record<string, string>;
  body?: unknown;
  /** A `multipart/form-data` body instead of JSON; fetch writes its content type with the boundary. */
  form?: FormData;
  /** Time for the whole exchange, body included. */
  timeoutMs: number;
  signal?: AbortSignal;
}

/**
 * Calls an upstream API through the gateway's outbound client (each new connection passes its address policy) and
 * reads the whole answer within the time limit. A redirect is refused, never followed. Transport failures become
 * `UpstreamError`s (timeout, network, aborted, a refused address); HTTP statuses are returned for the adapter to
 * interpret.
 */
export async function callUpstream(http: UpstreamHttp, url: string, request: UpstreamRequest): Promise<UpstreamResponse> {
  const json = request.body !== undefined;
  if (json && request.form) throw new TypeError('callUpstream sends a JSON body or a form, not both');
  const timeout = AbortSignal.timeout(request.timeoutMs);
  const signal = request.signal ? AbortSignal.any([timeout, request.signal]) : timeout;
  try {
    const response = await http.fetch(url, {
      method: request.method,
      headers: { ...request.headers, ...(json ? { 'content-type': 'application/json' } : {}) },
      body: json ? JSON.stringify(request.body) : request.form,
      signal,
      redirect: 'manual',
    });
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel().catch(() => undefined);
      throw redirectError(response.status, response.headers.get('location'));
    }
    const body = Buffer.from(await response.arrayBuffer());
    return { status: response.status, headers: response.headers, body };
  } catch (err) {
    if (err instanceof UpstreamError) throw err;
    if (request.signal?.aborted) throw new UpstreamError('aborted', 'The call was cancelled.');
    if (timeout.aborted)
      throw new UpstreamError('timeout', `The provider did not answer within ${Math.round(request.timeoutMs / 100) / 10} s.`, null, 'timeout');
    const refused = connectRefusal(err);
    if (refused) throw refused;
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : err instanceof Error ? err.message : String(err);
    throw new UpstreamError('network', `Could not reach the provider: ${cause}`, null, 'connection_error');
  }
}

export type FormValue = string | number | boolean | MediaFile | null | undefined;

const FILE_EXTENSION: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp', 'image/gif': 'gif' };

/** A multipart form of text fields and files (`MediaFile`s, sent as `<field>.<ext>`); null and undefined fields are left out. */
export function multipartForm(fields: Record<string, FormValue>): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) {
    if (value === null || value === undefined) continue;
    if (typeof value === 'object') form.append(name, new Blob([value.bytes], { type: value.mimeType }), `${name}.${FILE_EXTENSION[value.mimeType] ?? 'bin'}`);
    else form.append(name, String(value));
  }
  return form;
}

/** The answer's JSON, or null when it has none. */
export function jsonOf(response: UpstreamResponse): unknown {
  if (response.body.length === 0) return null;
  try {
    return JSON.parse(response.body.toString('utf8'));
  } catch {
    return null;
  }
}

/** An error answer as an `UpstreamError`, classified by status, the provider's code and its message. */
export function httpError(response: UpstreamResponse, found: { code: string | null; message: string | null }, model: string): UpstreamError {
  const message = found.message?.trim() || `The provider answered HTTP ${response.status}.`;
  const code = found.code ?? `http_${response.status}`;
  return new UpstreamError(classifyStatus(response.status, found.code, message, model), message, response.status, code);
}

/** `extra` keys merged under the adapter's own fields: a caller can add provider options, never replace ours. */
export function mergeExtra(extra: Record<string, unknown> | undefined, own: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...(extra ?? {}) };
  for (const [key, value] of Object.entries(own)) if (value !== undefined) merged[key] = value;
  return merged;
}

/** A `data:` URI of bytes (providers that take images inline). */
export const dataUri = (bytes: Buffer, mimeType: string) => `data:${mimeType};base64,${bytes.toString('base64')}`;
