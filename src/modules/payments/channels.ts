import { asc } from 'drizzle-orm';
import { paymentChannels, type CarrierOption } from '../../db/schema/payments.js';
import type { Db } from '../../platform/db/database.js';
import { badRequest } from '../../platform/http/errors.js';
import { channelPlugin, CHANNELS } from './gateways/index.js';

export type ChannelRow = typeof paymentChannels.$inferSelect;

/** Seeded once from the plugins; operators change the rows later (enabled, carriers, registered carrier amounts). */
export const SEED_CHANNELS: Array<typeof paymentChannels.$inferInsert> = CHANNELS.map((plugin) => ({ slug: plugin.settings.slug, ...plugin.seed }));

export async function seedChannels(db: Db): Promise<void> {
  await db.insert(paymentChannels).values(SEED_CHANNELS).onConflictDoNothing();
}

export async function listChannelRows(db: Db): Promise<ChannelRow[]> {
  return db.select().from(paymentChannels).orderBy(asc(paymentChannels.sortOrder), asc(paymentChannels.slug));
}

export function channelView(row: ChannelRow) {
  const { traits } = channelPlugin(row.slug);
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

/** Checkout rules 1 and 2: every required field filled, then the channel's own checks (a carrier's, a phone number). */
export function validateExtra(row: ChannelRow, extra: Record<string, unknown> | undefined): Record<string, string> {
  const plugin = channelPlugin(row.slug);
  const given = extra ?? {};
  const out: Record<string, string> = {};
  for (const field of plugin.traits.fields) {
    const raw = given[field.name];
    const value = typeof raw === 'string' || typeof raw === 'number' ? String(raw).trim() : '';
    if (!value) {
      if (field.optional) continue;
      throw badRequest(`extra.${field.name}: ${field.label} is required to pay with ${row.name}.`, { field: `extra.${field.name}`, provider: row.slug });
    }
    out[field.name] = value;
  }
  plugin.validateExtra?.(row, out);
  return out;
}

/** Checkout rule 7's amount cases: the channel's limits and, for carrier billing, its registered amounts. */
export function validateAmount(row: ChannelRow, amountCents: number, currency: string): void {
  const { traits } = channelPlugin(row.slug);
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
