import { sql } from 'drizzle-orm';
import { bigint, boolean, check, index, integer, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { users } from './auth.js';
import { createdAt, idColumn, tz } from './columns.js';

/** Shapes of the jsonb columns; the pricing engine (src/modules/topup/engine) works on them. */
export interface TierPrice {
  /** The tier is reached at this many units; every unit is priced at the highest tier reached. */
  minUnits: number;
  unitPriceCents: number;
}

export type ComponentPricing = { mode: 'AI_COST' } | { mode: 'FIXED'; unitPriceCents: number } | { mode: 'TIERS'; tiers: TierPrice[] };

export type RuleEffect =
  | { type: 'BONUS_UNITS'; component: string; units: number }
  | { type: 'EXTRA_TOKENS_PERCENT'; percent: number }
  | { type: 'PERCENT_OFF'; percent: number; maxDiscountCents?: number | null }
  | { type: 'FIXED_OFF'; amountCents: number };

/** What a top-up can hold: credits, and optional model-usage bundles turned into tokens of the same wallet. */
export const topUpComponents = pgTable(
  'topup_components',
  {
    key: text('key').primaryKey(),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    kind: text('kind', { enum: ['CREDITS', 'MODEL_USAGE'] }).notNull(),
    unit: text('unit').notNull(),
    enabled: boolean('enabled').notNull().default(false),
    minUnits: integer('min_units').notNull(),
    maxUnits: integer('max_units').notNull(),
    step: integer('step').notNull().default(1),
    defaultUnits: integer('default_units').notNull(),
    /** Wallet tokens per unit; null for `CREDITS` (then the token settings' `tokensPerCredit`). */
    tokensPerUnit: bigint('tokens_per_unit', { mode: 'number' }),
    pricing: jsonb('pricing').$type<ComponentPricing>().notNull(),
    sortOrder: integer('sort_order').notNull().default(0),
    createdAt: createdAt(),
    updatedAt: tz('updated_at').notNull().defaultNow(),
  },
  (t) => [check('topup_components_units', sql`${t.minUnits} > 0 AND ${t.maxUnits} >= ${t.minUnits} AND ${t.step} > 0`)],
);

/** Bonuses and promotions; `template` names the four seeded templates (null for an operator's own rules). */
export const topUpRules = pgTable('topup_rules', {
  id: idColumn(),
  template: text('template').unique(),
  name: text('name').notNull(),
  description: text('description').notNull().default(''),
  type: text('type', { enum: ['BONUS', 'PROMOTION'] }).notNull(),
  /** New rules start switched off. */
  active: boolean('active').notNull().default(false),
  priority: integer('priority').notNull().default(0),
  ruleGroup: text('rule_group'),
  effect: jsonb('effect').$type<RuleEffect>().notNull(),
  /** The engine's `RuleConditions`, dates as ISO strings. */
  conditions: jsonb('conditions').$type<Record<string, unknown>>().notNull().default({}),
  createdAt: createdAt(),
  updatedAt: tz('updated_at').notNull().defaultNow(),
});

/** One row (`id = 'default'`): the top-up settings; shares in basis points, money in minor units. */
export const topUpSettings = pgTable('topup_settings', {
  id: text('id').primaryKey().default('default'),
  gatewayFeeBp: integer('gateway_fee_bp').notNull().default(500),
  vatBp: integer('vat_bp').notNull().default(1_500),
  profitBp: integer('profit_bp').notNull().default(4_000),
  profitFloorBp: integer('profit_floor_bp').notNull().default(1_000),
  maxDiscountBp: integer('max_discount_bp').notNull().default(5_000),
  roundToCents: integer('round_to_cents').notNull().default(100),
  minOrderCents: bigint('min_order_cents', { mode: 'number' }).notNull().default(2_000),
  maxOrderCents: bigint('max_order_cents', { mode: 'number' }).notNull().default(1_000_000),
  /** Display help for chat-reply bundles: characters one 300-token reply holds. */
  charsPer300Tokens: integer('chars_per_300_tokens').notNull().default(1_200),
  /** A QUOTA_WARNING is sent when a charge takes a wallet under this many tokens (default 10 credits' worth). */
  lowBalanceThresholdTokens: bigint('low_balance_threshold_tokens', { mode: 'number' }).notNull().default(100_000),
  updatedAt: tz('updated_at').notNull().defaultNow(),
});

/** A placed top-up: what was sold, fixed when placed (later price or rule changes do not touch it). */
export const topUpOrders = pgTable(
  'topup_orders',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    selection: jsonb('selection').$type<Record<string, number>>().notNull(),
    lines: jsonb('lines').$type<Record<string, unknown>[]>().notNull(),
    appliedRules: jsonb('applied_rules').$type<Record<string, unknown>[]>().notNull(),
    subtotalCents: bigint('subtotal_cents', { mode: 'number' }).notNull(),
    discountCents: bigint('discount_cents', { mode: 'number' }).notNull(),
    amountCents: bigint('amount_cents', { mode: 'number' }).notNull(),
    currency: text('currency').notNull(),
    tokens: bigint('tokens', { mode: 'number' }).notNull(),
    bonusTokens: bigint('bonus_tokens', { mode: 'number' }).notNull(),
    totalTokens: bigint('total_tokens', { mode: 'number' }).notNull(),
    channel: text('channel').notNull(),
    /** Set once the payment is opened. */
    paymentId: uuid('payment_id'),
    tokensGranted: bigint('tokens_granted', { mode: 'number' }).notNull().default(0),
    grantedAt: tz('granted_at'),
    createdAt: createdAt(),
  },
  (t) => [
    index('topup_orders_user_idx').on(t.userId, t.createdAt, t.id),
    index('topup_orders_created_idx').on(t.createdAt, t.id),
    check('topup_orders_amount_positive', sql`${t.amountCents} > 0`),
  ],
);
