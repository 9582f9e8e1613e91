// @storefront/client: a typed client for the Storefront HTTP API. The types (schema.d.ts) are generated from the
// committed OpenAPI document (`npm run client:generate`); the runtime is openapi-fetch (a thin wrapper over fetch).
import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { components, operations, paths } from './schema.js';

export type { components, operations, paths };
/** JSON answers are what the types describe (a route that can also stream, like POST /v1/ai/text, is typed by its JSON answer). */
export type StorefrontClient = Client<paths, 'application/json'>;
/** The error envelope every route answers with: `{ error: { code, message, details } }`. */
export type StorefrontError = components['schemas']['ErrorResponse'];

export interface StorefrontClientOptions extends Omit<ClientOptions, 'baseUrl' | 'headers'> {
  /** Where the service runs, e.g. `http://localhost:3000` (no trailing `/v1`: paths carry it). */
  baseUrl: string;
  /** An access token (from sign-up or login) or an API key (`sk_sf_…`), sent as `Authorization: Bearer`. */
  token?: string;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
}

/**
 * A client whose paths, parameters, bodies and answers are typed from the OpenAPI document:
 * `const { data, error } = await client.POST('/v1/ai/text', { body: { model, messages } })`.
 * `data` is the success body and `error` the error envelope; exactly one of them is set.
 */
export function createStorefrontClient(options: StorefrontClientOptions): StorefrontClient {
  const { baseUrl, token, headers, ...rest } = options;
  return createClient<paths, 'application/json'>({
    ...rest,
    baseUrl: baseUrl.replace(/\/+$/, ''),
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
  });
}
