import { createHash } from 'node:crypto';
import type { ProviderSettings } from '../../config.js';
import type { OutboundPolicy } from '../../platform/net/outbound-policy.js';
import { keyHintOf } from './account-view.js';
import { createAnthropicAdapter } from './providers/anthropic.js';
import { createLocalProvider } from './providers/local.js';
import { createOpenAiAdapter } from './providers/openai.js';
import { profileOf } from './providers/profiles.js';
import { KNOWN_MEDIA_PROVIDERS } from './providers/media/registry.js';
import { createUpstreamHttp, type UpstreamHttp } from './providers/upstream-http.js';
import type { ProviderAdapter } from './providers/types.js';

/**
 * Which adapter serves which catalog provider, and where its API lives by default; what an OpenAI-compatible API takes
 * is its profile (`providers/profiles.ts`). A provider not listed here but configured with `<PREFIX>_BASE_URL` is
 * served as OpenAI-compatible, with OpenAI's field set.
 */
interface KnownProvider {
  adapter: 'local' | 'openai' | 'anthropic';
  baseUrl?: string;
  /** Servers that take no key (a local Ollama or vLLM). */
  keyless?: boolean;
}

export const KNOWN_PROVIDERS: Record<string, KnownProvider> = {
  local: { adapter: 'local' },
  openai: { adapter: 'openai', baseUrl: 'https://api.openai.com/v1' },
  anthropic: { adapter: 'anthropic', baseUrl: 'https://api.anthropic.com' },
  google: { adapter: 'openai', baseUrl: 'https://generativelanguage.googleapis.com/v1beta/openai' },
  openrouter: { adapter: 'openai', baseUrl: 'https://openrouter.ai/api/v1' },
  groq: { adapter: 'openai', baseUrl: 'https://api.groq.com/openai/v1' },
  mistral: { adapter: 'openai', baseUrl: 'https://api.mistral.ai/v1' },
  deepseek: { adapter: 'openai', baseUrl: 'https://api.deepseek.com/v1' },
  xai: { adapter: 'openai', baseUrl: 'https://api.x.ai/v1' },
  together: { adapter: 'openai', baseUrl: 'https://api.together.xyz/v1' },
  fireworks: { adapter: 'openai', baseUrl: 'https://api.fireworks.ai/inference/v1' },
  perplexity: { adapter: 'openai', baseUrl: 'https://api.perplexity.ai' },
  ollama: { adapter: 'openai', baseUrl: 'http://127.0.0.1:11434/v1', keyless: true },
  vllm: { adapter: 'openai', baseUrl: 'http://127.0.0.1:8000/v1', keyless: true },
};

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
    ...Object.values(KNOWN_PROVIDERS).map((known) => known.baseUrl),
    ...Object.values(KNOWN_MEDIA_PROVIDERS).map((known) => known.baseUrl),
    ...Object.values(settings).map((config) => config.baseUrl),
  ];
  const trusted = new Set(configured.flatMap((baseUrl) => (baseUrl && URL.canParse(baseUrl) ? [new URL(baseUrl).origin] : [])));
  return createUpstreamHttp((url) => (trusted.has(url.origin) ? null : outbound.connectGuard(url)));
}

/**
 * Builds the adapters and the configured accounts. `local` always has one built-in account; a known provider
 * gets one account per key in `<PREFIX>_API_KEY`; a keyless or unknown provider with `<PREFIX>_BASE_URL` gets one.
 * Text adapters call out through `http` (see `upstreamHttpFor`); without it, every address is trusted.
 */
export function buildProviderRegistry(
  settings: Record<string, ProviderSettings>,
  options: { localChunkDelayMs?: number; streamIdleTimeoutMs?: number; mediaOnly?: Map<string, ProviderAdapter>; http?: UpstreamHttp } = {},
): Map<string, ProviderEntry> {
  const registry = new Map<string, ProviderEntry>();
  const { http } = options;
  const mediaOnly = options.mediaOnly ?? new Map<string, ProviderAdapter>();
  const slugs = new Set([...Object.keys(KNOWN_PROVIDERS), ...mediaOnly.keys()]);
  // Unknown prefixes with a base URL are OpenAI-compatible servers; their slug is the lower-cased prefix.
  for (const [prefix, value] of Object.entries(settings)) {
    const slug = prefix.toLowerCase().replace(/_/g, '-');
    if (value.baseUrl && ![...slugs].some((known) => envPrefixOf(known) === prefix)) slugs.add(slug);
  }

  for (const slug of slugs) {
    const known = KNOWN_PROVIDERS[slug] ?? { adapter: 'openai' as const };
    const config = settings[envPrefixOf(slug)];
    const timeoutMs = config?.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const mediaAdapter = KNOWN_PROVIDERS[slug] ? undefined : mediaOnly.get(slug);
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
    if (known.adapter === 'local') {
      registry.set(slug, {
        slug,
        adapter: createLocalProvider({ chunkDelayMs: options.localChunkDelayMs }),
        accounts: [{ providerSlug: slug, fingerprint: 'built-in', apiKey: null, keyHint: null, baseUrl: null, label: 'built-in', monthlyBudgetCents: null, timeoutMs }],
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
    if (accounts.length === 0 && baseUrl && (known.keyless || !KNOWN_PROVIDERS[slug])) {
      accounts.push({ providerSlug: slug, fingerprint: fingerprint(`keyless:${baseUrl}`), apiKey: null, keyHint: null, baseUrl, label: `${envPrefixOf(slug)}_BASE_URL`, monthlyBudgetCents: config?.monthlyBudgetCents ?? null, timeoutMs });
    }
    const adapter =
      known.adapter === 'anthropic'
        ? createAnthropicAdapter({ defaultBaseUrl: known.baseUrl, streamIdleTimeoutMs: options.streamIdleTimeoutMs, http })
        : createOpenAiAdapter({ defaultBaseUrl: known.baseUrl ?? baseUrl ?? 'http://127.0.0.1/v1', profile: profileOf(slug), streamIdleTimeoutMs: options.streamIdleTimeoutMs, http });
    registry.set(slug, { slug, adapter, accounts });
  }
  return registry;
}
