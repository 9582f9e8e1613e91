import { and, eq, isNull } from 'drizzle-orm';
import { subscriptionChanges } from '../../db/schema/subscriptions.js';
import { AppError } from '../../platform/http/errors.js';
import type { PlanRow } from '../plans/service.js';
import type { ChangeApplier } from './apply.js';
import type { BillingContext } from './context.js';
import type { CheckoutSession } from './payments-port.js';
import type { ChangeRow } from './store.js';
import type { SwitchInput } from './switch-types.js';

/** The payment side of a paid switch: the checkout opened through the payments port, and superseded ones voided. */
export function createSwitchCheckout(ctx: BillingContext, applier: ChangeApplier) {
  const { db, clock } = ctx;

  async function voidCheckouts(paymentIds: string[]) {
    for (const paymentId of paymentIds)
      await ctx
        .payments()
        ?.cancelCheckout(paymentId)
        .catch(() => undefined);
  }

  async function openCheckout(
    change: ChangeRow,
    args: { userId: string; input: SwitchInput; target: PlanRow; recurring: boolean; amountDueCents: number; kind: 'upgrade' | 'downgrade' },
  ): Promise<CheckoutSession> {
    const { input, target } = args;
    let session: CheckoutSession;
    try {
      session = await ctx.payments()!.createCheckout({
        userId: args.userId,
        purpose: { kind: 'subscription', changeId: change.id, subscriptionId: change.subscriptionId, planId: target.id },
        amountCents: args.amountDueCents,
        currency: target.currency,
        channel: input.provider!,
        recurring: args.recurring,
        ...(input.extra ? { extra: input.extra } : {}),
        ...(input.successUrl ? { successUrl: input.successUrl } : {}),
        ...(input.cancelUrl ? { cancelUrl: input.cancelUrl } : {}),
        description: `${target.name} plan (${args.kind})`,
      });
    } catch (err) {
      await ctx.transaction(async (tx, log) => {
        const [still] = await tx.select().from(subscriptionChanges).where(eq(subscriptionChanges.id, change.id)).for('update');
        if (still?.status === 'AWAITING_PAYMENT' && !still.paidAt) await applier.close(tx, log, still, 'FAILED');
      });
      if (err instanceof AppError) throw err;
      throw new AppError(503, 'PROVIDER_UNAVAILABLE', `Provider ${input.provider} unavailable. Try again in a moment or choose another provider.`);
    }
    await db
      .update(subscriptionChanges)
      .set({ paymentId: session.paymentId, updatedAt: clock.now() })
      .where(and(eq(subscriptionChanges.id, change.id), isNull(subscriptionChanges.paymentId)));
    return session;
  }

  return { openCheckout, voidCheckouts };
}
