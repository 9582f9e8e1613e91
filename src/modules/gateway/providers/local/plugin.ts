import type { ProviderPlugin } from '../plugin.js';
import { createLocalMediaProvider } from './media.js';
import { createLocalProvider } from './text.js';

/** The built-in offline provider: one model of every type, so the service works with no credentials at all. */
export const local: ProviderPlugin = {
  slug: 'local',
  builtIn: true,
  text: { create: (options) => createLocalProvider({ chunkDelayMs: options.localChunkDelayMs }) },
  media: { create: (options) => createLocalMediaProvider({ ...options.local, clock: options.clock }) },
};
