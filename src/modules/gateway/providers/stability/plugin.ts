import type { ProviderPlugin } from '../plugin.js';
import { STABILITY_DEFAULT_BASE_URL, createStabilityAdapter } from './media.js';

/**
 * Stability AI (images and Stable Audio): media only. Its API publishes no list of its models, so the catalog check reports it as not
 * checkable.
 */
export const stability: ProviderPlugin = {
  slug: 'stability',
  media: {
    defaultBaseUrl: STABILITY_DEFAULT_BASE_URL,
    create: (options) => createStabilityAdapter({ defaultBaseUrl: options.defaultBaseUrl ?? STABILITY_DEFAULT_BASE_URL, http: options.http }),
  },
};
