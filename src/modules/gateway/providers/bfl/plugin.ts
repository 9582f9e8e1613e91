import type { ProviderPlugin } from '../plugin.js';
import { BFL_DEFAULT_BASE_URL, createBflAdapter } from './media.js';

/**
 * Black Forest Labs (FLUX images): media only. Its API publishes no list of its models, so the catalog check reports it as not
 * checkable.
 */
export const bfl: ProviderPlugin = {
  slug: 'bfl',
  media: {
    defaultBaseUrl: BFL_DEFAULT_BASE_URL,
    create: (options) => createBflAdapter({ defaultBaseUrl: options.defaultBaseUrl ?? BFL_DEFAULT_BASE_URL, http: options.http }),
  },
};
