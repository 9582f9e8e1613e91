import { sql } from 'drizzle-orm';
import { bigint, boolean, check, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { users } from './auth.js';
import { createdAt, idColumn, tz } from './columns.js';

export const COUPON_PURCHASE_KINDS = ['PLAN', 'TOPUP'] as const;
export const COUPON_DISCOUNT_TYPES = ['PERCENT', 'FIXED'] as const;
export const REDEMPTION_STATUSES = ['RESERVED', 'REDEEMED', 'RELEASED'] as const;

/** Discount codes for plan purchases and switches (priced by the server, never by the client). */
export const coupons = pgTable(
  'coupons',
  {
    id: idColumn(),
    /** Upper-case; codes are matched case-insensitively. */
    code: text('code').notNull(),
    description: text('description').notNull().default(''),
    /** Which kind of purchase the code is for (top-ups take no coupon today). */
    appliesTo: text('applies_to', { enum: COUPON_PURCHASE_KINDS }).notNull().default('PLAN'),
    /** Plans the code is limited to; empty means every plan. */
    planIds: jsonb('plan_ids').$type<string[]>().notNull().default([]),
    discountType: text('discount_type', { enum: COUPON_DISCOUNT_TYPES }).notNull(),
    /** PERCENT: 1-100. */
    percentOff: integer('percent_off'),
    /** FIXED: minor units of `currency`. */
    amountOffCents: bigint('amount_off_cents', { mode: 'number' }),
    currency: text('currency'),
    /** The order (before the discount) must be at least this much. */
    minOrderCents: bigint('min_order_cents', { mode: 'number' }).notNull().default(0),
    startsAt: tz('starts_at'),
    endsAt: tz('ends_at'),
    /** null: unlimited. */
    maxRedemptions: integer('max_redemptions'),
    /** Reserved or redeemed uses; a reservation is released when its checkout is abandoned. */
    redeemedCount: integer('redeemed_count').notNull().default(0),
    active: boolean('active').notNull().default(true),
    createdAt: createdAt(),
    updatedAt: tz('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('coupons_code_key').on(t.code),
    check('coupons_redemptions_within_limit', sql`${t.maxRedemptions} is null or ${t.redeemedCount} <= ${t.maxRedemptions}`),
    check('coupons_redeemed_not_negative', sql`${t.redeemedCount} >= 0`),
  ],
);

/** One use of a coupon by one customer: reserved at checkout, redeemed when paid, released when abandoned. */
export const couponRedemptions = pgTable(
  'coupon_redemptions',
  {
    id: idColumn(),
    couponId: uuid('coupon_id')
      .notNull()
      .references(() => coupons.id),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    /** The subscription change the code was used on. */
    changeId: uuid('change_id').notNull(),
    discountCents: bigint('discount_cents', { mode: 'number' }).notNull(),
    status: text('status', { enum: REDEMPTION_STATUSES }).notNull().default('RESERVED'),
    createdAt: createdAt(),
    updatedAt: tz('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('coupon_redemptions_once_per_customer_key')
      .on(t.couponId, t.userId)
      .where(sql`${t.status} <> 'RELEASED'`),
    uniqueIndex('coupon_redemptions_change_key').on(t.changeId),
    index('coupon_redemptions_coupon_idx').on(t.couponId),
  ],
);
