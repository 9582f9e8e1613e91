import { createHash } from 'node:crypto';
import type { ProviderSettings } from '../../../config.js';
import type { OutboundPolicy } from '../../../platform/net/outbound-policy.js';
import { keyHintOf } from './account-view.js';
import { PROVIDERS, pluginOf } from '../providers/index.js';
import { createOpenAiAdapter } from '../providers/openai-compatible/adapter.js';
import { OPENAI_COMPATIBLE } from '../providers/openai-compatible/profile.js';
import { createUpstreamHttp, type UpstreamHttp } from '../providers/upstream-http.js';
import type { ProviderAdapter } from '../providers/types.js';

/** `together-ai` -> `TOGETHER_AI`: the prefix of the provider's environment variables. */
export const envPrefixOf = (providerSlug: string) => providerSlug.toUpperCase().replace(/[^A-Z0-9]+/g, '_');

/** One upstream account as configured in this instance's environment (the secret never leaves memory). */
export interface ConfiguredAccount {
  providerSlug: string;
  fingerprint: string;
  apiKey: string | null;
  keyHint: string | null;
  baseUrl: string | null;
  label: string;
  monthlyBudgetCents: number | null;
  timeoutMs: number;
}

export interface ProviderEntry {
  slug: string;
  adapter: ProviderAdapter;
  accounts: ConfiguredAccount[];
}

export const DEFAULT_TIMEOUT_MS = 120_000;

const fingerprint = (value: string) => createHash('sha256').update(value).digest('hex');

/**
 * The gateway's one outbound client: every adapter connects through it, and a connection to a base URL operators
 * stored through the admin API passes the outbound policy whenever it is opened (the address checked when the URL was
 * saved may have changed since). The built-in defaults (text and media) and `<PREFIX>_BASE_URL` are the operator's
 * own configuration, trusted as they are: a self-hosted server on the private network is what `<PREFIX>_BASE_URL`
 * is for, and whoever sets the environment holds the keys already.
 */
export function upstreamHttpFor(settings: Record<string, ProviderSettings>, outbound: OutboundPolicy): UpstreamHttp {
  const configured = [
    ...PROVIDERS.flatMap((plugin) => [plugin.text?.defaultBaseUrl, plugin.media?.defaultBaseUrl]),
    ...Object.values(settings).map((config) => config.baseUrl),
  ];
  const trusted = new Set(configured.flatMap((baseUrl) => (baseUrl && URL.canParse(baseUrl) ? [new URL(baseUrl).origin] : [])));
  return createUpstreamHttp((url) => (trusted.has(url.origin) ? null : outbound.connectGuard(url)));
}

/**
 * Builds the adapters (the plugins', `providers/index.ts`) and the configured accounts. A built-in provider (`local`)
 * always has one built-in account; a known provider gets one account per key in `<PREFIX>_API_KEY`; a keyless or
 * unknown provider with `<PREFIX>_BASE_URL` gets one. An unknown one is served as OpenAI-compatible, with OpenAI's field
 * set. Text adapters call out through `http` (see `upstreamHttpFor`); without it, every address is trusted.
 */
export function buildProviderRegistry(
  settings: Record<string, ProviderSettings>,
  options: { localChunkDelayMs?: number; streamIdleTimeoutMs?: number; mediaOnly?: Map<string, ProviderAdapter>; http?: UpstreamHttp } = {},
): Map<string, ProviderEntry> {
  const registry = new Map<string, ProviderEntry>();
  const { http } = options;
  const mediaOnly = options.mediaOnly ?? new Map<string, ProviderAdapter>();
  const slugs = new Set([...PROVIDERS.filter((plugin) => plugin.text).map((plugin) => plugin.slug), ...mediaOnly.keys()]);
  // Unknown prefixes with a base URL are OpenAI-compatible servers; their slug is the lower-cased prefix.
  for (const [prefix, value] of Object.entries(settings)) {
    const slug = prefix.toLowerCase().replace(/_/g, '-');
    if (value.baseUrl && ![...slugs].some((known) => envPrefixOf(known) === prefix)) slugs.add(slug);
  }

  for (const slug of slugs) {
    const plugin = pluginOf(slug);
    const text = plugin?.text;
    const config = settings[envPrefixOf(slug)];
    const timeoutMs = config?.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const mediaAdapter = text ? undefined : mediaOnly.get(slug);
    if (mediaAdapter) {
      // A provider with media models only (video, speech): one account per key, its own default address.
      for (const apiKey of config?.apiKeys ?? []) mediaAdapter.checkKeyShape?.(apiKey);
      const accounts: ConfiguredAccount[] = (config?.apiKeys ?? []).map((apiKey, index) => ({
        providerSlug: slug,
        fingerprint: fingerprint(`${apiKey}`),
        apiKey,
        keyHint: keyHintOf(apiKey),
        baseUrl: config?.baseUrl ?? null,
        label: `${envPrefixOf(slug)}_API_KEY #${index + 1}`,
        monthlyBudgetCents: config?.monthlyBudgetCents ?? null,
        timeoutMs,
      }));
      registry.set(slug, { slug, adapter: mediaAdapter, accounts });
      continue;
    }
    const adapterOptions = { streamIdleTimeoutMs: options.streamIdleTimeoutMs, http, localChunkDelayMs: options.localChunkDelayMs };
    if (plugin?.builtIn && text) {
      registry.set(slug, {
        slug,
        adapter: text.create(adapterOptions),
        accounts: [
          { providerSlug: slug, fingerprint: 'built-in', apiKey: null, keyHint: null, baseUrl: null, label: 'built-in', monthlyBudgetCents: null, timeoutMs },
        ],
      });
      continue;
    }
    const baseUrl = config?.baseUrl ?? null;
    const accounts: ConfiguredAccount[] = (config?.apiKeys ?? []).map((apiKey, index) => ({
      providerSlug: slug,
      fingerprint: fingerprint(`${apiKey}`),
      apiKey,
      keyHint: keyHintOf(apiKey),
      baseUrl,
      label: `${envPrefixOf(slug)}_API_KEY #${index + 1}`,
      monthlyBudgetCents: config?.monthlyBudgetCents ?? null,
      timeoutMs,
    }));
    if (accounts.length === 0 && baseUrl && (plugin?.keyless || !text)) {
      accounts.push({
        providerSlug: slug,
        fingerprint: fingerprint(`keyless:${baseUrl}`),
        apiKey: null,
        keyHint: null,
        baseUrl,
        label: `${envPrefixOf(slug)}_BASE_URL`,
        monthlyBudgetCents: config?.monthlyBudgetCents ?? null,
        timeoutMs,
      });
    }
    const adapter = text
      ? text.create(adapterOptions)
      : createOpenAiAdapter({
          defaultBaseUrl: baseUrl ?? 'http://127.0.0.1/v1',
          profile: OPENAI_COMPATIBLE,
          streamIdleTimeoutMs: options.streamIdleTimeoutMs,
          http,
        });
    registry.set(slug, { slug, adapter, accounts });
  }
  return registry;
}
