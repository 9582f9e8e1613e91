import type { ChannelPlugin, ChannelValues } from '../plugin.js';
import { createWalletGlobal, simulateWalletGlobal } from './gateway.js';
import { settings } from './settings.js';

const typed = (baseUrl: string, v: ChannelValues) => ({ baseUrl, clientId: v.CLIENT_ID!, clientSecret: v.CLIENT_SECRET!, webhookId: v.WEBHOOK_ID! });

export const walletGlobal: ChannelPlugin<typeof settings> = {
  settings,
  seed: { name: 'Global wallet', sortOrder: 20 },
  traits: { autoRenews: false, supportsRecurring: true, recurringDefault: false, currencies: null, fields: [] },
  sandboxValues: (secret) => ({ CLIENT_ID: secret('client'), CLIENT_SECRET: secret('secret'), WEBHOOK_ID: `WH-${secret('webhook').slice(0, 17)}` }),
  adapter: (baseUrl, v, deps) => createWalletGlobal(typed(baseUrl, v), deps),
  simulator: (baseUrl, v, ctx) => simulateWalletGlobal(typed(baseUrl, v), ctx),
};
