import type { subscriptions } from '../../db/schema/subscriptions.js';
import type { PlanRow } from '../plans/service.js';

/** What a subscription has used of its plan (spec B "Subscription", its `usage`). */
export interface SubscriptionUsage {
  tokensUsed: number;
  storageMbUsed: number;
  imageCreditsUsed: number;
  videoCreditsUsed: number;
  dailyRequestsUsed: number;
  monthlyRequestsUsed: number;
}

type PlanSummary = Pick<PlanRow, 'slug' | 'name' | 'interval' | 'priceCents' | 'currency'>;

/** The Subscription resource of spec B, as `/v1/users/me` shows it; the billing screens' view adds to it. */
export function subscriptionResource(s: typeof subscriptions.$inferSelect, plan: PlanSummary, usage: SubscriptionUsage) {
  return {
    id: s.id,
    status: s.status,
    startsAt: s.startsAt.toISOString(),
    endsAt: s.endsAt?.toISOString() ?? null,
    autoRenew: s.autoRenew,
    nextPlanId: s.nextPlanId,
    usage,
    plan: { slug: plan.slug, name: plan.name, interval: plan.interval, priceCents: plan.priceCents, currency: plan.currency },
    ...(s.workspaceId ? { workspaceId: s.workspaceId } : {}),
  };
}
