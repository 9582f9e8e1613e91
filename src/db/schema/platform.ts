import { index, integer, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
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
/**
 * The domain-event outbox: an event is written in the same transaction as the change it announces, so it exists
 * exactly when the change committed. A dispatcher (the webhooks issue) delivers rows with `dispatchedAt` null.
 */
export const domainEvents = pgTable(
  'domain_events',
  {
    id: idColumn(),
    /** e.g. `job.succeeded`, `job.failed`, `generation.persisted`. */
    name: text('name').notNull(),
    /** The user the event concerns (whose webhooks receive it), when there is one. */
    userId: text('user_id'),
    data: jsonb('data').$type<Record<string, unknown>>().notNull(),
    createdAt: createdAt(),
    dispatchedAt: tz('dispatched_at'),
  },
  (t) => [index('domain_events_pending_idx').on(t.dispatchedAt, t.createdAt, t.id)],
);
