import { and, desc, eq, inArray } from 'drizzle-orm';
import { subscriptionChanges, subscriptions } from '../../db/schema/subscriptions.js';
import type { PlanRow } from '../plans/service.js';
import type { BillingContext } from './context.js';
import { subscriptionResource, type SubscriptionUsage } from './resource.js';
import type { SubscriptionRow } from './service.js';
import { OPEN_CHANGE_STATUSES, type ChangeRow } from './store.js';

const NO_USAGE: SubscriptionUsage = { tokensUsed: 0, storageMbUsed: 0, imageCreditsUsed: 0, videoCreditsUsed: 0, dailyRequestsUsed: 0, monthlyRequestsUsed: 0 };
/** Shown for a subscription whose plan no longer exists. */
const UNKNOWN_PLAN = { slug: 'unknown', name: 'Unknown plan', interval: 'MONTHLY', priceCents: 0, currency: 'BDT' } as const;
const LIST_LIMIT = 100;

/** The spec's Subscription resource, plus what the billing screens need (`planId`, the pending change, grace end). */
export function subscriptionView(s: SubscriptionRow, plan: PlanRow | undefined, pending: ChangeRow | undefined) {
  return {
    ...subscriptionResource(s, plan ?? UNKNOWN_PLAN, NO_USAGE),
    planId: s.planId,
    graceEndsAt: s.graceEndsAt?.toISOString() ?? null,
    pendingChange: pending
      ? {
          id: pending.id,
          kind: pending.kind.toLowerCase() as Lowercase<ChangeRow['kind']>,
          planId: pending.toPlanId,
          amountDueCents: pending.amountDueCents,
          paid: pending.paidAt !== null,
          paymentId: pending.paymentId,
          effectiveAt: pending.effectiveAt?.toISOString() ?? null,
        }
      : null,
  };
}

export type SubscriptionView = ReturnType<typeof subscriptionView>;

export function createSubscriptionViews(ctx: BillingContext) {
  const { db, plans } = ctx;

  async function pendingOf(userId: string): Promise<ChangeRow | undefined> {
    const [row] = await db
      .select()
      .from(subscriptionChanges)
      .where(and(eq(subscriptionChanges.userId, userId), inArray(subscriptionChanges.status, [...OPEN_CHANGE_STATUSES])));
    return row;
  }

  return {
    async one(row: SubscriptionRow): Promise<SubscriptionView> {
      const pending = await pendingOf(row.userId);
      return subscriptionView(row, await plans.getById(row.planId), pending?.subscriptionId === row.id ? pending : undefined);
    },

    /**
     * `GET /v1/subscriptions`: the user's subscriptions newest first. The one in effect carries its usage (the same
     * figures as `/v1/users/me`); past and pending ones show zero usage.
     */
    async list(userId: string): Promise<SubscriptionView[]> {
      const [rows, pending, active] = await Promise.all([
        db
          .select()
          .from(subscriptions)
          .where(eq(subscriptions.userId, userId))
          .orderBy(desc(subscriptions.createdAt), desc(subscriptions.id))
          .limit(LIST_LIMIT),
        pendingOf(userId),
        ctx.subscriptions.activeSubscriptionView(userId),
      ]);
      return Promise.all(
        rows.map(async (row) => {
          const view = subscriptionView(row, await plans.getById(row.planId), pending?.subscriptionId === row.id ? pending : undefined);
          return active?.id === row.id ? { ...view, usage: active.usage } : view;
        }),
      );
    },
  };
}
