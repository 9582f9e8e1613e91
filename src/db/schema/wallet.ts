import { sql } from 'drizzle-orm';
import { bigint, boolean, check, index, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tz } from './columns.js';

export const LEDGER_KINDS = ['GRANT', 'PURCHASE', 'PROMO', 'USAGE', 'REFUND', 'ADJUSTMENT', 'CONVERSION'] as const;
export type LedgerKind = (typeof LEDGER_KINDS)[number];
export const RESERVATION_STATUSES = ['OPEN', 'IN_FLIGHT', 'SETTLED', 'RELEASED'] as const;
export type ReservationStatus = (typeof RESERVATION_STATUSES)[number];

/** One token wallet per owner (a user, or a workspace whose subscription meters there). */
export const wallets = pgTable(
  'wallets',
  {
    id: idColumn(),
    ownerType: text('owner_type', { enum: ['USER', 'WORKSPACE'] }).notNull(),
    ownerId: uuid('owner_id').notNull(),
    /** Always the sum of this wallet's ledger rows; changed only in the same transaction as a ledger row. */
    balance: bigint('balance', { mode: 'number' }).notNull().default(0),
    /** Tokens a generation ran over that the balance could not cover; collected from the next credit. */
    debt: bigint('debt', { mode: 'number' }).notNull().default(0),
    /**
     * A QUOTA_WARNING was sent since the balance last fell under the low-balance threshold; set by one conditional
     * update (once per crossing), cleared when a credit takes the balance back to the threshold or above.
     */
    lowBalanceWarned: boolean('low_balance_warned').notNull().default(false),
    createdAt: createdAt(),
    updatedAt: tz('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('wallets_owner_key').on(t.ownerType, t.ownerId),
    check('wallets_balance_not_negative', sql`${t.balance} >= 0`),
    check('wallets_debt_not_negative', sql`${t.debt} >= 0`),
  ],
);

export const walletLedger = pgTable(
  'wallet_ledger',
  {
    id: idColumn(),
    walletId: uuid('wallet_id')
      .notNull()
      .references(() => wallets.id),
    kind: text('kind', { enum: LEDGER_KINDS }).notNull(),
    /** Signed token amount. */
    amount: bigint('amount', { mode: 'number' }).notNull(),
    note: text('note'),
    paymentId: uuid('payment_id'),
    requestId: text('request_id'),
    /** Every movement has one; a retry or a crash replay cannot write it twice. */
    idempotencyKey: text('idempotency_key').notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('wallet_ledger_idempotency_key').on(t.idempotencyKey),
    index('wallet_ledger_wallet_idx').on(t.walletId, t.createdAt, t.id),
    // What a payment credited (a top-up order's page reads it per paid order).
    index('wallet_ledger_payment_idx')
      .on(t.paymentId)
      .where(sql`${t.paymentId} is not null`),
  ],
);

/** Tokens held for one gateway request between reserve and settle/release. */
export const walletReservations = pgTable(
  'wallet_reservations',
  {
    id: idColumn(),
    walletId: uuid('wallet_id')
      .notNull()
      .references(() => wallets.id),
    requestId: text('request_id').notNull(),
    tokens: bigint('tokens', { mode: 'number' }).notNull(),
    status: text('status', { enum: RESERVATION_STATUSES }).notNull().default('OPEN'),
    /** The latest usage the gateway reported while the call ran; the sweeper settles on it after a crash. */
    usedTokens: bigint('used_tokens', { mode: 'number' }),
    chargedTokens: bigint('charged_tokens', { mode: 'number' }),
    shortfallTokens: bigint('shortfall_tokens', { mode: 'number' }).notNull().default(0),
    note: text('note'),
    reason: text('reason'),
    /** Who and what the tokens are held for (user, model, operation...): the sweeper writes the usage record from it. */
    context: jsonb('context').$type<Record<string, unknown>>(),
    /** An open reservation past this instant is taken as left behind by a crash. */
    leaseUntil: tz('lease_until').notNull(),
    createdAt: createdAt(),
    closedAt: tz('closed_at'),
  },
  (t) => [
    uniqueIndex('wallet_reservations_request_key').on(t.requestId),
    index('wallet_reservations_open_idx')
      .on(t.leaseUntil)
      .where(sql`${t.status} in ('OPEN', 'IN_FLIGHT')`),
    index('wallet_reservations_wallet_idx').on(t.walletId, t.createdAt),
  ],
);
