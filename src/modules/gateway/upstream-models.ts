import { eq } from 'drizzle-orm';
import { providerAccounts } from '../../db/schema/gateway.js';
import type { Db } from '../../platform/db/database.js';
import { GOOGLE_DEFAULT_ROOT, googleClient } from './providers/media/google-api.js';
import { listGoogleModels } from './providers/media/google-models.js';
import { callUpstream, httpError, jsonOf } from './providers/media/http.js';
import { KNOWN_MEDIA_PROVIDERS } from './providers/media/registry.js';
import { UpstreamError, type UpstreamCredential } from './providers/types.js';
import type { UpstreamHttp } from './providers/upstream-http.js';
import type { UpstreamPool } from './pool.js';
import { KNOWN_PROVIDERS, envPrefixOf, type ProviderEntry } from './registry.js';

/**
 * What each provider says it serves, asked with the accounts the gateway calls with and through its outbound client,
 * for the catalog check (catalog/provider-check.ts). Read-only: nothing is metered, no account's health or provider
 * status changes. The list endpoints, each answering the model ids that calls name:
 * - OpenAI and the OpenAI-compatible servers: `GET {base}/models` -> `data[].id`
 *   (https://platform.openai.com/docs/api-reference/models/list);
 * - Anthropic: `GET /v1/models?limit=1000` -> `data[].id`, paged by `after_id` while `has_more`
 *   (https://docs.anthropic.com/en/api/models-list);
 * - Google: the native `GET /v1beta/models` (google-models.ts);
 * - ElevenLabs: `GET /v1/models` -> `[].model_id` (https://elevenlabs.io/docs/api-reference/models/list).
 * The other media providers (Stability, Black Forest Labs, Ideogram, Recraft, Kling, Runway, MiniMax) publish no
 * endpoint that lists their models: they are reported as not checkable.
 */
export type UpstreamModelList =
  | { status: 'LISTED'; models: string[] }
  | { status: 'NOT_CHECKABLE' | 'NOT_CONFIGURED'; reason: string }
  | { status: 'ERROR'; reason: string; error: { code: string; status: number | null; message: string } };

/** A list is one cheap read: an account's long generation time limit is not needed for it. */
const LIST_TIMEOUT_MS = 30_000;
const ANTHROPIC_VERSION = '2023-06-01';
const MAX_PAGES = 100;

type Lister = (credential: UpstreamCredential) => Promise<string[]>;

