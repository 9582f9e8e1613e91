import type { ChannelPlugin, ChannelValues } from '../plugin.js';
import { createWalletRegional1, simulateWalletRegional1 } from './gateway.js';
import { settings } from './settings.js';

const typed = (baseUrl: string, v: ChannelValues) => ({ baseUrl, appKey: v.APP_KEY!, appSecret: v.APP_SECRET!, username: v.USERNAME!, password: v.PASSWORD! });

export const walletRegional1: ChannelPlugin<typeof settings> = {
  settings,
  seed: { name: 'Mobile wallet 1', sortOrder: 40 },
  traits: { autoRenews: false, supportsRecurring: false, currencies: ['BDT'], fields: [] },
  sandboxValues: (secret) => ({ APP_KEY: secret('app'), APP_SECRET: secret('app-secret'), USERNAME: 'sandboxTokenizedUser', PASSWORD: secret('password') }),
  adapter: (baseUrl, v, deps) => createWalletRegional1(typed(baseUrl, v), deps),
  simulator: (baseUrl, v, ctx) => simulateWalletRegional1(typed(baseUrl, v), ctx),
};
