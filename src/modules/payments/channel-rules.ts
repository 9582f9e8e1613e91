import { eq } from 'drizzle-orm';
import { paymentChannels } from '../../db/schema/payments.js';
import { badRequest, notFound } from '../../platform/http/errors.js';
import type { AuditWriter } from '../audit/service.js';
import type { PaymentsContext } from './context.js';
import { channelPlugin } from './gateways/index.js';

/**
 * For the top-up builder: the channels that run now with the amounts each may take. Carrier billing takes only its
 * registered amounts (none registered: not offered for top-ups).
 */
export async function amountRules(ctx: Pick<PaymentsContext, 'offeredChannels'>) {
  return (await ctx.offeredChannels()).map((row) => ({
    slug: row.slug,
    name: row.name,
    enabled: true,
    minAmountCents: row.minAmountCents,
    maxAmountCents: row.maxAmountCents,
    amountsCents: [...row.amountsCents],
    registeredAmountsOnly: channelPlugin(row.slug).registeredAmountsOnly === true,
  }));
}

/** The amounts carrier billing may take (`GET /v1/admin/topup/payment-rules/dcb`). */
export async function carrierAmounts(ctx: Pick<PaymentsContext, 'db'>): Promise<{ amountsCents: number[] }> {
  const [row] = await ctx.db.select({ amountsCents: paymentChannels.amountsCents }).from(paymentChannels).where(eq(paymentChannels.slug, 'dcb'));
  if (!row) throw notFound('The carrier billing channel is not set up.');
  return { amountsCents: [...row.amountsCents] };
}

/**
 * `PUT /v1/admin/topup/payment-rules/dcb`: the amounts the carrier aggregator has registered (positive, unique,
 * ascending: checked by the caller's schema and again here), written with its audit row in one transaction.
 */
export async function setCarrierAmounts(
  ctx: Pick<PaymentsContext, 'db' | 'clock'>,
  amountsCents: number[],
  audit: AuditWriter,
): Promise<{ amountsCents: number[] }> {
  const bad = amountsCents.findIndex((a, i) => !Number.isSafeInteger(a) || a <= 0 || (i > 0 && a <= amountsCents[i - 1]!));
  if (bad >= 0)
    throw badRequest(`amountsCents must be positive whole minor units, each larger than the one before (no repeats); item ${bad} is ${amountsCents[bad]}.`, {
      index: bad,
    });
  return ctx.db.transaction(async (tx) => {
    const [row] = await tx.select({ amountsCents: paymentChannels.amountsCents }).from(paymentChannels).where(eq(paymentChannels.slug, 'dcb')).for('update');
    if (!row) throw notFound('The carrier billing channel is not set up.');
    await tx.update(paymentChannels).set({ amountsCents, updatedAt: ctx.clock.now() }).where(eq(paymentChannels.slug, 'dcb'));
    await audit(
      {
        action: 'topup.payment-rules.dcb.update',
        targetType: 'payment_channel',
        targetId: 'dcb',
        before: { amountsCents: row.amountsCents },
        after: { amountsCents },
      },
      tx,
    );
    return { amountsCents: [...amountsCents] };
  });
}
