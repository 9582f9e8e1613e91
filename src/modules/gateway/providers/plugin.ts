import type { Clock } from '../../../platform/clock/clock.js';
import type { ImageTokenRule } from '../text/tokens.js';
import type { LocalMediaOptions } from './local/media.js';
import type { MediaAdapter } from './media/media-types.js';
import type { ProviderProfile } from './openai-compatible/profile.js';
import type { ProviderAdapter, UpstreamCredential } from './types.js';
import type { UpstreamHttp } from './upstream-http.js';

/**
 * One AI provider as the gateway knows it, described by itself in its own folder (`providers/<slug>/plugin.ts`) and
 * listed once in `providers/index.ts`; the registries, the catalog check and the token counts read it from there.
 * What it sells (models, prices) is the catalog's: its rows in `src/modules/catalog/` carry the same slug.
 * Accounts are not its business: `<PREFIX>_API_KEY`, `<PREFIX>_BASE_URL` and the operators' accounts give it those.
 */
export interface ProviderPlugin {
  /** The catalog provider it serves; also its folder's name and, upper-cased, the prefix of its variables. */
  readonly slug: string;
  /** Built into this service (no upstream, no key): it has one built-in account and nothing to fake. */
  readonly builtIn?: boolean;
  /** A server that takes no key (a self-hosted Ollama or vLLM): `<PREFIX>_BASE_URL` alone gives it an account. */
  readonly keyless?: boolean;
  /** Its chat API, when it has one. */
  readonly text?: TextPlugin;
  /** Its image, video and audio APIs, when it has any. */
  readonly media?: MediaPlugin;
  /** How the catalog check asks it which models it serves; absent when its API publishes no list (not checkable). */
  readonly listModels?: ModelLister;
  /**
   * Why the catalog seeds none of its models, for a provider served without seeded rows (a self-hosted server serves
   * whatever its operator loaded): its models are added through the admin API. Absent: the catalog seeds its models.
   */
  readonly unseeded?: string;
}

export interface TextPlugin {
  /** Where its API lives when an account names no base URL of its own. */
  readonly defaultBaseUrl?: string;
  /** For an OpenAI-compatible API: what its chat-completions endpoint takes (served by `openai-compatible/`). */
  readonly profile?: ProviderProfile;
  /** What an image in the input costs, for the estimate before a call (default: OpenAI's rule, `imageTokenRule`). */
  readonly imageTokens?: ImageTokenRule;
  readonly create: (options: TextAdapterOptions) => ProviderAdapter;
}

/** What the gateway hands every text adapter it builds. */
export interface TextAdapterOptions {
  /** The plugin's own default, unless the caller names another. */
  readonly defaultBaseUrl?: string;
  /** Silence allowed between stream events. */
  readonly streamIdleTimeoutMs?: number;
  /** The gateway's outbound client (default: every address trusted). */
  readonly http?: UpstreamHttp;
  /** Pause between streamed pieces of the built-in provider (ignored by the others). */
  readonly localChunkDelayMs?: number;
}

export interface MediaPlugin {
  /** Where its API lives when an account names no base URL of its own. */
  readonly defaultBaseUrl?: string;
  readonly create: (options: MediaAdapterOptions) => MediaAdapter;
}

/** What the gateway hands every media adapter it builds. */
export interface MediaAdapterOptions {
  /** The plugin's own default, unless the caller names another. */
  readonly defaultBaseUrl?: string;
  /** The gateway's outbound client (default: every address trusted). */
  readonly http?: UpstreamHttp;
  readonly clock: Clock;
  /** Tuning of the built-in provider (video render time, images per call, clip size); ignored by the others. */
  readonly local?: Omit<LocalMediaOptions, 'clock'>;
}

/**
 * The model ids the provider says it serves, asked with one of its accounts through the gateway's outbound client
 * (`routing/upstream-models.ts`); an answer that is not a list is an `UpstreamError`.
 */
export type ModelLister = (credential: UpstreamCredential, http: UpstreamHttp) => Promise<string[]>;
