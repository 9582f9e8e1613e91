import type { DescribedError } from '../../platform/http/error-handler.js';

/** OpenAI's error body: `{ error: { message, type, code, param } }`. */
export interface OpenAiErrorBody {
  error: { message: string; type: string; code: string | null; param: string | null };
}

/** Our field names where OpenAI's differ (a 400 about `maxTokens` names `max_tokens`). */
const PARAMS: Record<string, string> = { maxTokens: 'max_tokens', 'query.*': 'model' };

/** Codes OpenAI's clients branch on; any other code is passed on in lower case (`MODEL_NOT_IN_PLAN` → `model_not_in_plan`). */
const CODES: Record<string, string> = { QUOTA_EXCEEDED: 'insufficient_quota', RATE_LIMITED: 'rate_limit_exceeded', UNAUTHORIZED: 'invalid_api_key' };

function typeOf(status: number, code: string): string {
  if (code === 'QUOTA_EXCEEDED') return 'insufficient_quota';
  if (status === 401) return 'invalid_request_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

function paramOf(details: unknown): string | null {
  const field = Array.isArray(details) ? (details[0] as { field?: unknown } | undefined)?.field : undefined;
  if (typeof field !== 'string' || !field) return null;
  return PARAMS[field] ?? field;
}

/** A gateway error (same status) in OpenAI's shape. */
export function toOpenAiError(error: DescribedError): OpenAiErrorBody {
  const code = CODES[error.code] ?? (error.status === 404 && error.message.includes('model') ? 'model_not_found' : error.code.toLowerCase());
  return { error: { message: error.message, type: typeOf(error.status, error.code), code, param: paramOf(error.details) } };
}
