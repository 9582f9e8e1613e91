import { sql } from 'drizzle-orm';
import { boolean, index, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { users } from './auth.js';
import { createdAt, idColumn, tz } from './columns.js';

export const NOTIFICATION_TYPES = [
  'JOB_SUCCEEDED',
  'JOB_FAILED',
  'PAYMENT_SUCCEEDED',
  'PAYMENT_FAILED',
  'SUBSCRIPTION_EXPIRING',
  'QUOTA_WARNING',
  'ANNOUNCEMENT',
  'SYSTEM',
  'POST_LIKED',
  'NEW_FOLLOWER',
  /** A comment (or reply) on one of the user's posts; spec A names no type for it. */
  'POST_COMMENTED',
] as const;

/** The in-app inbox. */
export const notifications = pgTable(
  'notifications',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    type: text('type', { enum: NOTIFICATION_TYPES }).notNull(),
    title: text('title').notNull(),
    body: text('body'),
    payload: jsonb('payload').$type<Record<string, unknown>>().notNull().default({}),
    readAt: tz('read_at'),
    createdAt: createdAt(),
  },
  (t) => [
    index('notifications_user_idx').on(t.userId, t.createdAt, t.id),
    index('notifications_unread_idx')
      .on(t.userId)
      .where(sql`${t.readAt} is null`),
  ],
);

/** Which notifications a user wants; a user without a row has the defaults (all on but marketing mail). */
export const notificationPreferences = pgTable('notification_preferences', {
  userId: uuid('user_id')
    .primaryKey()
    .references(() => users.id),
  emailJobUpdates: boolean('email_job_updates').notNull().default(true),
  emailBillingAlerts: boolean('email_billing_alerts').notNull().default(true),
  emailSecurityAlerts: boolean('email_security_alerts').notNull().default(true),
  emailMarketing: boolean('email_marketing').notNull().default(false),
  inAppCommunityActivity: boolean('in_app_community_activity').notNull().default(true),
  inAppQuotaWarnings: boolean('in_app_quota_warnings').notNull().default(true),
  updatedAt: tz('updated_at').notNull().defaultNow(),
});
