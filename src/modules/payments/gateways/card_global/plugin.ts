import type { ChannelPlugin, ChannelValues } from '../plugin.js';
import { createCardGlobal, simulateCardGlobal } from './gateway.js';
import { settings } from './settings.js';

const typed = (baseUrl: string, v: ChannelValues) => ({ baseUrl, secretKey: v.SECRET_KEY!, webhookSecret: v.WEBHOOK_SECRET! });

export const cardGlobal: ChannelPlugin<typeof settings> = {
  settings,
  seed: { name: 'Card (international)', sortOrder: 10 },
  traits: { autoRenews: false, supportsRecurring: false, currencies: null, fields: [] },
  sandboxValues: (secret) => ({ SECRET_KEY: `sk_test_${secret('key')}`, WEBHOOK_SECRET: `whsec_${secret('webhook')}` }),
  adapter: (baseUrl, v, deps) => createCardGlobal(typed(baseUrl, v), deps),
  simulator: (baseUrl, v, ctx) => simulateCardGlobal(typed(baseUrl, v), ctx),
};
