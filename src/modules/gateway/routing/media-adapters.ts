import type { Clock } from '../../../platform/clock/clock.js';
import { pluginOf } from '../providers/index.js';
import type { LocalMediaOptions } from '../providers/local/media.js';
import type { MediaAdapter } from '../providers/media/media-types.js';
import { buildMediaAdapters } from '../providers/media/registry.js';
import { UpstreamError, type ProviderAdapter } from '../providers/types.js';
import type { UpstreamHttp } from '../providers/upstream-http.js';

export interface MediaProviders {
  /** The media adapter of each provider slug that has one. */
  adapters: Map<string, MediaAdapter>;
  /** Providers with media models only, as pool entries (their credential check is the media adapter's). */
  mediaOnly: Map<string, ProviderAdapter>;
}

/** A media-only provider seen by the upstream-account pool: it proves credentials, and makes no text. */
function asPoolAdapter(media: MediaAdapter): ProviderAdapter {
  const noText = () => Promise.reject(new UpstreamError('model_not_found', `The provider "${media.kind}" makes media only; it has no text models.`));
  return {
    kind: media.kind,
    needsCredential: media.needsCredential,
    parameters: new Set(),
    images: false,
    jsonSchema: false,
    generateText: noText,
    streamText: noText,
    checkCredential: (credential) => media.checkCredential(credential),
    ...(media.checkKeyShape ? { checkKeyShape: (apiKey: string) => media.checkKeyShape!(apiKey) } : {}),
  };
}

export function buildMediaProviders(clock: Clock, local?: Omit<LocalMediaOptions, 'clock'>, http?: UpstreamHttp): MediaProviders {
  const adapters = buildMediaAdapters({ clock, local, http });
  const mediaOnly = new Map<string, ProviderAdapter>();
  for (const [slug, adapter] of adapters) if (!pluginOf(slug)?.text) mediaOnly.set(slug, asPoolAdapter(adapter));
  return { adapters, mediaOnly };
}
