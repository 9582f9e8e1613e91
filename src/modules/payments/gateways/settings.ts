import { settings as cardGlobal } from './card_global/settings.js';
import { settings as cardRegional } from './card_regional/settings.js';
import { settings as dcb } from './dcb/settings.js';
import { settings as walletGlobal } from './wallet_global/settings.js';
import { settings as walletRegional1 } from './wallet_regional_1/settings.js';
import { settings as walletRegional2 } from './wallet_regional_2/settings.js';

/** What src/config.ts knows of a payment channel: its `<CHANNEL>_...` variables, from `<slug>/settings.ts`. */
export interface ChannelSettings {
  /** Its folder's name, and upper-cased the prefix of its variables. */
  readonly slug: string;
  /** Variable suffixes a live channel needs, all of them; with none set the channel can run in sandbox. */
  readonly variables: readonly string[];
  /** Its API address unless `<CHANNEL>_BASE_URL` says otherwise; null when that variable is required to go live. */
  readonly baseUrl: string | null;
}

/**
 * The channels' settings, for src/config.ts, which may not depend on the plugins (they import config.ts types), so
 * this list and everything it imports import nothing. The plugin list (index.ts) is typed to follow it one for one.
 */
export const CHANNEL_SETTINGS = [cardGlobal, walletGlobal, cardRegional, walletRegional1, walletRegional2, dcb] as const satisfies readonly ChannelSettings[];

export type ChannelSlug = (typeof CHANNEL_SETTINGS)[number]['slug'];
