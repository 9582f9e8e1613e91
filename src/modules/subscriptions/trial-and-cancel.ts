import { eq } from 'drizzle-orm';
import { subscriptions } from '../../db/schema/subscriptions.js';
import { badRequest, notFound } from '../../platform/http/errors.js';
import type { ChangeApplier } from './apply.js';
import { isUuid, type BillingContext } from './context.js';
import type { SubscriptionRow } from './service.js';
import { currentSubscription, isFreeSubscription, openChangeForUpdate, ownSubscription } from './store.js';
import { DAY_MS } from '../../platform/clock/clock.js';

export function createTrialAndCancel(ctx: BillingContext, applier: ChangeApplier) {
  const { clock, plans } = ctx;

  return {
    /**
     * `POST /v1/subscriptions/trial`: a plan with `trialDays` > 0, once per user ever (a unique index holds it under
     * concurrency), its allowance granted to the wallet. Refused while a paid plan is running.
     */
    async startTrial(userId: string, planId: string): Promise<SubscriptionRow> {
      const plan = isUuid(planId) ? await plans.getById(planId) : undefined;
      if (!plan || plan.status !== 'ACTIVE' || plan.internal)
        throw notFound(`No plan on sale has the id "${planId}". See GET /v1/plans (use a plan's id, not its slug).`);
      if (plan.trialDays <= 0) throw badRequest(`The ${plan.name} plan has no free trial.`, { planId });
      const refusedTrial = () => badRequest('You have already used your free trial; a trial is once per account. Buy a plan to continue.');
      return ctx.transaction(async (tx, log) => {
        const now = clock.now();
        const current = await currentSubscription(tx, userId, now, true);
        if (current?.origin === 'TRIAL') throw refusedTrial();
        if (current && current.cycleValueCents > 0) {
          throw badRequest('You already have a paid plan; trials are for trying a plan before buying one.', { subscriptionId: current.id });
        }
        const endsAt = new Date(now.getTime() + plan.trialDays * DAY_MS);
        const [trial] = await tx
          .insert(subscriptions)
          .values({
            userId,
            planId: plan.id,
            status: 'TRIALING',
            origin: 'TRIAL',
            startsAt: now,
            endsAt,
            cycle: 1,
            cycleValueCents: 0,
            createdAt: now,
            updatedAt: now,
          })
          .onConflictDoNothing()
          .returning();
        if (!trial) throw refusedTrial();
        await applier.grantCycle(tx, trial, 1, plan.tokenAllowance, `${plan.name} trial`, null);
        await log.changed(userId);
        return trial;
      });
    },

    /**
     * `POST /v1/subscriptions/:id/cancel`: future cycles stop (`autoRenew` false), access continues until `endsAt`
     * (a cycle already in GRACE ends now), an unpaid pending change is dropped, `subscription.canceled` is emitted.
     */
    async cancel(userId: string, subscriptionId: string): Promise<{ subscription: SubscriptionRow; voidPaymentId: string | null }> {
      return ctx.transaction(async (tx, log) => {
        const open = await openChangeForUpdate(tx, userId);
        const sub = await ownSubscription(tx, userId, subscriptionId, true);
        if (sub.status === 'CANCELED')
          throw badRequest(`This subscription is already cancelled${sub.endsAt ? `; it stays usable until ${sub.endsAt.toISOString()}` : ''}.`);
        if (!['ACTIVE', 'TRIALING', 'GRACE'].includes(sub.status))
          throw badRequest(`This subscription is ${sub.status.toLowerCase()}, so there is nothing to cancel.`);
        if (isFreeSubscription(sub)) throw badRequest('The free plan has no billing to cancel. Switch plans with POST /v1/subscriptions/switch.');
        let voidPaymentId: string | null = null;
        if (open?.subscriptionId === sub.id) {
          if (open.paidAt) {
            throw badRequest(`A plan change you already paid for (to ${open.toPlanName}) is pending on this subscription; contact support to cancel it.`, {
              changeId: open.id,
            });
          }
          await applier.close(tx, log, open, 'CANCELED');
          voidPaymentId = open.paymentId;
        }
        const now = clock.now();
        const [canceled] = await tx
          .update(subscriptions)
          .set({ status: 'CANCELED', autoRenew: false, nextPlanId: null, canceledAt: now, graceEndsAt: null, updatedAt: now })
          .where(eq(subscriptions.id, sub.id))
          .returning();
        if (sub.status === 'GRACE') await applier.fallBackToFreePlan(tx, canceled!);
        await applier.emitCanceled(tx, canceled!, 'customer');
        await log.changed(userId);
        return { subscription: canceled!, voidPaymentId };
      });
    },
  };
}
