import { index, integer, pgTable, text } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tz } from './columns.js';

/** Every outgoing mail; delivered by a job when SMTP is configured, otherwise kept here and logged. */
export const mailOutbox = pgTable(
  'mail_outbox',
  {
    id: idColumn(),
    to: text('to').notNull(),
    from: text('from').notNull(),
    subject: text('subject').notNull(),
    text: text('text').notNull(),
    html: text('html'),
    status: text('status', { enum: ['QUEUED', 'SENT', 'FAILED', 'STORED'] }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    createdAt: createdAt(),
    sentAt: tz('sent_at'),
  },
  (t) => [index('mail_outbox_to_idx').on(t.to, t.createdAt)],
);

/** Secrets the service generates for itself when none is configured, shared by every instance on this database. */
export const platformSecrets = pgTable('platform_secrets', {
  name: text('name').primaryKey(),
  value: text('value').notNull(),
  createdAt: createdAt(),
});
