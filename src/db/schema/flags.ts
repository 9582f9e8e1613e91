import { boolean, integer, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tz } from './columns.js';

/**
 * Feature flags: a switch per key with per-viewer targeting. `enabled` off serves false to every viewer;
 * on, a viewer gets true when any rule picks them out (everyone, a listed user, a listed plan, the percentage rollout).
 * A statement trigger (migration `flags_announcements`) announces every write on `cache_feature_flags`.
 */
export const featureFlags = pgTable(
  'feature_flags',
  {
    id: idColumn(),
    key: text('key').notNull(),
    description: text('description').notNull().default(''),
    enabled: boolean('enabled').notNull().default(false),
    everyone: boolean('everyone').notNull().default(false),
    userIds: uuid('user_ids').array().notNull().default([]),
    /** Plan slugs: the viewer's active plan. */
    plans: text('plans').array().notNull().default([]),
    /** 0-100: the share of signed-in users (stable per user: a hash of the flag key and the user id). */
    percentage: integer('percentage').notNull().default(0),
    createdAt: createdAt(),
    updatedAt: tz('updated_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('feature_flags_key_key').on(t.key)],
);
