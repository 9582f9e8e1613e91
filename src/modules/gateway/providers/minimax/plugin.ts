import type { ProviderPlugin } from '../plugin.js';
import { MINIMAX_DEFAULT_BASE_URL, createMinimaxAdapter } from './media.js';

/**
 * MiniMax (video): media only. Its API publishes no list of its models, so the catalog check reports it as not
 * checkable.
 */
export const minimax: ProviderPlugin = {
  slug: 'minimax',
  media: {
    defaultBaseUrl: MINIMAX_DEFAULT_BASE_URL,
    create: (options) => createMinimaxAdapter({ defaultBaseUrl: options.defaultBaseUrl ?? MINIMAX_DEFAULT_BASE_URL, http: options.http }),
  },
};
