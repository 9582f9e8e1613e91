import { and, eq, lt, sql } from 'drizzle-orm';
import { payments } from '../../db/schema/payments.js';
import { badRequest } from '../../platform/http/errors.js';
import type { PaymentsContext } from './context.js';
import type { PaymentRow } from './types.js';

export const MAX_PIN_ATTEMPTS = 5;

/** A carrier billing PIN goes to the carrier (the channels whose adapter has verifyPin); five tries per payment. */
export async function verifyPinOf(ctx: Pick<PaymentsContext, 'db' | 'channels'>, payment: PaymentRow, pin: string) {
  const runtime = ctx.channels.get(payment.channel);
  if (!runtime?.adapter.verifyPin) throw badRequest('This payment is not a carrier billing payment; no PIN is needed.', { paymentId: payment.id });
  if (payment.status !== 'PENDING')
    throw badRequest(`This payment is ${payment.status.toLowerCase()}; a PIN cannot change it.`, {
      paymentId: payment.id,
      status: payment.status,
      retryable: false,
    });
  // Five tries per payment, counted before the carrier is asked, so guessing the 5 digits is not an option.
  const [counted] = await ctx.db
    .update(payments)
    .set({ pinAttempts: sql`${payments.pinAttempts} + 1` })
    .where(and(eq(payments.id, payment.id), lt(payments.pinAttempts, MAX_PIN_ATTEMPTS)))
    .returning({ id: payments.id });
  if (!counted) {
    throw badRequest('Too many wrong PINs for this payment. Start the payment again to get a new PIN.', {
      paymentId: payment.id,
      retryable: false,
      reason: 'PIN_ATTEMPTS_EXCEEDED',
    });
  }
  const answer = await runtime.adapter.verifyPin(payment, pin);
  if (answer !== 'ok') {
    throw badRequest(
      answer === 'expired' ? 'The PIN has expired. Start the payment again to get a new one.' : 'The PIN is not right. Check the text message and try again.',
      {
        paymentId: payment.id,
        retryable: true,
        reason: answer === 'expired' ? 'PIN_EXPIRED' : 'PIN_INVALID',
      },
    );
  }
}
