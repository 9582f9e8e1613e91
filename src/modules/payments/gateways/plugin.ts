import type { CarrierOption, paymentChannels } from '../../../db/schema/payments.js';
import type { Clock } from '../../../platform/clock/clock.js';
import type { ChannelAdapter } from '../types.js';
import type { GatewaySimulator, SimContext, Transport } from './common.js';
import type { ChannelSettings } from './settings.js';

type ChannelRow = typeof paymentChannels.$inferSelect;

/** Where a sandbox adapter sends its requests: its simulator, in process (the host is never resolved). */
export const SANDBOX_BASE_URL = 'http://sandbox.invalid';

/** What never changes about a channel: its renewal policy and what checkout needs from the customer. */
export interface ChannelTraits {
  autoRenews: boolean;
  supportsRecurring: boolean;
  recurringDefault?: boolean;
  /** Only these currencies (the regional gateways and carrier billing take BDT). */
  currencies: string[] | null;
  /** `extra` fields checkout asks for; a `select` offers the carriers of the channel's row. */
  fields: Array<{ name: string; label: string; type: 'tel' | 'select' | 'text'; optional?: boolean }>;
}

/** A channel's `<CHANNEL>_...` values by suffix: the live variables, or the ones sandbox derives. */
export type ChannelValues = Record<string, string>;

export interface AdapterDeps {
  transport: Transport;
  clock: Clock;
  mode: 'live' | 'sandbox';
}

export interface SimulatorContext extends SimContext {
  /** Whether a carrier option texts a PIN (read from the channel's row); only carrier billing asks. */
  needsPin(operator: string): Promise<boolean>;
}

/**
 * One payment channel, everything about it in its folder `gateways/<slug>/`, listed in `CHANNELS` (`gateways/index.ts`)
 * from which the seed, traits, checkout rules and running channels derive. Without credentials the channel runs its
 * adapter against its simulator (sandbox); tests use the same simulator as a fake gateway. A channel that takes a PIN
 * says so by its adapter's `verifyPin`.
 */
export interface ChannelPlugin<S extends ChannelSettings = ChannelSettings> {
  /** Slug and variables, in `<slug>/settings.ts` (src/config.ts reads them from there). */
  readonly settings: S;
  /** Its `payment_channels` row, inserted once; operators change it later (enabled, carriers, amounts). */
  readonly seed: { name: string; sortOrder: number; carriers?: CarrierOption[]; amountsCents?: number[] };
  readonly traits: ChannelTraits;
  /**
   * The values it runs with in sandbox, one for each of `settings.variables`. `secret(name)` is derived from the
   * service's key and this channel, so every instance derives the same.
   */
  sandboxValues(secret: (name: string) => string): ChannelValues;
  adapter(baseUrl: string, values: ChannelValues, deps: AdapterDeps): ChannelAdapter;
  /** The gateway speaking its wire format, checking the same values (sandbox, and fake gateways in tests). */
  simulator(baseUrl: string, values: ChannelValues, ctx: SimulatorContext): GatewaySimulator;
  /** Its checks of checkout's `extra` once every field of `traits.fields` is filled; throws badRequest. */
  validateExtra?(row: ChannelRow, extra: Record<string, string>): void;
  /** Takes only the amounts registered on its row (the top-up builder offers no others). */
  readonly registeredAmountsOnly?: boolean;
  /**
   * Its callbacks are unsigned and believed through the checkout they name, so one naming none of ours is refused;
   * other channels' verified callbacks about something else on the account are acknowledged and ignored.
   */
  readonly callbackMustNameCheckout?: boolean;
}
