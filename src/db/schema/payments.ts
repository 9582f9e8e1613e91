import { sql } from 'drizzle-orm';
import { bigint, boolean, check, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tz } from './columns.js';
import { users } from './auth.js';

export const PAYMENT_STATUSES = ['PENDING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'EXPIRED', 'REFUNDED'] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];
/** Where the purchase stands: `REVIEW` is paid money that could not be fulfilled (another amount, a closed change). */
export const FULFILMENT_STATES = ['NONE', 'FULFILLED', 'REVIEW'] as const;
export type FulfilmentState = (typeof FULFILMENT_STATES)[number];

export interface CarrierOption {
  value: string;
  label: string;
  needsPin: boolean;
}

/** Channel settings operators change (seeded once; credentials come from the environment, never from here). */
export const paymentChannels = pgTable('payment_channels', {
  slug: text('slug').primaryKey(),
  name: text('name').notNull(),
  enabled: boolean('enabled').notNull().default(true),
  sortOrder: integer('sort_order').notNull().default(0),
  /** Carrier billing: the carriers offered (`extra.paymentProvider`). */
  carriers: jsonb('carriers').$type<CarrierOption[]>().notNull().default([]),
  /** Amounts (minor units) the channel may take; empty means any (carrier billing registers its amounts). */
  amountsCents: jsonb('amounts_cents').$type<number[]>().notNull().default([]),
  minAmountCents: bigint('min_amount_cents', { mode: 'number' }).notNull().default(1),
  maxAmountCents: bigint('max_amount_cents', { mode: 'number' }).notNull().default(Number.MAX_SAFE_INTEGER),
  updatedAt: tz('updated_at').notNull().defaultNow(),
});

/** One hosted checkout and what became of it. Amounts are 64-bit minor units. */
export const payments = pgTable(
  'payments',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    /** The purchase's owner module (`subscription`, `topup`) and its reference (a change id, an order id). */
    purposeKind: text('purpose_kind').notNull(),
    purposeRef: text('purpose_ref').notNull(),
    purpose: jsonb('purpose').$type<Record<string, unknown> & { kind: string }>().notNull(),
    channel: text('channel').notNull(),
    mode: text('mode', { enum: ['live', 'sandbox'] }).notNull(),
    status: text('status', { enum: PAYMENT_STATUSES }).notNull().default('PENDING'),
    fulfilment: text('fulfilment', { enum: FULFILMENT_STATES }).notNull().default('NONE'),
    /** Why the payment waits for an operator (amount differs, purchase closed ...); null otherwise. */
    reviewReason: text('review_reason'),
    amountCents: bigint('amount_cents', { mode: 'number' }).notNull(),
    currency: text('currency').notNull(),
    description: text('description').notNull(),
    recurring: boolean('recurring').notNull().default(false),
    /** The channel's required fields as sent (msisdn, carrier); never card data. */
    extra: jsonb('extra').$type<Record<string, string>>().notNull().default({}),
    successUrl: text('success_url'),
    cancelUrl: text('cancel_url'),
    /** The gateway's id of the checkout (session, order, tran_id, paymentID, order tracking id). */
    gatewayRef: text('gateway_ref'),
    /** The gateway's id of the money movement; unique per channel, so one transaction pays once. */
    gatewayTxnId: text('gateway_txn_id'),
    paidAmountCents: bigint('paid_amount_cents', { mode: 'number' }),
    paidAt: tz('paid_at'),
    tokensGranted: bigint('tokens_granted', { mode: 'number' }).notNull().default(0),
    refundedAt: tz('refunded_at'),
    /** An operator's refund claimed this payment and is asking the gateway; a second refund is refused meanwhile. */
    refundRequestedAt: tz('refund_requested_at'),
    tokensTakenBack: bigint('tokens_taken_back', { mode: 'number' }).notNull().default(0),
    tokensUnrecovered: bigint('tokens_unrecovered', { mode: 'number' }).notNull().default(0),
    /** Carrier billing: PINs tried for this payment (5 at most, then the customer starts again). */
    pinAttempts: integer('pin_attempts').notNull().default(0),
    /** Sandbox mode only: the simulated gateway's state of this checkout (the carrier's PIN lives there, as at a carrier). */
    sandbox: jsonb('sandbox').$type<Record<string, unknown>>(),
    expiresAt: tz('expires_at').notNull(),
    createdAt: createdAt(),
    updatedAt: tz('updated_at').notNull().defaultNow(),
  },
  (t) => [
    index('payments_user_idx').on(t.userId, t.createdAt, t.id),
    index('payments_created_idx').on(t.createdAt, t.id),
    index('payments_pending_idx').on(t.status, t.expiresAt),
    uniqueIndex('payments_gateway_ref_key').on(t.channel, t.gatewayRef),
    uniqueIndex('payments_gateway_txn_key').on(t.channel, t.gatewayTxnId),
    check('payments_amount_positive', sql`${t.amountCents} > 0`),
  ],
);

/** Every verified gateway message, recorded before anything acts on it (so paid money is never forgotten). */
export const paymentEvents = pgTable(
  'payment_events',
  {
    id: idColumn(),
    paymentId: uuid('payment_id').references(() => payments.id),
    channel: text('channel').notNull(),
    /** The gateway's event identity: a replay of the same message is the same row. */
    eventKey: text('event_key').notNull(),
    outcome: text('outcome', { enum: ['succeeded', 'failed', 'cancelled', 'refunded', 'pending', 'unsubscribed'] }).notNull(),
    gatewayTxnId: text('gateway_txn_id'),
    amountCents: bigint('amount_cents', { mode: 'number' }),
    currency: text('currency'),
    source: text('source', { enum: ['callback', 'requery', 'pin'] }).notNull(),
    /** A saved authorisation the payment created at the gateway (a vault id), kept as the agreement for renewals. */
    agreementId: text('agreement_id'),
    payload: jsonb('payload').$type<unknown>().notNull(),
    processedAt: tz('processed_at'),
    lastError: text('last_error'),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('payment_events_key').on(t.channel, t.eventKey), index('payment_events_unprocessed_idx').on(t.processedAt, t.createdAt)],
);

/** Saved recurring authorisations (a wallet agreement, a carrier subscription) a customer can revoke. */
export const paymentAgreements = pgTable(
  'payment_agreements',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    channel: text('channel').notNull(),
    /** What the customer recognises: a masked phone number or account. */
    label: text('label').notNull(),
    gatewayAgreementId: text('gateway_agreement_id').notNull(),
    subscriptionId: uuid('subscription_id'),
    status: text('status', { enum: ['ACTIVE', 'CANCELLED'] })
      .notNull()
      .default('ACTIVE'),
    createdAt: createdAt(),
    cancelledAt: tz('cancelled_at'),
  },
  (t) => [uniqueIndex('payment_agreements_gateway_key').on(t.channel, t.gatewayAgreementId), index('payment_agreements_user_idx').on(t.userId, t.createdAt)],
);

/** `subscription.renewal_due` events already turned into a charge (one per event). */
export const paymentRenewals = pgTable('payment_renewals', {
  eventId: uuid('event_id').primaryKey(),
  paymentId: uuid('payment_id'),
  outcome: text('outcome').notNull(),
  createdAt: createdAt(),
});
