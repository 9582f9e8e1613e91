import type { Clock } from '../../../../platform/clock/clock.js';
import { BFL_DEFAULT_BASE_URL, createBflAdapter } from './bfl.js';
import { createElevenLabsAdapter, ELEVENLABS_DEFAULT_BASE_URL } from './elevenlabs.js';
import { createGoogleMediaAdapter, GOOGLE_DEFAULT_ROOT } from './google-media.js';
import { createIdeogramAdapter, IDEOGRAM_DEFAULT_BASE_URL } from './ideogram.js';
import { createKlingAdapter, KLING_DEFAULT_BASE_URL } from './kling.js';
import { createLocalMediaProvider, type LocalMediaOptions } from './local-media.js';
import type { MediaAdapter } from './media-types.js';
import { createMinimaxAdapter, MINIMAX_DEFAULT_BASE_URL } from './minimax.js';
import { createOpenAiMediaAdapter } from './openai-media.js';
import { createRecraftAdapter, RECRAFT_DEFAULT_BASE_URL } from './recraft.js';
import { createRunwayAdapter, RUNWAY_DEFAULT_BASE_URL } from './runway.js';
import { createStabilityAdapter, STABILITY_DEFAULT_BASE_URL } from './stability.js';
import type { UpstreamHttp } from '../upstream-http.js';

/**
 * Which media adapter serves which catalog provider, and where its API lives by default. Accounts (keys, base URL
 * overrides, budgets) are the pool's business: `<PREFIX>_API_KEY` and `<PREFIX>_BASE_URL` as for text providers.
 */
export interface KnownMediaProvider {
  adapter: 'local' | 'openai' | 'runway' | 'elevenlabs' | 'google' | 'stability' | 'ideogram' | 'recraft' | 'bfl' | 'kling' | 'minimax';
  baseUrl?: string;
}

export const KNOWN_MEDIA_PROVIDERS: Record<string, KnownMediaProvider> = {
  bfl: { adapter: 'bfl', baseUrl: BFL_DEFAULT_BASE_URL },
  kling: { adapter: 'kling', baseUrl: KLING_DEFAULT_BASE_URL },
  minimax: { adapter: 'minimax', baseUrl: MINIMAX_DEFAULT_BASE_URL },
  local: { adapter: 'local' },
  openai: { adapter: 'openai', baseUrl: 'https://api.openai.com/v1' },
  runway: { adapter: 'runway', baseUrl: RUNWAY_DEFAULT_BASE_URL },
  elevenlabs: { adapter: 'elevenlabs', baseUrl: ELEVENLABS_DEFAULT_BASE_URL },
  google: { adapter: 'google', baseUrl: GOOGLE_DEFAULT_ROOT },
  stability: { adapter: 'stability', baseUrl: STABILITY_DEFAULT_BASE_URL },
  ideogram: { adapter: 'ideogram', baseUrl: IDEOGRAM_DEFAULT_BASE_URL },
  recraft: { adapter: 'recraft', baseUrl: RECRAFT_DEFAULT_BASE_URL },
};

export interface MediaRegistryOptions {
  clock: Clock;
  /** Tuning of the built-in provider (video render time, images per call, clip size). */
  local?: Omit<LocalMediaOptions, 'clock'>;
  /** The gateway's outbound client, every adapter's way out (default: every address trusted). */
  http?: UpstreamHttp;
}

/** One media adapter per provider slug that has one; a provider missing here has no media adapter (503 for its media models). */
export function buildMediaAdapters(options: MediaRegistryOptions): Map<string, MediaAdapter> {
  const adapters = new Map<string, MediaAdapter>();
  for (const [slug, known] of Object.entries(KNOWN_MEDIA_PROVIDERS)) {
    switch (known.adapter) {
      case 'bfl':
        adapters.set(slug, createBflAdapter({ defaultBaseUrl: known.baseUrl, http: options.http }));
        break;
      case 'kling':
        adapters.set(slug, createKlingAdapter({ defaultBaseUrl: known.baseUrl, http: options.http }));
        break;
      case 'minimax':
        adapters.set(slug, createMinimaxAdapter({ defaultBaseUrl: known.baseUrl, http: options.http }));
        break;
      case 'local':
        adapters.set(slug, createLocalMediaProvider({ ...options.local, clock: options.clock }));
        break;
      case 'openai':
        adapters.set(slug, createOpenAiMediaAdapter({ defaultBaseUrl: known.baseUrl!, http: options.http }));
        break;
      case 'runway':
        adapters.set(slug, createRunwayAdapter({ defaultBaseUrl: known.baseUrl, http: options.http }));
        break;
      case 'elevenlabs':
        adapters.set(slug, createElevenLabsAdapter({ defaultBaseUrl: known.baseUrl, http: options.http }));
        break;
      case 'google':
        adapters.set(slug, createGoogleMediaAdapter({ defaultBaseUrl: known.baseUrl, http: options.http }));
        break;
      case 'stability':
        adapters.set(slug, createStabilityAdapter({ defaultBaseUrl: known.baseUrl, http: options.http }));
        break;
      case 'ideogram':
        adapters.set(slug, createIdeogramAdapter({ defaultBaseUrl: known.baseUrl, http: options.http }));
        break;
      case 'recraft':
        adapters.set(slug, createRecraftAdapter({ defaultBaseUrl: known.baseUrl, http: options.http }));
        break;
    }
  }
  return adapters;
}
