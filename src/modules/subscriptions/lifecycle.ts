import { and, asc, eq, lte, ne } from 'drizzle-orm';
import { subscriptionChanges, subscriptions } from '../../db/schema/subscriptions.js';
import type { Tx } from '../../platform/db/database.js';
import { emitDomainEvent } from '../../platform/events/outbox.js';
import type { PlanRow } from '../plans/service.js';
import type { ChangeApplier } from './apply.js';
import type { BillingContext, ChangeLog } from './context.js';
import { CHECKOUT_TTL_MS, GRACE_MS } from './cycles.js';
import type { SubscriptionRow } from './service.js';
import { lockChange, lockSubscription, openChangeForUpdate } from './store.js';

export interface LifecycleCounts {
  abandoned: number;
  applied: number;
  toGrace: number;
  renewalsDue: number;
  trialsEnded: number;
  expired: number;
}

/**
 * The time-driven transitions, run by a pg-boss cron. Each candidate is handled in its own transaction that locks
 * the row and checks the condition again, so two workers, two instances or a job run twice do each thing once;
 * allowances are granted under a per-cycle idempotency key besides.
 */
export function createLifecycle(ctx: BillingContext, applier: ChangeApplier) {
  const { db, clock, plans } = ctx;

  /** Runs `step` for each id in its own transaction; returns how many did something. */
  async function each(ids: string[], step: (tx: Tx, log: ChangeLog, id: string) => Promise<boolean>): Promise<number> {
    let done = 0;
    for (const id of ids) if (await ctx.transaction((tx, log) => step(tx, log, id))) done++;
    return done;
  }

  /** Unpaid checkouts older than a day: the change expires and its coupon hold is released (renewals wait for grace). */
  async function expireAbandonedCheckouts(limit: number): Promise<number> {
    const cutoff = new Date(clock.now().getTime() - CHECKOUT_TTL_MS);
    const rows = await db
      .select({ id: subscriptionChanges.id })
      .from(subscriptionChanges)
      .where(and(eq(subscriptionChanges.status, 'AWAITING_PAYMENT'), ne(subscriptionChanges.kind, 'RENEWAL'), lte(subscriptionChanges.createdAt, cutoff)))
      .limit(limit);
    return each(
      rows.map((r) => r.id),
      async (tx, log, id) => {
        const change = await lockChange(tx, id);
        if (change?.status !== 'AWAITING_PAYMENT' || change.paidAt) return false;
        await applier.close(tx, log, change, 'EXPIRED');
        return true;
      },
    );
  }

  /** Scheduled changes whose time came (a prepaid downgrade, a switch to a free plan). */
  async function applyDueChanges(limit: number): Promise<number> {
    const rows = await db
      .select({ id: subscriptionChanges.id })
      .from(subscriptionChanges)
      .where(and(eq(subscriptionChanges.status, 'SCHEDULED'), lte(subscriptionChanges.effectiveAt, clock.now())))
      .orderBy(asc(subscriptionChanges.effectiveAt))
      .limit(limit);
    return each(
      rows.map((r) => r.id),
      async (tx, log, id) => {
        const change = await lockChange(tx, id);
        if (change?.status !== 'SCHEDULED' || !change.effectiveAt || change.effectiveAt > clock.now()) return false;
        await applier.apply(tx, log, change, (await lockSubscription(tx, change.subscriptionId))!);
        return true;
      },
    );
  }

  async function dueSubscriptions(status: SubscriptionRow['status'], column: typeof subscriptions.endsAt | typeof subscriptions.graceEndsAt, limit: number) {
    return db
      .select()
      .from(subscriptions)
      .where(and(eq(subscriptions.status, status), lte(column, clock.now())))
      .orderBy(asc(column))
      .limit(limit);
  }

  /**
   * Paid cycles that ended with nothing paid for the next one go to GRACE for 3 days. A subscription whose channel
   * renews by itself gets a RENEWAL change and a `subscription.renewal_due` event, which the payments module turns
   * into a charge; the confirmed charge starts the next cycle.
   */
  async function endCycles(limit: number, planOf: (id: string) => Promise<PlanRow | undefined>) {
    const due = await dueSubscriptions('ACTIVE', subscriptions.endsAt, limit);
    let toGrace = 0;
    let renewalsDue = 0;
    for (const candidate of due) {
      const plan = await planOf(candidate.planId); // read before the transaction: the embedded database has one connection
      await ctx.transaction(async (tx, log) => {
        const open = await openChangeForUpdate(tx, candidate.userId);
        const sub = await lockSubscription(tx, candidate.id);
        const now = clock.now();
        if (sub?.status !== 'ACTIVE' || !sub.endsAt || sub.endsAt > now || sub.planId !== candidate.planId) return;
        if (open?.status === 'SCHEDULED' && open.subscriptionId === sub.id && open.effectiveAt && open.effectiveAt <= now) {
          await applier.apply(tx, log, open, sub); // its time came while this pass ran
          return;
        }
        if (!plan || plan.priceCents === 0) {
          await tx.update(subscriptions).set({ status: 'EXPIRED', updatedAt: now }).where(eq(subscriptions.id, sub.id));
          await applier.fallBackToFreePlan(tx, sub);
          await log.changed(sub.userId);
          return;
        }
        const graceEndsAt = new Date(sub.endsAt.getTime() + GRACE_MS);
        await tx.update(subscriptions).set({ status: 'GRACE', graceEndsAt, updatedAt: now }).where(eq(subscriptions.id, sub.id));
        toGrace++;
        await log.changed(sub.userId);
        if (!sub.autoRenew || open?.paidAt) return;
        if (open) await applier.close(tx, log, open, 'SUPERSEDED');
        const [renewal] = await tx
          .insert(subscriptionChanges)
          .values({
            userId: sub.userId,
            subscriptionId: sub.id,
            kind: 'RENEWAL',
            status: 'AWAITING_PAYMENT',
            fromPlanId: sub.planId,
            fromCycle: sub.cycle,
            toPlanId: plan.id,
            toPlanName: plan.name,
            toPlanInterval: plan.interval,
            toPlanAllowance: plan.tokenAllowance,
            planPriceCents: plan.priceCents,
            amountDueCents: plan.priceCents,
            currency: plan.currency,
            channel: sub.channel,
            recurring: true,
            effectiveAt: sub.endsAt,
            createdAt: now,
            updatedAt: now,
          })
          .returning();
        await emitDomainEvent(
          tx,
          'subscription.renewal_due',
          {
            subscriptionId: sub.id,
            changeId: renewal!.id,
            cycle: sub.cycle,
            planId: plan.id,
            amountCents: plan.priceCents,
            currency: plan.currency,
            channel: sub.channel,
          },
          { userId: sub.userId, at: now },
        );
        renewalsDue++;
      });
    }
    return { toGrace, renewalsDue };
  }

  /** Trials that ran out: nothing was paid, so no grace; the account is back on the free plan. */
  async function endTrials(limit: number): Promise<number> {
    const due = await dueSubscriptions('TRIALING', subscriptions.endsAt, limit);
    return each(
      due.map((s) => s.id),
      async (tx, log, id) => {
        const sub = await lockSubscription(tx, id);
        if (sub?.status !== 'TRIALING' || !sub.endsAt || sub.endsAt > clock.now()) return false;
        await tx.update(subscriptions).set({ status: 'EXPIRED', nextPlanId: null, updatedAt: clock.now() }).where(eq(subscriptions.id, id));
        await applier.fallBackToFreePlan(tx, sub);
        await log.changed(sub.userId);
        return true;
      },
    );
  }

  /** Grace over, still unpaid: EXPIRED, back on the free plan with the wallet kept, `subscription.canceled` emitted. */
  async function expireGrace(limit: number): Promise<number> {
    const due = await dueSubscriptions('GRACE', subscriptions.graceEndsAt, limit);
    return each(
      due.map((s) => s.id),
      async (tx, log, id) => {
        const userId = due.find((s) => s.id === id)!.userId;
        const open = await openChangeForUpdate(tx, userId);
        const sub = await lockSubscription(tx, id);
        const now = clock.now();
        if (sub?.status !== 'GRACE' || !sub.graceEndsAt || sub.graceEndsAt > now) return false;
        if (open && !open.paidAt && open.subscriptionId === id) await applier.close(tx, log, open, 'EXPIRED');
        await tx.update(subscriptions).set({ status: 'EXPIRED', autoRenew: false, nextPlanId: null, updatedAt: now }).where(eq(subscriptions.id, id));
        await applier.fallBackToFreePlan(tx, sub);
        await applier.emitCanceled(tx, sub, 'unpaid');
        await log.changed(sub.userId);
        return true;
      },
    );
  }

  return {
    /** One pass over everything due now; safe to run concurrently and repeatedly. */
    async runDue(limit = 200): Promise<LifecycleCounts> {
      const planCache = new Map<string, Promise<PlanRow | undefined>>();
      const planOf = (id: string) => {
        if (!planCache.has(id)) planCache.set(id, plans.getById(id));
        return planCache.get(id)!;
      };
      const abandoned = await expireAbandonedCheckouts(limit);
      const applied = await applyDueChanges(limit);
      const { toGrace, renewalsDue } = await endCycles(limit, planOf);
      const trialsEnded = await endTrials(limit);
      const expired = await expireGrace(limit);
      return { abandoned, applied, toGrace, renewalsDue, trialsEnded, expired };
    },
  };
}

export type Lifecycle = ReturnType<typeof createLifecycle>;
