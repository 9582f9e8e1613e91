import type { ProviderPlugin } from '../plugin.js';
import { IDEOGRAM_DEFAULT_BASE_URL, createIdeogramAdapter } from './media.js';

/**
 * Ideogram (images): media only. Its API publishes no list of its models, so the catalog check reports it as not
 * checkable.
 */
export const ideogram: ProviderPlugin = {
  slug: 'ideogram',
  media: {
    defaultBaseUrl: IDEOGRAM_DEFAULT_BASE_URL,
    create: (options) => createIdeogramAdapter({ defaultBaseUrl: options.defaultBaseUrl ?? IDEOGRAM_DEFAULT_BASE_URL, http: options.http }),
  },
};
