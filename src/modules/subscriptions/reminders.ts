import { and, asc, gt, inArray, lte } from 'drizzle-orm';
import { subscriptionReminders, subscriptions } from '../../db/schema/subscriptions.js';
import { DAY_MS } from '../../platform/clock/clock.js';
import { composeMail } from '../../platform/mail/compose.js';
import type { PlanRow } from '../plans/service.js';
import type { BillingContext } from './context.js';
import type { SubscriptionRow } from './service.js';

const REMINDERS = [
  { kind: '1d', beforeMs: DAY_MS },
  { kind: '3d', beforeMs: 3 * DAY_MS },
] as const;

const dateOf = (d: Date) => d.toISOString().slice(0, 10);

/** What the reminder says: it renews, switches, or ends (a trial or a cycle nobody will pay automatically). */
function wording(sub: SubscriptionRow, plan: PlanRow | undefined, nextPlan: PlanRow | undefined, when: string) {
  const name = plan?.name ?? 'Your';
  if (sub.status === 'TRIALING') {
    return {
      title: `Your ${name} trial ends ${when}`,
      line: `Your free trial of the ${name} plan ends on ${dateOf(sub.endsAt!)}. Buy the plan to keep its allowance and limits.`,
    };
  }
  if (nextPlan) {
    return { title: `Your plan changes to ${nextPlan.name} ${when}`, line: `Your ${name} plan switches to ${nextPlan.name} on ${dateOf(sub.endsAt!)}.` };
  }
  if (sub.autoRenew) {
    return {
      title: `Your ${name} plan renews ${when}`,
      line: `Your ${name} plan renews on ${dateOf(sub.endsAt!)}; the payment is taken from your saved payment method.`,
    };
  }
  return {
    title: `Your ${name} plan ends ${when}`,
    line: `Your ${name} plan ends on ${dateOf(sub.endsAt!)}. Renew it to keep your allowance; after a 3-day grace period the account returns to the free plan (your credits stay).`,
  };
}

/**
 * Reminders 3 days and 1 day before a cycle ends, each once per subscription and cycle (a row keyed by both is
 * written with the in-app `SUBSCRIPTION_EXPIRING` notification, in one transaction). The mail follows the commit and
 * respects `emailBillingAlerts`; a crash between the two loses that mail rather than sending it twice.
 * A reminder is skipped when its moment fell before the cycle started (a 3-day trial gets only the 1-day one) or
 * when a later one is already due (after downtime only the 1-day reminder goes out).
 */
export function createReminders(ctx: BillingContext) {
  const { db, clock, plans, notifications } = ctx;

  return async function sendReminders(limit = 200): Promise<number> {
    const now = clock.now();
    const due = await db
      .select()
      .from(subscriptions)
      .where(
        and(
          inArray(subscriptions.status, ['ACTIVE', 'TRIALING']),
          gt(subscriptions.endsAt, now),
          lte(subscriptions.endsAt, new Date(now.getTime() + 3 * DAY_MS)),
        ),
      )
      .orderBy(asc(subscriptions.endsAt))
      .limit(limit);
    let sent = 0;
    for (const sub of due) {
      const left = sub.endsAt!.getTime() - now.getTime();
      const reminder = REMINDERS.find((r) => left <= r.beforeMs)!;
      if (sub.startsAt.getTime() >= sub.endsAt!.getTime() - reminder.beforeMs) continue;
      const [plan, nextPlan] = await Promise.all([plans.getById(sub.planId), sub.nextPlanId ? plans.getById(sub.nextPlanId) : undefined]);
      const text = wording(sub, plan, nextPlan, reminder.kind === '1d' ? 'tomorrow' : 'in 3 days');
      const recorded = await db.transaction(async (tx) => {
        const [row] = await tx
          .insert(subscriptionReminders)
          .values({ subscriptionId: sub.id, cycle: sub.cycle, kind: reminder.kind, sentAt: now })
          .onConflictDoNothing()
          .returning();
        if (!row) return false;
        await notifications.notify(tx, {
          userId: sub.userId,
          type: 'SUBSCRIPTION_EXPIRING',
          title: text.title,
          body: text.line,
          payload: { subscriptionId: sub.id, endsAt: sub.endsAt!.toISOString(), reminder: reminder.kind, autoRenew: sub.autoRenew, nextPlanId: sub.nextPlanId },
        });
        return true;
      });
      if (!recorded) continue;
      sent++;
      const [prefs, contact] = await Promise.all([notifications.getPrefs(sub.userId), ctx.userContact(sub.userId)]);
      if (!prefs.emailBillingAlerts || !contact) continue;
      await ctx.mailer.send(
        composeMail(contact.email, {
          subject: text.title,
          greeting: contact.name,
          lines: [text.line, 'See your plan and usage under Billing in your account.'],
          footer: 'You get this because billing alerts are on; you can turn them off in your notification preferences.',
        }),
      );
    }
    return sent;
  };
}
