import type { Clock } from '../../../../platform/clock/clock.js';
import { createElevenLabsAdapter, ELEVENLABS_DEFAULT_BASE_URL } from './elevenlabs.js';
import { createLocalMediaProvider, type LocalMediaOptions } from './local-media.js';
import type { MediaAdapter } from './media-types.js';
import { createOpenAiMediaAdapter } from './openai-media.js';
import { createRunwayAdapter, RUNWAY_DEFAULT_BASE_URL } from './runway.js';

/**
 * Which media adapter serves which catalog provider, and where its API lives by default. Accounts (keys, base URL
 * overrides, budgets) are the pool's business: `<PREFIX>_API_KEY` and `<PREFIX>_BASE_URL` as for text providers.
 */
export interface KnownMediaProvider {
  adapter: 'local' | 'openai' | 'runway' | 'elevenlabs';
  baseUrl?: string;
}

export const KNOWN_MEDIA_PROVIDERS: Record<string, KnownMediaProvider> = {
  local: { adapter: 'local' },
  openai: { adapter: 'openai', baseUrl: 'https://api.openai.com/v1' },
  runway: { adapter: 'runway', baseUrl: RUNWAY_DEFAULT_BASE_URL },
  elevenlabs: { adapter: 'elevenlabs', baseUrl: ELEVENLABS_DEFAULT_BASE_URL },
};

export interface MediaRegistryOptions {
  clock: Clock;
  /** Tuning of the built-in provider (video render time, images per call, clip size). */
  local?: Omit<LocalMediaOptions, 'clock'>;
}

/** One media adapter per provider slug that has one; a provider missing here has no media adapter (503 for its media models). */
export function buildMediaAdapters(options: MediaRegistryOptions): Map<string, MediaAdapter> {
  const adapters = new Map<string, MediaAdapter>();
  for (const [slug, known] of Object.entries(KNOWN_MEDIA_PROVIDERS)) {
    switch (known.adapter) {
      case 'local':
        adapters.set(slug, createLocalMediaProvider({ ...options.local, clock: options.clock }));
        break;
      case 'openai':
        adapters.set(slug, createOpenAiMediaAdapter({ defaultBaseUrl: known.baseUrl! }));
        break;
      case 'runway':
        adapters.set(slug, createRunwayAdapter({ defaultBaseUrl: known.baseUrl }));
        break;
      case 'elevenlabs':
        adapters.set(slug, createElevenLabsAdapter({ defaultBaseUrl: known.baseUrl }));
        break;
    }
  }
  return adapters;
}
