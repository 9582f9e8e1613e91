import type { ProviderPlugin } from '../plugin.js';
import { KLING_DEFAULT_BASE_URL, createKlingAdapter } from './media.js';

/**
 * Kling (video): media only. Its API publishes no list of its models, so the catalog check reports it as not
 * checkable.
 */
export const kling: ProviderPlugin = {
  slug: 'kling',
  media: {
    defaultBaseUrl: KLING_DEFAULT_BASE_URL,
    create: (options) => createKlingAdapter({ defaultBaseUrl: options.defaultBaseUrl ?? KLING_DEFAULT_BASE_URL, http: options.http }),
  },
};
