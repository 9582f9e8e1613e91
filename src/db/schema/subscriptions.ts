import { sql } from 'drizzle-orm';
import { bigint, boolean, index, integer, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tz } from './columns.js';
import { users } from './auth.js';
import { PLAN_INTERVALS, plans } from './plans.js';

export const SUBSCRIPTION_STATUSES = ['PENDING', 'TRIALING', 'ACTIVE', 'PAST_DUE', 'GRACE', 'CANCELED', 'EXPIRED'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];
/**
 * How the subscription came to be; a user gets at most one `SIGNUP` and at most one `TRIAL` subscription.
 * `SWITCH`: a free plan the customer switched to; `FALLBACK`: the free plan an expired paid plan fell back to.
 */
export const SUBSCRIPTION_ORIGINS = ['SIGNUP', 'TRIAL', 'PURCHASE', 'INTERNAL', 'ADMIN', 'SWITCH', 'FALLBACK'] as const;

export const subscriptions = pgTable(
  'subscriptions',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    workspaceId: uuid('workspace_id'),
    planId: uuid('plan_id')
      .notNull()
      .references(() => plans.id),
    status: text('status', { enum: SUBSCRIPTION_STATUSES }).notNull(),
    origin: text('origin', { enum: SUBSCRIPTION_ORIGINS }).notNull(),
    /** Start of the current cycle (a renewal or a plan change starts a new one). */
    startsAt: tz('starts_at').notNull(),
    /** End of the current cycle; null: no end (the free plan). */
    endsAt: tz('ends_at'),
    autoRenew: boolean('auto_renew').notNull().default(false),
    nextPlanId: uuid('next_plan_id').references(() => plans.id),
    /** Cycle number, 1 for the first; the allowance GRANT of each cycle is keyed by it. 0: a purchase not yet paid. */
    cycle: integer('cycle').notNull().default(1),
    /** What the current cycle was sold for (minor units; proration credits its unused part). 0 for trials and free plans. */
    cycleValueCents: bigint('cycle_value_cents', { mode: 'number' }).notNull().default(0),
    /** Payment channel slug that paid the current cycle (renewals charge it again when `autoRenew`). */
    channel: text('channel'),
    graceEndsAt: tz('grace_ends_at'),
    canceledAt: tz('canceled_at'),
    createdAt: createdAt(),
    updatedAt: tz('updated_at').notNull().defaultNow(),
  },
  (t) => [
    index('subscriptions_user_idx').on(t.userId, t.status),
    uniqueIndex('subscriptions_signup_once_key')
      .on(t.userId)
      .where(sql`${t.origin} = 'SIGNUP'`),
    uniqueIndex('subscriptions_trial_once_key')
      .on(t.userId)
      .where(sql`${t.origin} = 'TRIAL'`),
    index('subscriptions_due_idx').on(t.status, t.endsAt),
    // Members of a workspace meter against its subscription: looked up by workspace on every cache miss.
    index('subscriptions_workspace_idx')
      .on(t.workspaceId)
      .where(sql`${t.workspaceId} is not null`),
  ],
);

export const CHANGE_KINDS = ['UPGRADE', 'DOWNGRADE', 'RENEWAL'] as const;
export type ChangeKind = (typeof CHANGE_KINDS)[number];
/** AWAITING_PAYMENT and SCHEDULED are open; a user has at most one open change. */
export const CHANGE_STATUSES = ['AWAITING_PAYMENT', 'SCHEDULED', 'APPLIED', 'CANCELED', 'SUPERSEDED', 'EXPIRED', 'FAILED'] as const;
export type ChangeStatus = (typeof CHANGE_STATUSES)[number];

/**
 * A plan change or purchase in flight: priced when asked for, paid through checkout (or covered by a coupon, or
 * free), then applied at once or at `effectiveAt`. The target plan's facts are copied in, so a change keeps what it
 * was sold with and applying it needs no other module's data.
 */
export const subscriptionChanges = pgTable(
  'subscription_changes',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    /** The subscription that will carry the new plan (for a purchase from the free plan: a new PENDING one). */
    subscriptionId: uuid('subscription_id')
      .notNull()
      .references(() => subscriptions.id),
    kind: text('kind', { enum: CHANGE_KINDS }).notNull(),
    status: text('status', { enum: CHANGE_STATUSES }).notNull(),
    fromPlanId: uuid('from_plan_id').references(() => plans.id),
    /** The subscription's cycle when the change was priced; a change meant for another cycle is not applied. */
    fromCycle: integer('from_cycle').notNull(),
    toPlanId: uuid('to_plan_id')
      .notNull()
      .references(() => plans.id),
    toPlanName: text('to_plan_name').notNull(),
    toPlanInterval: text('to_plan_interval', { enum: PLAN_INTERVALS }).notNull(),
    toPlanAllowance: bigint('to_plan_allowance', { mode: 'number' }).notNull(),
    planPriceCents: bigint('plan_price_cents', { mode: 'number' }).notNull(),
    unusedCreditCents: bigint('unused_credit_cents', { mode: 'number' }).notNull().default(0),
    discountCents: bigint('discount_cents', { mode: 'number' }).notNull().default(0),
    amountDueCents: bigint('amount_due_cents', { mode: 'number' }).notNull(),
    currency: text('currency').notNull(),
    couponId: uuid('coupon_id'),
    channel: text('channel'),
    recurring: boolean('recurring').notNull().default(false),
    /** Set by the payments module's checkout; unique, so one payment fulfils one change. */
    paymentId: uuid('payment_id'),
    /** Paid (or covered by a coupon); a paid change can no longer be cancelled by the customer. */
    paidAt: tz('paid_at'),
    /** null: applied as soon as it is paid; otherwise the instant it takes effect (end of the paid cycle). */
    effectiveAt: tz('effective_at'),
    appliedAt: tz('applied_at'),
    createdAt: createdAt(),
    updatedAt: tz('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('subscription_changes_open_key')
      .on(t.userId)
      .where(sql`${t.status} in ('AWAITING_PAYMENT', 'SCHEDULED')`),
    uniqueIndex('subscription_changes_payment_key').on(t.paymentId),
    index('subscription_changes_subscription_idx').on(t.subscriptionId, t.createdAt),
    index('subscription_changes_due_idx').on(t.status, t.effectiveAt),
  ],
);

/** Cycle-end reminders already sent: one row per subscription, cycle and kind, so each is sent once. */
export const subscriptionReminders = pgTable(
  'subscription_reminders',
  {
    subscriptionId: uuid('subscription_id')
      .notNull()
      .references(() => subscriptions.id),
    cycle: integer('cycle').notNull(),
    /** `3d` or `1d` before the cycle ends. */
    kind: text('kind', { enum: ['3d', '1d'] }).notNull(),
    sentAt: tz('sent_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.subscriptionId, t.cycle, t.kind] })],
);
