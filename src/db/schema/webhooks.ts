import { sql } from 'drizzle-orm';
import { index, integer, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { users } from './auth.js';
import { createdAt, idColumn, tz } from './columns.js';

export const WEBHOOK_STATUSES = ['ACTIVE', 'DISABLED'] as const;
export type WebhookStatus = (typeof WEBHOOK_STATUSES)[number];

/** PENDING (waiting for its next attempt) -> SENDING (an attempt is out, leased) -> SUCCEEDED | PENDING | FAILED. */
export const DELIVERY_STATUSES = ['PENDING', 'SENDING', 'SUCCEEDED', 'FAILED'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** An outgoing webhook registration (spec A "Outgoing webhook registration"). */
export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    url: text('url').notNull(),
    /** Event names of the catalog, or `*` for all of them. */
    events: text('events').array().notNull(),
    description: text('description'),
    status: text('status', { enum: WEBHOOK_STATUSES }).notNull().default('ACTIVE'),
    /** The signing key (`whsec_...`): kept usable because every delivery is signed with it (docs/decisions.md). */
    secret: text('secret').notNull(),
    /** Failed attempts since the last successful one; re-enabling resets it. */
    failureCount: integer('failure_count').notNull().default(0),
    disabledAt: tz('disabled_at'),
    /** Why the webhook was disabled, in words (auto-disabled after the retries were exhausted, or by its owner). */
    disabledReason: text('disabled_reason'),
    createdAt: createdAt(),
    updatedAt: tz('updated_at').notNull().defaultNow(),
  },
  (t) => [
    index('webhook_endpoints_user_idx').on(t.userId, t.createdAt),
    index('webhook_endpoints_active_user_idx')
      .on(t.userId)
      .where(sql`${t.status} = 'ACTIVE'`),
  ],
);

/**
 * One event for one webhook. Its id is the delivery id the receiver sees (stable across retries); `body` is the exact
 * JSON sent every time (a resend is a new delivery with the same body). `dueAt` is when the next attempt is due
 * (PENDING) or when the lease of the attempt that is out runs out (SENDING).
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: idColumn(),
    webhookId: uuid('webhook_id')
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    /** The domain event (outbox row) this delivers. */
    eventId: uuid('event_id').notNull(),
    event: text('event').notNull(),
    body: text('body').notNull(),
    /** The delivery this one resends, when it is a resend. */
    resendOf: uuid('resend_of'),
    status: text('status', { enum: DELIVERY_STATUSES }).notNull().default('PENDING'),
    attemptCount: integer('attempt_count').notNull().default(0),
    dueAt: tz('due_at'),
    /** The token of the attempt that holds the delivery while SENDING (set by the dispatcher, taken by the sender). */
    claim: text('claim'),
    lastStatusCode: integer('last_status_code'),
    createdAt: createdAt(),
    updatedAt: tz('updated_at').notNull().defaultNow(),
  },
  (t) => [
    // An event fans out to a webhook once, however often the dispatcher runs.
    uniqueIndex('webhook_deliveries_event_idx')
      .on(t.webhookId, t.eventId)
      .where(sql`${t.resendOf} is null`),
    index('webhook_deliveries_webhook_idx').on(t.webhookId, t.createdAt, t.id),
    index('webhook_deliveries_due_idx')
      .on(t.dueAt)
      .where(sql`${t.status} in ('PENDING', 'SENDING')`),
  ],
);

/** One HTTP attempt of a delivery, with what the receiver answered. */
export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    id: idColumn(),
    deliveryId: uuid('delivery_id')
      .notNull()
      .references(() => webhookDeliveries.id, { onDelete: 'cascade' }),
    /** 1 for the first attempt. */
    attempt: integer('attempt').notNull(),
    /** The `t` the attempt was signed with. */
    signedAt: tz('signed_at').notNull(),
    /** The receiver's HTTP status, or null when it gave none (timeout, refused address, connection error). */
    statusCode: integer('status_code'),
    succeeded: text('outcome', { enum: ['SUCCEEDED', 'FAILED'] }).notNull(),
    /** Why a failed attempt failed, in words. */
    error: text('error'),
    durationMs: integer('duration_ms').notNull(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('webhook_attempts_delivery_idx').on(t.deliveryId, t.attempt)],
);
