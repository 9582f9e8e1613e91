import { asc } from 'drizzle-orm';
import { paymentChannels, type CarrierOption } from '../../db/schema/payments.js';
import type { Db } from '../../platform/db/database.js';
import { badRequest } from '../../platform/http/errors.js';

export type ChannelRow = typeof paymentChannels.$inferSelect;

/** What never changes about a channel: its renewal policy and what checkout needs from the customer. */
export interface ChannelTraits {
  autoRenews: boolean;
  supportsRecurring: boolean;
  recurringDefault?: boolean;
  /** Only these currencies (the regional gateways and carrier billing take BDT). */
  currencies: string[] | null;
  /** `extra` fields checkout asks for; carrier options come from the channel row. */
  fields: Array<{ name: string; label: string; type: 'tel' | 'select' | 'text'; optional?: boolean }>;
}

export const CHANNEL_TRAITS: Record<string, ChannelTraits> = {
  card_global: { autoRenews: false, supportsRecurring: false, currencies: null, fields: [] },
  wallet_global: { autoRenews: false, supportsRecurring: true, recurringDefault: false, currencies: null, fields: [] },
  card_regional: { autoRenews: false, supportsRecurring: false, currencies: ['BDT'], fields: [] },
  wallet_regional_1: { autoRenews: false, supportsRecurring: false, currencies: ['BDT'], fields: [] },
  wallet_regional_2: { autoRenews: false, supportsRecurring: false, currencies: ['BDT'], fields: [] },
  dcb: {
    autoRenews: true,
    supportsRecurring: true,
    recurringDefault: true,
    currencies: ['BDT'],
    fields: [
      { name: 'paymentProvider', label: 'Mobile operator', type: 'select' },
      { name: 'msisdn', label: 'Mobile number (local format, no country code)', type: 'tel' },
    ],
  },
};

/** Seeded once; operators change the rows later (enabled, carriers, registered carrier amounts). */
export const SEED_CHANNELS: Array<typeof paymentChannels.$inferInsert> = [
  { slug: 'card_global', name: 'Card (international)', sortOrder: 10 },
  { slug: 'wallet_global', name: 'Global wallet', sortOrder: 20 },
  { slug: 'card_regional', name: 'Local cards and banking', sortOrder: 30 },
  { slug: 'wallet_regional_1', name: 'Mobile wallet 1', sortOrder: 40 },
  { slug: 'wallet_regional_2', name: 'Mobile wallet 2', sortOrder: 50 },
  {
    slug: 'dcb',
    name: 'Mobile balance (carrier billing)',
    sortOrder: 60,
    carriers: [
      { value: 'GP', label: 'Grameenphone', needsPin: true },
      { value: 'BL', label: 'Banglalink', needsPin: false },
      { value: 'ROBI', label: 'Robi', needsPin: true },
      { value: 'ROBI_WAP', label: 'Robi (web)', needsPin: false },
      { value: 'BKASH', label: 'bKash balance', needsPin: true },
    ],
    // The carrier aggregator has plans registered for these amounts only (the Starter and Pro prices).
    amountsCents: [49_900, 149_900],
  },
];

export async function seedChannels(db: Db): Promise<void> {
  await db.insert(paymentChannels).values(SEED_CHANNELS).onConflictDoNothing();
}

export async function listChannelRows(db: Db): Promise<ChannelRow[]> {
  return db.select().from(paymentChannels).orderBy(asc(paymentChannels.sortOrder), asc(paymentChannels.slug));
}

export function channelView(row: ChannelRow) {
  const traits = CHANNEL_TRAITS[row.slug]!;
  return {
    slug: row.slug,
    name: row.name,
    autoRenews: traits.autoRenews,
    ...(traits.supportsRecurring ? { supportsRecurring: true, recurringDefault: traits.recurringDefault ?? false } : {}),
    requiredFields: traits.fields.map((field) => ({
      name: field.name,
      label: field.label,
      type: field.type,
      ...(field.optional ? { optional: true } : {}),
      ...(field.type === 'select' ? { options: row.carriers.map((c: CarrierOption) => ({ value: c.value, label: c.label, needsPin: c.needsPin })) } : {}),
    })),
  };
}

const MSISDN = /^\d{10,15}$/;

/** Checkout rules 1 and 2: every required field filled, carrier one of the channel's, phone number in local digits. */
export function validateExtra(row: ChannelRow, extra: Record<string, unknown> | undefined): Record<string, string> {
  const traits = CHANNEL_TRAITS[row.slug]!;
  const given = extra ?? {};
  const out: Record<string, string> = {};
  for (const field of traits.fields) {
    const raw = given[field.name];
    const value = typeof raw === 'string' || typeof raw === 'number' ? String(raw).trim() : '';
    if (!value) {
      if (field.optional) continue;
      throw badRequest(`extra.${field.name}: ${field.label} is required to pay with ${row.name}.`, { field: `extra.${field.name}`, provider: row.slug });
    }
    out[field.name] = value;
  }
  if (row.slug === 'dcb') {
    const carrier = row.carriers.find((c) => c.value === out.paymentProvider);
    if (!carrier) {
      throw badRequest(`extra.paymentProvider: "${out.paymentProvider}" is not offered; choose one of ${row.carriers.map((c) => c.value).join(', ')}.`, {
        field: 'extra.paymentProvider',
        options: row.carriers.map((c) => c.value),
      });
    }
    if (!MSISDN.test(out.msisdn!)) {
      throw badRequest('extra.msisdn: enter the mobile number as 10 to 15 digits in local format, without the country code or spaces.', { field: 'extra.msisdn' });
    }
  }
  return out;
}

/** Checkout rule 7's amount cases: the channel's limits and, for carrier billing, its registered amounts. */
export function validateAmount(row: ChannelRow, amountCents: number, currency: string): void {
  const traits = CHANNEL_TRAITS[row.slug]!;
  if (traits.currencies && !traits.currencies.includes(currency)) {
    throw badRequest(`${row.name} takes ${traits.currencies.join(', ')} only; choose another payment provider.`, { provider: row.slug, currency });
  }
  if (row.amountsCents.length > 0 && !row.amountsCents.includes(amountCents)) {
    throw badRequest(`This amount cannot be charged to a mobile balance: the carrier has no plan registered for it. Choose another payment provider.`, {
      provider: row.slug,
      amountCents,
      retryable: false,
    });
  }
  if (amountCents < row.minAmountCents || amountCents > row.maxAmountCents) {
    throw badRequest(`${row.name} takes amounts between ${row.minAmountCents} and ${row.maxAmountCents} minor units; choose another payment provider.`, {
      provider: row.slug,
      amountCents,
    });
  }
}

