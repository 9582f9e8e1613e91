import { jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { tz } from './columns.js';

/** Operator-editable settings as JSON documents under a key (e.g. `billing.pricing`); code holds the defaults. */
export const settings = pgTable('settings', {
  key: text('key').primaryKey(),
  value: jsonb('value').$type<Record<string, unknown>>().notNull(),
  updatedAt: tz('updated_at').notNull().defaultNow(),
  updatedBy: uuid('updated_by'),
});
