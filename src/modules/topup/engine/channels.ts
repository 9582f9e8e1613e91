import type { EngineChannel } from './types.js';

/** `৳1,250.00` style display of minor units (two decimals for every supported currency). */
export function formatMoney(cents: number, currency: string): string {
  const symbol = currency === 'BDT' ? '৳' : `${currency} `;
  const whole = Math.trunc(cents / 100).toLocaleString('en-US');
  const fraction = String(Math.abs(cents % 100)).padStart(2, '0');
  return `${symbol}${whole}.${fraction}`;
}

/**
 * Rule 4: the channels that can take `amountCents`. A channel with registered amounts takes only those; carrier
 * billing (`registeredAmountsOnly`) with none registered is not offered for top-ups. Switched-off channels are left out.
 */
export function payableChannels(
  channels: EngineChannel[],
  amountCents: number,
  currency: string,
): { payableWith: string[]; unavailableChannels: { slug: string; reason: string }[] } {
  const payableWith: string[] = [];
  const unavailableChannels: { slug: string; reason: string }[] = [];
  const money = (cents: number) => formatMoney(cents, currency);
  for (const channel of channels) {
    if (!channel.enabled) continue;
    let reason: string | null = null;
    if (channel.registeredAmountsOnly && channel.amountsCents.length === 0) {
      reason = `${channel.name} is not offered for top-ups.`;
    } else if (channel.amountsCents.length > 0 && !channel.amountsCents.includes(amountCents)) {
      const amounts = [...channel.amountsCents]
        .sort((a, b) => a - b)
        .map(money)
        .join(', ');
      reason = `${channel.name} takes only these amounts: ${amounts}. Change the top-up to one of them or choose another channel.`;
    } else if (amountCents < channel.minAmountCents) {
      reason = `${channel.name} takes at least ${money(channel.minAmountCents)}.`;
    } else if (amountCents > channel.maxAmountCents) {
      reason = `${channel.name} takes at most ${money(channel.maxAmountCents)}.`;
    }
    if (reason === null) payableWith.push(channel.slug);
    else unavailableChannels.push({ slug: channel.slug, reason });
  }
  return { payableWith, unavailableChannels };
}
