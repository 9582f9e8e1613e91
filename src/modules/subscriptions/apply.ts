import { and, eq } from 'drizzle-orm';
import { subscriptionChanges, subscriptions, type ChangeStatus } from '../../db/schema/subscriptions.js';
import type { Tx } from '../../platform/db/database.js';
import { emitDomainEvent } from '../../platform/events/outbox.js';
import type { BillingContext, ChangeLog } from './context.js';
import type { CouponsService } from './coupons.js';
import { addInterval } from './cycles.js';
import type { SubscriptionRow } from './service.js';
import { currentSubscription, type ChangeRow } from './store.js';

/** The wallet a subscription meters against: the workspace's when it has one, else its user's. */
export const walletOwnerOf = (s: Pick<SubscriptionRow, 'userId' | 'workspaceId'>) => (s.workspaceId ? { workspaceId: s.workspaceId } : { userId: s.userId });

/** The idempotency key of a cycle's allowance: one GRANT per subscription and cycle, however often a job runs. */
export const cycleGrantKey = (subscriptionId: string, cycle: number) => `plan-grant:${subscriptionId}:${cycle}`;

export function createChangeApplier(ctx: BillingContext, coupons: CouponsService) {
  const { clock, wallet } = ctx;

  async function grantCycle(tx: Tx, sub: SubscriptionRow, cycle: number, tokens: number, planName: string, paymentId: string | null) {
    if (tokens <= 0) return;
    await wallet.credit(
      { ...walletOwnerOf(sub), kind: 'GRANT', amount: tokens, idempotencyKey: cycleGrantKey(sub.id, cycle), note: `${planName} plan allowance`, paymentId },
      tx,
    );
  }

  /** Puts the user on `planId` (a free plan) unless a subscription to it is already in effect. */
  async function ensureOnFreePlan(tx: Tx, userId: string, planId: string, origin: 'SWITCH' | 'FALLBACK', workspaceId: string | null) {
    const now = clock.now();
    const current = await currentSubscription(tx, userId, now);
    if (current?.planId === planId) return;
    await tx.insert(subscriptions).values({
      userId,
      workspaceId,
      planId,
      status: 'ACTIVE',
      origin,
      startsAt: now,
      endsAt: null,
      cycle: 1,
      cycleValueCents: 0,
      createdAt: now,
      updatedAt: now,
    });
  }

  const applier = {
    grantCycle,

    /**
     * Applies a paid (or free) change to its subscription, in the caller's transaction:
     * - a paid plan starts a new cycle at `effectiveAt` (or now), and its allowance is granted once for that cycle;
     *   tokens left from the previous plan stay in the wallet (they carry over);
     * - a free plan ends the subscription and puts the user on that free plan (no allowance: a free plan's
     *   allowance is the one-time sign-up grant).
     */
    async apply(tx: Tx, log: ChangeLog, change: ChangeRow, sub: SubscriptionRow): Promise<void> {
      const now = clock.now();
      if (change.planPriceCents === 0) {
        const endedAt = sub.endsAt && sub.endsAt <= now ? sub.endsAt : now;
        await tx
          .update(subscriptions)
          .set({ status: 'EXPIRED', endsAt: endedAt, autoRenew: false, nextPlanId: null, graceEndsAt: null, updatedAt: now })
          .where(eq(subscriptions.id, sub.id));
        await ensureOnFreePlan(tx, sub.userId, change.toPlanId, 'SWITCH', sub.workspaceId);
      } else {
        let start = change.effectiveAt && change.effectiveAt <= now ? change.effectiveAt : now;
        if (addInterval(start, change.toPlanInterval) <= now) start = now; // paid so late that the whole cycle passed
        const cycle = sub.cycle + 1;
        const [updated] = await tx
          .update(subscriptions)
          .set({
            planId: change.toPlanId,
            status: 'ACTIVE',
            startsAt: start,
            endsAt: addInterval(start, change.toPlanInterval),
            cycle,
            cycleValueCents: change.planPriceCents - change.discountCents,
            autoRenew: change.recurring,
            channel: change.channel,
            nextPlanId: null,
            graceEndsAt: null,
            canceledAt: null,
            updatedAt: now,
          })
          .where(eq(subscriptions.id, sub.id))
          .returning();
        await grantCycle(tx, updated!, cycle, change.toPlanAllowance, change.toPlanName, change.paymentId);
      }
      await tx.update(subscriptionChanges).set({ status: 'APPLIED', appliedAt: now, updatedAt: now }).where(eq(subscriptionChanges.id, change.id));
      await log.changed(sub.userId);
    },

    /**
     * Closes an unpaid open change (replaced, cancelled, abandoned or refused by the gateway): its coupon use is
     * released, a purchase's PENDING subscription expires and the subscription's `nextPlanId` is cleared.
     */
    async close(tx: Tx, log: ChangeLog, change: ChangeRow, status: Extract<ChangeStatus, 'CANCELED' | 'SUPERSEDED' | 'EXPIRED' | 'FAILED'>) {
      const now = clock.now();
      await tx.update(subscriptionChanges).set({ status, updatedAt: now }).where(eq(subscriptionChanges.id, change.id));
      await coupons.release(tx, change.id);
      await tx
        .update(subscriptions)
        .set({ status: 'EXPIRED', updatedAt: now })
        .where(and(eq(subscriptions.id, change.subscriptionId), eq(subscriptions.status, 'PENDING')));
      await tx
        .update(subscriptions)
        .set({ nextPlanId: null, updatedAt: now })
        .where(and(eq(subscriptions.id, change.subscriptionId), eq(subscriptions.nextPlanId, change.toPlanId)));
      await log.changed(change.userId);
    },

    /** After a paid subscription ends: the user falls back to the free sign-up plan when nothing else is in effect. */
    async fallBackToFreePlan(tx: Tx, sub: SubscriptionRow): Promise<void> {
      const now = clock.now();
      if (await currentSubscription(tx, sub.userId, now)) return;
      const free = await ctx.plans.signupDefault(tx);
      if (free) await ensureOnFreePlan(tx, sub.userId, free.id, 'FALLBACK', null);
    },

    /** The `subscription.canceled` domain event (webhooks): the customer cancelled, or the grace period ran out unpaid. */
    async emitCanceled(tx: Tx, sub: SubscriptionRow, reason: 'customer' | 'unpaid') {
      await emitDomainEvent(
        tx,
        'subscription.canceled',
        {
          subscriptionId: sub.id,
          planId: sub.planId,
          endsAt: sub.endsAt?.toISOString() ?? null,
          reason,
          ...(sub.workspaceId ? { workspaceId: sub.workspaceId } : {}),
        },
        { userId: sub.userId, at: clock.now() },
      );
    },
  };
  return applier;
}

export type ChangeApplier = ReturnType<typeof createChangeApplier>;
