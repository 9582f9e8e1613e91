import type { PaymentsConfig } from '../../../config.js';
import type { Clock } from '../../../platform/clock/clock.js';
import type { CallbackInput, ChannelAdapter } from '../types.js';
import { cardGlobal } from './card_global/plugin.js';
import { cardRegional } from './card_regional/plugin.js';
import { liveTransport, sandboxSecret, type GatewaySimulator, type SimStore, type Transport } from './common.js';
import { dcb } from './dcb/plugin.js';
import { SANDBOX_BASE_URL, type ChannelPlugin } from './plugin.js';
import type { CHANNEL_SETTINGS, ChannelSettings } from './settings.js';
import { walletGlobal } from './wallet_global/plugin.js';
import { walletRegional1 } from './wallet_regional_1/plugin.js';
import { walletRegional2 } from './wallet_regional_2/plugin.js';

/** One plugin per entry of CHANNEL_SETTINGS, in its order, each holding that very entry (checked by the compiler). */
type PluginsFor<T extends readonly ChannelSettings[]> = { readonly [K in keyof T]: T[K] extends ChannelSettings ? ChannelPlugin<T[K]> : never };

/**
 * Every payment channel: the seed, traits, checkout rules and running channels derive from this list; src/config.ts
 * reads CHANNEL_SETTINGS, which the type above holds it to.
 */
export const CHANNELS: PluginsFor<typeof CHANNEL_SETTINGS> = [cardGlobal, walletGlobal, cardRegional, walletRegional1, walletRegional2, dcb];

const BY_SLUG = new Map<string, ChannelPlugin>(CHANNELS.map((plugin) => [plugin.settings.slug, plugin]));

/** The plugin of a channel; an unknown slug is a programming error, never some other channel. */
export function channelPlugin(slug: string): ChannelPlugin {
  const plugin = BY_SLUG.get(slug);
  if (!plugin) throw new Error(`unknown payment channel ${slug}`);
  return plugin;
}

export interface ChannelRuntime {
  adapter: ChannelAdapter;
  simulator: GatewaySimulator | null;
}

/** Every channel: live with its credentials, in sandbox (a simulated gateway in-process) without, or absent. */
export function buildChannels(options: {
  config: PaymentsConfig;
  serverSecret: string;
  clock: Clock;
  simStore: SimStore;
  pageUrl(paymentId: string): string;
  deliver(slug: string, input: CallbackInput): Promise<void>;
  needsPin(slug: string, operator: string): Promise<boolean>;
}): Map<string, ChannelRuntime> {
  const channels = new Map<string, ChannelRuntime>();
  for (const plugin of CHANNELS) {
    const slug = plugin.settings.slug;
    const live = options.config.live[slug];
    if (live) {
      channels.set(slug, {
        adapter: plugin.adapter(live.baseUrl, live.values, { transport: liveTransport(), clock: options.clock, mode: 'live' }),
        simulator: null,
      });
      continue;
    }
    if (!options.config.sandbox) continue;
    const values = plugin.sandboxValues((name) => sandboxSecret(options.serverSecret, `${slug}/${name}`));
    const simulator = plugin.simulator(SANDBOX_BASE_URL, values, {
      store: options.simStore,
      pageUrl: (paymentId) => options.pageUrl(paymentId),
      clock: options.clock,
      deliver: (input) => options.deliver(slug, input),
      needsPin: (operator) => options.needsPin(slug, operator),
    });
    const transport: Transport = (url, init) => simulator.handle(new Request(url, init));
    channels.set(slug, { adapter: plugin.adapter(SANDBOX_BASE_URL, values, { transport, clock: options.clock, mode: 'sandbox' }), simulator });
  }
  return channels;
}