/** `base` + `path` (+ `query`), keeping a query the base URL carries (some compatible servers need one, e.g. an api-version). */
function urlOf(base: string, path: string, query?: URLSearchParams): string {
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

export function createUpstreamModels(deps: { db: Db; registry: Map<string, ProviderEntry>; pool: UpstreamPool; http: UpstreamHttp }) {
  const { db, registry, pool, http } = deps;

  async function getJson(url: string, headers: Record<string, string>, credential: UpstreamCredential): Promise<unknown> {
    const response = await callUpstream(http, url, { method: 'GET', headers: { accept: 'application/json', ...headers }, timeoutMs: credential.timeoutMs });
    const body = jsonOf(response);
    if (response.status < 200 || response.status >= 300) throw httpError(response, errorFields(body), '');
    if (body === null) throw new UpstreamError('server', 'The provider answered the model list with something other than JSON.', response.status, 'malformed_answer');
    return body;
  }

  const ids = (items: unknown, field: 'id' | 'model_id'): string[] =>
    (Array.isArray(items) ? (items as Record<string, unknown>[]) : []).flatMap((item) => {
      const id = item?.[field];
      return typeof id === 'string' && id ? [id] : [];
    });

  const openAiCompatible =
    (defaultBase: string | undefined): Lister =>
    async (credential) => {
      const base = credential.baseUrl ?? defaultBase;
      if (!base) throw new UpstreamError('server', 'The account has no base URL to ask.', null, 'no_base_url');
      const body = await getJson(urlOf(base, '/models'), credential.apiKey ? { authorization: `Bearer ${credential.apiKey}` } : {}, credential);
      // OpenAI answers `{ object: "list", data: [...] }`; a few compatible servers answer the bare array.
      return ids(Array.isArray(body) ? body : (body as { data?: unknown }).data, 'id');
    };

  const anthropic =
    (defaultBase: string): Lister =>
    async (credential) => {
      const found: string[] = [];
      let after: string | null = null;
      for (let page = 0; page < MAX_PAGES; page++) {
        const query = new URLSearchParams({ limit: '1000', ...(after ? { after_id: after } : {}) });
        const headers = { 'x-api-key': credential.apiKey ?? '', 'anthropic-version': ANTHROPIC_VERSION };
        const body = (await getJson(urlOf(credential.baseUrl ?? defaultBase, '/v1/models', query), headers, credential)) as { data?: unknown; has_more?: unknown; last_id?: unknown };
        found.push(...ids(body.data, 'id'));
        after = body.has_more === true && typeof body.last_id === 'string' ? body.last_id : null;
        if (!after) return found;
      }
      throw new UpstreamError('server', `Anthropic's model list had more than ${MAX_PAGES} pages; it was not read to the end.`, null, 'list_too_long');
    };

  const elevenLabs =
    (defaultBase: string): Lister =>
    async (credential) =>
      ids(await getJson(urlOf(credential.baseUrl ?? defaultBase, '/v1/models'), { 'xi-api-key': credential.apiKey ?? '' }, credential), 'model_id');

  function listerOf(slug: string): Lister | null {
    if (slug === 'google') return (credential) => listGoogleModels(googleClient(GOOGLE_DEFAULT_ROOT, http), credential);
    const text = KNOWN_PROVIDERS[slug];
    if (text?.adapter === 'anthropic') return anthropic(text.baseUrl ?? 'https://api.anthropic.com');
    if (text?.adapter === 'openai') return openAiCompatible(text.baseUrl);
    const media = KNOWN_MEDIA_PROVIDERS[slug];
    if (media?.adapter === 'elevenlabs' && media.baseUrl) return elevenLabs(media.baseUrl);
    // A provider the gateway serves as OpenAI-compatible because it was configured with a base URL only.
    return media ? null : openAiCompatible(undefined);
  }

  /**
   * The accounts the pool would call with: the environment's (unless an operator disabled them) and the operators'
   * enabled ones whose keys this instance can open. Read from the table, not the pool's queue, so nothing is rotated.
   */
  async function credentialsOf(slug: string): Promise<UpstreamCredential[]> {
    const entry = registry.get(slug);
    if (!entry) return [];
    const rows = await db.select().from(providerAccounts).where(eq(providerAccounts.providerSlug, slug));
    const disabled = new Set(rows.filter((row) => !row.enabled).map((row) => row.keyFingerprint));
    const configured = entry.accounts
      .filter((account) => !disabled.has(account.fingerprint))
      .map((account) => ({ accountId: account.label, providerSlug: slug, apiKey: account.apiKey, baseUrl: account.baseUrl, timeoutMs: account.timeoutMs }));
    const added = rows.filter((row) => row.source === 'OPERATOR' && pool.usable(row)).flatMap((row) => pool.credentialById(row.id) ?? []);
    return [...configured, ...added].map((credential) => ({ ...credential, timeoutMs: Math.min(credential.timeoutMs, LIST_TIMEOUT_MS) }));
  }

  return {
    /** Providers this instance has an adapter for (the built-in `local` one aside). */
    providers: (): string[] => [...registry.keys()].filter((slug) => slug !== 'local'),

    /** What the provider lists, trying its accounts in turn until one answers. */
    async list(slug: string): Promise<UpstreamModelList> {
      if (slug === 'local') return { status: 'NOT_CHECKABLE', reason: 'The local provider is built into this service.' };
      if (!registry.has(slug)) return { status: 'NOT_CONFIGURED', reason: `This service has no adapter for "${slug}".` };
      // Without an account the provider's models are not sold, so whether it could be checked does not matter yet.
      const credentials = await credentialsOf(slug);
      if (credentials.length === 0) return { status: 'NOT_CONFIGURED', reason: `No enabled account: set ${envPrefixOf(slug)}_API_KEY or add one with POST /v1/admin/providers/${slug}/accounts.` };
      const lister = listerOf(slug);
      if (!lister) return { status: 'NOT_CHECKABLE', reason: `The ${slug} API has no endpoint that lists its models: compare the catalog with the provider's changelog by hand.` };
      let last: UpstreamError | null = null;
      for (const credential of credentials) {
        try {
          return { status: 'LISTED', models: [...new Set(await lister(credential))].sort() };
        } catch (err) {
          if (!(err instanceof UpstreamError)) throw err;
          last = err;
        }
      }
      const tried = credentials.length === 1 ? 'its account' : `each of its ${credentials.length} accounts`;
      return { status: 'ERROR', reason: `The provider did not list its models for ${tried}: ${last!.message}`, error: last!.toDetails() };
    },
  };
}

export type UpstreamModels = ReturnType<typeof createUpstreamModels>;
