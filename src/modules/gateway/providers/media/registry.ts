import type { Clock } from '../../../../platform/clock/clock.js';
import { PROVIDERS } from '../index.js';
import type { LocalMediaOptions } from '../local/media.js';
import type { UpstreamHttp } from '../upstream-http.js';
import type { MediaAdapter } from './media-types.js';

/**
 * The media adapters of the plugins that have a media part (`providers/index.ts`). Accounts (keys, base URL overrides,
 * budgets) are the pool's business: `<PREFIX>_API_KEY` and `<PREFIX>_BASE_URL` as for text providers.
 */
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
  for (const plugin of PROVIDERS) {
    if (plugin.media) adapters.set(plugin.slug, plugin.media.create({ clock: options.clock, local: options.local, http: options.http }));
  }
  return adapters;
}
