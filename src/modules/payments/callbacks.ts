import { and, eq } from 'drizzle-orm';
import { payments } from '../../db/schema/payments.js';
import type { Db } from '../../platform/db/database.js';
import { notFound } from '../../platform/http/errors.js';
import type { Confirmation } from './confirm.js';
import type { PaymentsContext } from './context.js';
import { GatewayError, invalidCallback, providerUnavailable } from './gateways/common.js';
import { channelPlugin } from './gateways/index.js';
import { isUuid } from './sandbox.js';
import type { CallbackInput, PaymentRow } from './types.js';

async function findPayment(db: Db, channel: string, by: { paymentId?: string | undefined; gatewayRef?: string | undefined }): Promise<PaymentRow | null> {
  if (by.paymentId && isUuid(by.paymentId)) {
    const [row] = await db
      .select()
      .from(payments)
      .where(and(eq(payments.id, by.paymentId), eq(payments.channel, channel)));
    if (row) return row;
  }
  if (by.gatewayRef) {
    const [row] = await db
      .select()
      .from(payments)
      .where(and(eq(payments.gatewayRef, by.gatewayRef), eq(payments.channel, channel)));
    if (row) return row;
  }
  return null;
}

/** `POST|GET /v1/payments/webhook/:provider`: verify by the channel's method, record, then apply. */
export async function handleCallback(
  ctx: Pick<PaymentsContext, 'db' | 'channels'>,
  confirmation: Pick<Confirmation, 'confirm'>,
  slug: string,
  input: CallbackInput,
) {
  const runtime = ctx.channels.get(slug);
  if (!runtime) throw notFound(`No payment channel "${slug}" runs here.`);
  // A gateway that does not answer our verification call: 503, so it sends the message again later.
  const verified = await runtime.adapter.verifyCallback(input).catch((err: unknown) => {
    if (err instanceof GatewayError) throw providerUnavailable(slug);
    throw err;
  });
  if (verified.outcome === 'pending') return { received: true as const, applied: 'ignored' };
  const payment = await findPayment(ctx.db, slug, verified);
  if (!payment) {
    // Carrier billing's callbacks are verified by this very match. The others proved the message genuine: it is about
    // something else on the same gateway account, acknowledged so the gateway stops sending it.
    if (channelPlugin(slug).callbackMustNameCheckout) throw invalidCallback(slug, 'it names no checkout of ours');
    return { received: true as const, applied: 'ignored' };
  }
  for (const [field, value] of Object.entries(verified.matches ?? {})) {
    if (payment.extra[field] !== value) throw invalidCallback(slug, `its ${field} does not match the checkout`);
  }
  const result = await confirmation.confirm(slug, payment, verified, 'callback');
  return { received: true as const, applied: result.status as string };
}
