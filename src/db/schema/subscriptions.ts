import { sql } from 'drizzle-orm';
import { boolean, index, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tz } from './columns.js';
import { users } from './auth.js';
import { plans } from './plans.js';

export const SUBSCRIPTION_STATUSES = ['PENDING', 'TRIALING', 'ACTIVE', 'PAST_DUE', 'GRACE', 'CANCELED', 'EXPIRED'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];
/** How the subscription came to be; a user gets at most one `SIGNUP` subscription. */
export const SUBSCRIPTION_ORIGINS = ['SIGNUP', 'TRIAL', 'PURCHASE', 'INTERNAL', 'ADMIN'] as const;

export const subscriptions = pgTable(
  'subscriptions',
  {
    id: idColumn(),
    userId: uuid('user_id').notNull().references(() => users.id),
    workspaceId: uuid('workspace_id'),
    planId: uuid('plan_id').notNull().references(() => plans.id),
    status: text('status', { enum: SUBSCRIPTION_STATUSES }).notNull(),
    origin: text('origin', { enum: SUBSCRIPTION_ORIGINS }).notNull(),
    startsAt: tz('starts_at').notNull(),
    /** null: no end (the free plan). */
    endsAt: tz('ends_at'),
    autoRenew: boolean('auto_renew').notNull().default(false),
    nextPlanId: uuid('next_plan_id').references(() => plans.id),
    createdAt: createdAt(),
    updatedAt: tz('updated_at').notNull().defaultNow(),
  },
  (t) => [
    index('subscriptions_user_idx').on(t.userId, t.status),
    uniqueIndex('subscriptions_signup_once_key').on(t.userId).where(sql`${t.origin} = 'SIGNUP'`),
  ],
);
