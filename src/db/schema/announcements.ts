import { integer, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tz } from './columns.js';

export const ANNOUNCEMENT_LEVELS = ['INFO', 'WARNING', 'CRITICAL'] as const;
export const ANNOUNCEMENT_AUDIENCES = ['EVERYONE', 'SIGNED_IN', 'PLANS'] as const;

/**
 * Banners shown by `GET /v1/announcements` between `startsAt` and `endsAt`, to their audience. The `notify*` columns
 * track the one ANNOUNCEMENT notification round: requested once, sent in batches that each commit with the cursor.
 */
export const announcements = pgTable('announcements', {
  id: idColumn(),
  title: text('title').notNull(),
  body: text('body').notNull(),
  level: text('level', { enum: ANNOUNCEMENT_LEVELS }).notNull(),
  link: text('link'),
  audience: text('audience', { enum: ANNOUNCEMENT_AUDIENCES }).notNull(),
  /** Plan slugs when the audience is PLANS. */
  plans: text('plans').array().notNull().default([]),
  startsAt: tz('starts_at').notNull(),
  endsAt: tz('ends_at'),
  createdBy: uuid('created_by'),
  createdAt: createdAt(),
  updatedAt: tz('updated_at').notNull().defaultNow(),
  notifyRequestedAt: tz('notify_requested_at'),
  /** The last user id the notification round has passed (users are walked in id order). */
  notifyCursor: uuid('notify_cursor'),
  notifiedCount: integer('notified_count').notNull().default(0),
  notifiedAt: tz('notified_at'),
});
