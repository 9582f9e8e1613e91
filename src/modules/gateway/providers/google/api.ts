import { UpstreamError, type UpstreamCredential } from '../types.js';
import { callUpstream, httpError, jsonOf, type UpstreamRequest, type UpstreamResponse } from '../media/http.js';
import { directUpstreamHttp, type UpstreamHttp } from '../upstream-http.js';

/**
 * What the Google media adapters share: the native Gemini API root of an account, keyed calls
 * (`x-goog-api-key`), and Google's error shape. See media.ts for the documentation they follow.
 */
export const GOOGLE_DEFAULT_ROOT = 'https://generativelanguage.googleapis.com';

/** Google's limit for a request carrying inline data (images sent as base64). */
export const GOOGLE_INLINE_MAX_BYTES = 20 * 1024 * 1024;

/**
 * The native API root of an account. Its base URL may be the OpenAI-compatible one the text adapter uses
 * (`…/v1beta/openai`), or the native one with or without its version.
 */
export function googleRoot(baseUrl: string | null, fallback: string = GOOGLE_DEFAULT_ROOT): string {
  return (baseUrl ?? fallback)
    .replace(/\/+$/, '')
    .replace(/\/openai$/, '')
    .replace(/\/v1beta$/, '');
}

export interface GoogleClient {
  /** A keyed call to `path` (`/v1beta/...`) under the account's native root. */
  call(credential: UpstreamCredential, method: UpstreamRequest['method'], path: string, body?: unknown, signal?: AbortSignal): Promise<UpstreamResponse>;
  root(credential: UpstreamCredential): string;
  /** The gateway's outbound client, for calls `call` does not make. */
  http: UpstreamHttp;
}

export function googleClient(defaultRoot: string, http: UpstreamHttp = directUpstreamHttp): GoogleClient {
  const root = (credential: UpstreamCredential) => googleRoot(credential.baseUrl, defaultRoot);
  return {
    root,
    http,
    call: (credential, method, path, body, signal) =>
      callUpstream(http, `${root(credential)}${path}`, {
        method,
        headers: { 'x-goog-api-key': credential.apiKey ?? '', accept: 'application/json' },
        body,
        timeoutMs: credential.timeoutMs,
        signal,
      }),
  };
}

export const isOk = (response: { status: number }) => response.status >= 200 && response.status < 300;

/** Reasons (`error.details[].reason`) that mean the key itself is unusable, whatever the HTTP status says. */
const KEY_REASONS = new Set(['API_KEY_INVALID', 'API_KEY_EXPIRED', 'API_KEY_SERVICE_BLOCKED', 'CONSUMER_SUSPENDED', 'SERVICE_DISABLED']);

/** Google answers errors as `{ error: { code, message, status, details: [{ reason, ... }] } }`. */
export function googleErrorOf(response: UpstreamResponse): { status: string | null; reason: string | null; message: string | null } {
  const error = (jsonOf(response) as { error?: { message?: unknown; status?: unknown; details?: unknown } } | null)?.error;
  const details = Array.isArray(error?.details) ? (error.details as { reason?: unknown }[]) : [];
  const reason = details.map((d) => d?.reason).find((r): r is string => typeof r === 'string' && r.length > 0) ?? null;
  const raw = response.body.length > 0 && response.body.length < 500 ? response.body.toString('utf8') : null;
  return {
    status: typeof error?.status === 'string' ? error.status : null,
    reason,
    message: typeof error?.message === 'string' ? error.message : raw,
  };
}

/**
 * An error answer as an `UpstreamError`. Google answers an invalid key with HTTP 400 (`INVALID_ARGUMENT`,
 * reason `API_KEY_INVALID`): that is the account's fault (`auth`, so the pool fails over), not the request's.
 */
export function googleError(response: UpstreamResponse, model: string): UpstreamError {
  const { status, reason, message } = googleErrorOf(response);
  const code = reason ?? status;
  if ((reason && KEY_REASONS.has(reason)) || status === 'UNAUTHENTICATED') {
    return new UpstreamError('auth', message ?? 'Google rejected the API key.', response.status, code);
  }
  return httpError(response, { code, message }, model);
}

/** `google.rpc.Code` names, for the numeric `code` of a failed operation's `error`. */
const RPC_CODES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
];
export const rpcCodeName = (code: unknown): string =>
  typeof code === 'number' && RPC_CODES[code] ? RPC_CODES[code] : typeof code === 'string' && code ? code : 'UNKNOWN';
