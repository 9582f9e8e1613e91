import type { ChannelPlugin, ChannelValues } from '../plugin.js';
import { createCardRegional, simulateCardRegional } from './gateway.js';
import { settings } from './settings.js';

const typed = (baseUrl: string, v: ChannelValues) => ({ baseUrl, storeId: v.STORE_ID!, storePassword: v.STORE_PASSWORD! });

export const cardRegional: ChannelPlugin<typeof settings> = {
  settings,
  seed: { name: 'Local cards and banking', sortOrder: 30 },
  traits: { autoRenews: false, supportsRecurring: false, currencies: ['BDT'], fields: [] },
  sandboxValues: (secret) => ({ STORE_ID: `sandbox${secret('store').slice(0, 8)}`, STORE_PASSWORD: secret('password') }),
  adapter: (baseUrl, v, deps) => createCardRegional(typed(baseUrl, v), deps),
  simulator: (baseUrl, v, ctx) => simulateCardRegional(typed(baseUrl, v), ctx),
};
