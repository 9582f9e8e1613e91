import { eq } from 'drizzle-orm';
import { providerAccounts } from '../../../db/schema/gateway.js';
import type { Db } from '../../../platform/db/database.js';
import { pluginOf } from '../providers/index.js';
import { listOpenAiModels } from '../providers/openai-compatible/parts.js';
import type { ModelLister } from '../providers/plugin.js';
import { UpstreamError, type UpstreamCredential } from '../providers/types.js';
import type { UpstreamHttp } from '../providers/upstream-http.js';
import type { UpstreamPool } from './pool.js';
import { envPrefixOf, type ProviderEntry } from './registry.js';

/**
 * What each provider says it serves, asked with the accounts the gateway calls with and through its outbound client,
 * for the catalog check (catalog/provider-check.ts). Read-only: nothing is metered, no account's health or provider
 * status changes. How a provider lists its models is its plugin's `listModels` (OpenAI's `GET {base}/models` for the
 * OpenAI-compatible ones); a provider whose API publishes no list is reported as not checkable, and one known only by
 * its `<PREFIX>_BASE_URL` is asked as OpenAI-compatible.
 */
export type UpstreamModelList =
  | { status: 'LISTED'; models: string[] }
  | { status: 'NOT_CHECKABLE' | 'NOT_CONFIGURED'; reason: string }
  | { status: 'ERROR'; reason: string; error: { code: string; status: number | null; message: string } };

/** A list is one cheap read: an account's long generation time limit is not needed for it. */
const LIST_TIMEOUT_MS = 30_000;

export function createUpstreamModels(deps: { db: Db; registry: Map<string, ProviderEntry>; pool: UpstreamPool; http: UpstreamHttp }) {
  const { db, registry, pool, http } = deps;

  function listerOf(slug: string): ModelLister | null {
    const plugin = pluginOf(slug);
    return plugin ? (plugin.listModels ?? null) : listOpenAiModels(undefined);
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
    /** Providers this instance has an adapter for (the built-in one aside). */
    providers: (): string[] => [...registry.keys()].filter((slug) => !pluginOf(slug)?.builtIn),

    /** What the provider lists, trying its accounts in turn until one answers. */
    async list(slug: string): Promise<UpstreamModelList> {
      if (pluginOf(slug)?.builtIn) return { status: 'NOT_CHECKABLE', reason: `The ${slug} provider is built into this service.` };
      if (!registry.has(slug)) return { status: 'NOT_CONFIGURED', reason: `This service has no adapter for "${slug}".` };
      // Without an account the provider's models are not sold, so whether it could be checked does not matter yet.
      const credentials = await credentialsOf(slug);
      if (credentials.length === 0)
        return {
          status: 'NOT_CONFIGURED',
          reason: `No enabled account: set ${envPrefixOf(slug)}_API_KEY or add one with POST /v1/admin/providers/${slug}/accounts.`,
        };
      const lister = listerOf(slug);
      if (!lister)
        return {
          status: 'NOT_CHECKABLE',
          reason: `The ${slug} API has no endpoint that lists its models: compare the catalog with the provider's changelog by hand.`,
        };
      let last: UpstreamError | null = null;
      for (const credential of credentials) {
        try {
          return { status: 'LISTED', models: [...new Set(await lister(credential, http))].sort() };
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
