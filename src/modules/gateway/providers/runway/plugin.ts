import type { ProviderPlugin } from '../plugin.js';
import { RUNWAY_DEFAULT_BASE_URL, createRunwayAdapter } from './media.js';

/**
 * Runway (video): media only. Its API publishes no list of its models, so the catalog check reports it as not
 * checkable.
 */
export const runway: ProviderPlugin = {
  slug: 'runway',
  media: {
    defaultBaseUrl: RUNWAY_DEFAULT_BASE_URL,
    create: (options) => createRunwayAdapter({ defaultBaseUrl: options.defaultBaseUrl ?? RUNWAY_DEFAULT_BASE_URL, http: options.http }),
  },
};
