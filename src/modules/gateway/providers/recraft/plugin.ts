import type { ProviderPlugin } from '../plugin.js';
import { RECRAFT_DEFAULT_BASE_URL, createRecraftAdapter } from './media.js';

/**
 * Recraft (raster and vector images): media only. Its API publishes no list of its models, so the catalog check reports it as not
 * checkable.
 */
export const recraft: ProviderPlugin = {
  slug: 'recraft',
  media: {
    defaultBaseUrl: RECRAFT_DEFAULT_BASE_URL,
    create: (options) => createRecraftAdapter({ defaultBaseUrl: options.defaultBaseUrl ?? RECRAFT_DEFAULT_BASE_URL, http: options.http }),
  },
};
