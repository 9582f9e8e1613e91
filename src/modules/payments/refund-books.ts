import { eq } from 'drizzle-orm';
import { payments } from '../../db/schema/payments.js';
import type { Clock } from '../../platform/clock/clock.js';
import type { Tx } from '../../platform/db/database.js';
import { emitDomainEvent } from '../../platform/events/outbox.js';
import type { WalletService } from '../wallet/service.js';
import type { PaymentRow } from './types.js';
import { publicKind } from './wording.js';

/** The books of a refund: tokens taken back as far as the balance allows, the rest recorded; the plan is untouched. */
export async function refundBooks(
  deps: { clock: Clock; wallet: Pick<WalletService, 'reversePayment'> },
  tx: Tx,
  payment: PaymentRow,
  why: string,
): Promise<boolean> {
  if (payment.status !== 'SUCCEEDED') return false;
  const now = deps.clock.now();
  const { takenTokens, unrecoveredTokens } = await deps.wallet.reversePayment(
    { paymentId: payment.id, idempotencyKey: `payment-refund:${payment.id}`, note: `Refund of payment ${payment.id} (${why})` },
    tx,
  );
  await tx
    .update(payments)
    .set({ status: 'REFUNDED', refundedAt: now, tokensTakenBack: takenTokens, tokensUnrecovered: unrecoveredTokens, updatedAt: now })
    .where(eq(payments.id, payment.id));
  await emitDomainEvent(
    tx,
    'payment.refunded',
    {
      paymentId: payment.id,
      kind: publicKind(payment.purposeKind),
      amountCents: payment.paidAmountCents,
      currency: payment.currency,
      tokensTakenBack: takenTokens,
      tokensUnrecovered: unrecoveredTokens,
    },
    { userId: payment.userId, at: now },
  );
  return true;
}
