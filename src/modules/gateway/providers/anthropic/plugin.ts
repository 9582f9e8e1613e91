import type { ImagePart } from '../types.js';
import type { ProviderPlugin } from '../plugin.js';
import { listAnthropicModels } from './models.js';
import { createAnthropicAdapter } from './text.js';

const BASE_URL = 'https://api.anthropic.com';

/** Anthropic's rule: width x height / 750, after scaling to a long side of at most 1568 and at most 1.15 megapixels. */
export function anthropicImageTokens(image: ImagePart): number {
  let width = image.width ?? 1568;
  let height = image.height ?? 1568;
  const scale = Math.min(1, 1568 / Math.max(width, height), Math.sqrt(1_150_000 / (width * height)));
  width = Math.floor(width * scale);
  height = Math.floor(height * scale);
  return Math.ceil((width * height) / 750);
}

export const anthropic: ProviderPlugin = {
  slug: 'anthropic',
  text: {
    defaultBaseUrl: BASE_URL,
    imageTokens: anthropicImageTokens,
    create: (options) =>
      createAnthropicAdapter({ defaultBaseUrl: options.defaultBaseUrl ?? BASE_URL, streamIdleTimeoutMs: options.streamIdleTimeoutMs, http: options.http }),
  },
  listModels: listAnthropicModels(BASE_URL),
};
